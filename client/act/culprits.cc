#include "client/act/culprits.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "common/proto_time.h"

namespace gloowatch::client {
namespace {

const NodeReport* ReportOf(const ClusterPicture& c, const std::string& node) {
  for (const NodeReport& n : c.node_reports) {
    if (n.name == node) return &n;
  }
  return nullptr;
}

size_t IndexOf(const ClusterPicture& c, const std::string& node) {
  return static_cast<size_t>(std::find(c.nodes.begin(), c.nodes.end(), node) - c.nodes.begin());
}

absl::Time NowOf(const v1::NodeStatus& s) {
  return s.has_now() ? FromProtoTimestamp(s.now()) : absl::Now();
}

// Peers whose daemon answered and whose own view of `node` is bad now: the
// peers that agree it is at fault (what `node` says of itself does not count).
size_t PeersAgreeing(const ClusterPicture& c, const std::string& node) {
  const size_t x = IndexOf(c, node);
  if (x >= c.nodes.size()) return 0;
  size_t agree = 0;
  for (size_t p = 0; p < c.nodes.size(); ++p) {
    if (p == x) continue;
    const NodeReport* r = ReportOf(c, c.nodes[p]);
    const v1::PeerStatus* view = c.View(p, x);
    if (r == nullptr || !r->reachable || r->status == nullptr || view == nullptr) continue;
    DirectionState d =
        JudgeDirection(c.nodes[p], node, *view, ThresholdsOf(*r->status), NowOf(*r->status));
    if (!d.bad.empty()) ++agree;
  }
  return agree;
}

std::string Counted(size_t n, const char* one) {
  return absl::StrCat(n, " ", one, n == 1 ? "" : "s");
}

}  // namespace

size_t NodeLimit::Of(size_t nodes) const {
  if (share <= 0) return count;
  return std::max<size_t>(1, static_cast<size_t>(std::floor(share * static_cast<double>(nodes))));
}

std::string NodeLimit::ToString() const {
  if (share <= 0) return Counted(count, "node");
  return absl::StrCat(share * 100, "% of the nodes");
}

absl::StatusOr<NodeLimit> ParseNodeLimit(absl::string_view text) {
  NodeLimit limit;
  absl::string_view number = text;
  const bool percent = absl::ConsumeSuffix(&number, "%");
  double value = 0;
  if (!absl::SimpleAtod(number, &value) || !std::isfinite(value) || value < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is not a number of nodes (2) or a share (10%)"));
  }
  if (percent) {
    if (value <= 0 || value > 100) {
      return absl::InvalidArgumentError(absl::StrCat("'", text, "': a share is in (0%, 100%]"));
    }
    limit.share = value / 100;
    return limit;
  }
  if (value != std::floor(value) || value > 100000) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "' is not a whole number of nodes"));
  }
  limit.count = static_cast<size_t>(value);
  return limit;
}

std::string ClipLine(std::string text, size_t max) {
  for (char& ch : text) {
    if (ch == '\n' || ch == '\r' || ch == '\t') ch = ' ';
  }
  if (text.size() <= max) return text;
  size_t cut = max >= 3 ? max - 3 : 0;
  // Not inside a UTF-8 sequence: back up over continuation bytes.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return absl::StrCat(text.substr(0, cut), "...");
}

std::string CannotJudge(const ClusterPicture& c) {
  size_t answered = 0;
  for (const NodeReport& n : c.node_reports) answered += n.reachable ? 1 : 0;
  const size_t all = c.node_reports.size();
  if (all == 0) return "no node to judge";
  // From a client cut off from the cluster every node looks down: a
  // majority must answer before anything is blamed.
  if (answered * 2 <= all) {
    return absl::StrCat("only ", answered, " of ", Counted(all, "daemon"),
                        " answered: too few to judge the cluster");
  }
  return "";
}

std::vector<Culprit> FindCulprits(const ClusterPicture& c, const CulpritOptions& o) {
  std::vector<Culprit> out;
  for (const Suspect& s : c.suspects) {
    if (s.kind != SuspectKind::kNode) continue;
    Culprit k;
    k.node = s.name;
    k.confidence = s.confidence;
    k.peers_agree = PeersAgreeing(c, s.name);
    const std::string why = s.evidence.empty() ? "named by health" : s.evidence.front();
    k.summary = absl::StrFormat("%s: %s (confidence %.2f, %s agree)", s.name, why, s.confidence,
                                Counted(k.peers_agree, "peer"));
    out.push_back(std::move(k));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Culprit& a, const Culprit& b) { return a.confidence > b.confidence; });
  const std::string cannot = CannotJudge(c);
  const size_t limit = o.max_nodes.Of(c.nodes.size());
  size_t accepted = 0;
  for (Culprit& k : out) {
    if (!cannot.empty()) {
      k.declined = cannot;
    } else if (k.confidence < o.min_confidence) {
      k.declined = absl::StrFormat("confidence %.2f < %.2f", k.confidence, o.min_confidence);
    } else if (k.peers_agree < o.min_peers) {
      k.declined = absl::StrCat(Counted(k.peers_agree, "peer"), " agree, fewer than ", o.min_peers);
    } else if (accepted >= limit) {
      k.declined = absl::StrCat("already ", accepted, " of at most ", o.max_nodes.ToString(),
                                " named at once");
    } else {
      k.accepted = true;
      ++accepted;
    }
  }
  return out;
}

NodeVerdict JudgeNode(const ClusterPicture& c, const std::string& node, const CulpritOptions& o) {
  NodeVerdict v;
  auto finish = [&](NodeVerdict::Kind kind, const std::string& text) {
    v.kind = kind;
    v.line = ClipLine(absl::StrCat("gloowatch: ", text), kMaxVerdictLine);
    return v;
  };
  const NodeReport* self = ReportOf(c, node);
  if (self == nullptr) {
    return finish(NodeVerdict::Kind::kUnknown,
                  absl::StrCat(node,
                               ": cannot judge: not a node the daemons know (--node "
                               "names the node to judge)"));
  }
  for (const Culprit& k : FindCulprits(c, o)) {
    if (k.node != node) continue;
    if (k.accepted) return finish(NodeVerdict::Kind::kProblem, k.summary);
    if (!CannotJudge(c).empty()) break;
    return finish(NodeVerdict::Kind::kOk, absl::StrCat(node, " ok: suspected but not acted on (",
                                                       k.declined, "): ", k.summary));
  }
  // Cut off: its daemon answers, sees every peer it probes down, and none
  // of those peers answers us either. From here the others look dead, but
  // all of them failing at once is far less likely than this host.
  const size_t x = IndexOf(c, node);
  if (self->reachable) {
    size_t probed = 0, lost = 0;
    for (size_t p = 0; p < c.nodes.size(); ++p) {
      const v1::PeerStatus* view = p == x ? nullptr : c.View(x, p);
      if (view == nullptr) continue;
      ++probed;
      const NodeReport* r = ReportOf(c, c.nodes[p]);
      if (view->state() == v1::PEER_STATE_DOWN && r != nullptr && !r->reachable) ++lost;
    }
    if (probed >= std::max<size_t>(o.min_peers, 1) && lost == probed) {
      return finish(NodeVerdict::Kind::kProblem,
                    absl::StrCat(node, ": cut off: reaches none of its ", Counted(probed, "peer"),
                                 " (their daemons do not answer and its Gloo pairs to them are "
                                 "down)"));
    }
  }
  if (const std::string cannot = CannotJudge(c); !cannot.empty()) {
    return finish(NodeVerdict::Kind::kUnknown, absl::StrCat(node, ": cannot judge: ", cannot));
  }
  if (!self->reachable) {
    return finish(NodeVerdict::Kind::kUnknown,
                  absl::StrCat(node, ": cannot judge: its daemon does not answer (", self->error,
                               ") and its peers do not name it"));
  }
  // Fine as a node; its links may still be named elsewhere (a link, an
  // uplink): say so, it is what an operator looks at next.
  size_t links = 0, bad = 0;
  for (const LinkReport& l : c.links) {
    if (l.a != node && l.b != node) continue;
    ++links;
    bad += l.health != Health::kHealthy ? 1 : 0;
  }
  std::string named;
  for (const Suspect& s : c.suspects) {
    const bool mine = s.name == node || std::any_of(s.links.begin(), s.links.end(), [&](auto& l) {
                        return l.first == node || l.second == node;
                      });
    if (mine) {
      named = absl::StrCat("; suspected: ", SuspectKindName(s.kind), " ", s.name);
      break;
    }
  }
  return finish(NodeVerdict::Kind::kOk, absl::StrCat(node, " ok: ", links - bad, " of its ",
                                                     Counted(links, "link"), " healthy", named));
}

}  // namespace gloowatch::client
