#include "client/health/localise.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/health/path_faults.h"

namespace gloowatch::client {
namespace {

// A node or group must explain at least this many bad links more than it
// contradicts: one bad link is a link, not a node.
constexpr int64_t kMinExplained = 2;
// Bad links named in one suspect (the counts cover all of them).
constexpr size_t kMaxLinksListed = 20;
// Observation texts quoted as evidence per suspect.
constexpr size_t kMaxQuoted = 4;

struct BadLink {
  uint32_t a = 0, b = 0;     // a < b
  int64_t ab = -1, ba = -1;  // observation index of a bad direction, or -1
  bool explained = false;
};

uint64_t Key(uint32_t a, uint32_t b) { return (static_cast<uint64_t>(a) << 32) | b; }

std::string GroupLabel(const std::string& g) { return g.empty() ? "(no group)" : g; }

// One hypothesis' counts over its predicted links.
struct Tally {
  int64_t measured = 0;  // measured links it predicts bad
  int64_t bad = 0;       // of those, bad
  int64_t hits = 0;      // of those, bad and not yet explained
  int64_t Fine() const { return measured - bad; }
  int64_t Score() const { return hits - Fine(); }
  double Precision() const { return measured > 0 ? static_cast<double>(bad) / measured : 0; }
};

double Confidence(const Tally& t) {
  const double support = static_cast<double>(t.hits) / static_cast<double>(t.hits + 1);
  return static_cast<double>(static_cast<int64_t>(t.Precision() * support * 100 + 0.5)) / 100;
}

class Localiser {
 public:
  explicit Localiser(const LocaliseInput& in) : in_(in), n_(in.nodes.size()) {}

  std::vector<Suspect> Run() {
    named_.assign(n_, false);
    CountMeasured();
    CollectBad();
    std::vector<Suspect> out;
    ControlPlane(out);
    while (out.size() < kMaxSuspects) {
      if (!TakeBestHypothesis(out)) break;
    }
    CollectPooled();
    while (out.size() < kMaxSuspects) {
      if (!TakePooledLoss(out)) break;
    }
    AddLeftoverLinks(out);
    AddIdleOverloadedHosts(out);
    if (out.size() > kMaxSuspects) out.resize(kMaxSuspects);
    for (Suspect& s : out) AddJobEvidence(s);
    // All of it: the case first, then the suspect's own word, then its peers'.
    for (Suspect& s : out) {
      for (const auto* part : {&s.evidence_self, &s.evidence_peers}) {
        for (const std::string& e : *part) {
          if (std::find(s.evidence.begin(), s.evidence.end(), e) == s.evidence.end()) {
            s.evidence.push_back(e);
          }
        }
      }
    }
    return out;
  }

 private:
  // Per node: distinct measured neighbours and what its peers see of it
  // (incoming_); per group: measured links leaving it. One pass over the
  // observations: a full mesh's are many.
  void CountMeasured() {
    std::vector<std::vector<uint32_t>> neighbours(n_);
    incoming_.assign(n_, Incoming{});
    for (const auto& o : in_.observations) {
      if (o.from >= n_ || o.to >= n_ || o.from == o.to || !o.judged) continue;
      neighbours[o.from].push_back(o.to);
      neighbours[o.to].push_back(o.from);
      CountIncoming(o, incoming_[o.to]);
    }
    std::map<std::string, size_t> group_index;
    group_of_.resize(n_);
    for (size_t i = 0; i < n_; ++i) {
      auto [it, added] = group_index.emplace(in_.nodes[i].group, groups_.size());
      if (added) groups_.push_back(in_.nodes[i].group);
      group_of_[i] = it->second;
    }
    node_measured_.assign(n_, 0);
    group_cross_measured_.assign(groups_.size(), 0);
    group_inside_measured_.assign(groups_.size(), 0);
    // Distinct neighbours by a mark per node (sorting each list cost a
    // fifth of a full mesh's call).
    std::vector<size_t> seen_by(n_, n_);
    for (size_t i = 0; i < n_; ++i) {
      for (uint32_t j : neighbours[i]) {
        if (seen_by[j] == i) continue;
        seen_by[j] = i;
        ++node_measured_[i];
        if (group_of_[j] != group_of_[i]) {
          ++group_cross_measured_[group_of_[i]];
        } else if (j > i) {
          ++group_inside_measured_[group_of_[i]];
        }
      }
    }
  }

  void CollectBad() {
    std::unordered_map<uint64_t, size_t> index;
    for (size_t k = 0; k < in_.observations.size(); ++k) {
      const auto& o = in_.observations[k];
      if (!o.bad || o.from >= n_ || o.to >= n_ || o.from == o.to) continue;
      const uint32_t a = std::min(o.from, o.to), b = std::max(o.from, o.to);
      auto [it, added] = index.emplace(Key(a, b), bad_.size());
      if (added) bad_.push_back(BadLink{a, b});
      BadLink& l = bad_[it->second];
      (o.from == a ? l.ab : l.ba) = static_cast<int64_t>(k);
    }
    // Deterministic order: by node index.
    std::sort(bad_.begin(), bad_.end(),
              [](const BadLink& x, const BadLink& y) { return Key(x.a, x.b) < Key(y.a, y.b); });
    cut_links_.assign(n_, 0);
    for (const BadLink& l : bad_) {
      bad_index_.insert(Key(l.a, l.b));
      if (!CutOnly(l)) continue;
      ++cut_links_[l.a];
      ++cut_links_[l.b];
    }
  }

  // Bad only because nothing gets through: every bad direction down or cut.
  bool CutOnly(const BadLink& l) const {
    for (int64_t k : {l.ab, l.ba}) {
      if (k >= 0 && !in_.observations[static_cast<size_t>(k)].cut_seconds) return false;
    }
    return true;
  }

  bool TwoGroups() const { return groups_.size() == 2; }

  bool Eligible(const Tally& t, bool overloaded) const {
    if (overloaded) return t.hits >= 1;
    return t.hits >= kMinExplained && t.Score() >= kMinExplained && t.Precision() > 0.5;
  }

  // Each node's and group's counts over the links it predicts bad.
  void Tallies(std::vector<Tally>& nodes, std::vector<Tally>& groups) const {
    nodes.assign(n_, Tally{});
    groups.assign(groups_.size(), Tally{});
    for (size_t i = 0; i < n_; ++i) nodes[i].measured = node_measured_[i];
    for (size_t g = 0; g < groups_.size(); ++g) groups[g].measured = group_cross_measured_[g];
    for (const BadLink& l : bad_) {
      const int64_t hit = l.explained ? 0 : 1;
      for (uint32_t x : {l.a, l.b}) {
        nodes[x].bad += 1;
        nodes[x].hits += hit;
      }
      const size_t ga = group_of_[l.a], gb = group_of_[l.b];
      if (ga != gb) {
        for (size_t g : {ga, gb}) {
          groups[g].bad += 1;
          groups[g].hits += hit;
        }
      }
    }
  }

  // What the control plane says: a node whose daemon does not answer us,
  // judged by what its peers see of it. Every peer that probes it sees it
  // down: the node is dead (its host, or daemon and transport both). Its
  // transport still answers every peer that sees it, and they hear its
  // daemon is silent: the daemon is stuck, not the network. Peers that
  // disagree (one sees it down, another up and alive) leave it to the links:
  // a partition between us and it looks the same from here.
  void ControlPlane(std::vector<Suspect>& out) {
    std::vector<Tally> nodes, groups;
    Tallies(nodes, groups);
    for (size_t i = 0; i < n_ && out.size() < kMaxSuspects; ++i) {
      const Incoming& t = incoming_[i];
      if (in_.nodes[i].reachable) {
        if (t.restarted > 0) {
          out.push_back(TransportDiedSuspect(i, nodes[i], t));
          named_[i] = true;
        }
        continue;
      }
      if (t.down == 0 && t.up > 0 && (t.alive == 0 || t.silent > 0)) {
        // Its own transport says the daemon is silent: a peer whose last
        // reply still said alive heard it before (the replies come every
        // latency probe).
        out.push_back(DaemonSuspect(i, t.up, t.silent, t.alive, t.longest_silence));
      } else if (t.down > 0 && t.up == 0) {
        Suspect s = NodeSuspect(i, nodes[i]);
        s.confidence = t.down >= 2 ? 0.99 : 0.95;
        s.evidence.insert(
            s.evidence.begin(),
            absl::StrCat("its daemon does not answer and ",
                         t.down == 1 ? "the 1 peer" : absl::StrCat("all ", t.down, " peers"),
                         " probing it see it down"));
        out.push_back(std::move(s));
      } else if (t.down > 0 && in_.nodes[i].refused) {
        // Its host refuses our connection (nothing listens: the daemon is
        // gone) and a peer sees its pairs broken: the node died; the peers
        // that still see it up have not probed it since (their next probe
        // fails). A partition between us and it would time out, not refuse.
        Suspect s = NodeSuspect(i, nodes[i]);
        s.confidence = 0.9;
        s.evidence.insert(s.evidence.begin(),
                          absl::StrCat("its daemon refuses connections (no process listens) and ",
                                       t.down, " of the ", t.down + t.up,
                                       " peers probing it see it down (the others have not "
                                       "probed it since)"));
        out.push_back(std::move(s));
      } else {
        continue;
      }
      named_[i] = true;
    }
  }

  // What a node's peers see of it, over their judged directions to it.
  struct Incoming {
    size_t judged = 0, down = 0, up = 0, silent = 0, alive = 0;
    size_t restarted = 0;  // pairs to a transport process that died
    double longest_silence = 0;
  };

  static void CountIncoming(const LinkObservation& o, Incoming& t) {
    ++t.judged;
    if (o.peer_restarted) ++t.restarted;
    if (o.down) {
      ++t.down;
      return;
    }
    ++t.up;
    if (o.daemon_silent_seconds && *o.daemon_silent_seconds > kDaemonSilentSeconds) {
      ++t.silent;
      t.longest_silence = std::max(t.longest_silence, *o.daemon_silent_seconds);
    } else if (o.daemon_silent_seconds) {
      ++t.alive;
    }
  }

  // Node i answers, but peers' pairs to it are to a transport process that
  // died (none runs, or one started after the pair came up): the node, from
  // the first peer that shows it, not the links of the peers that noticed
  // first.
  Suspect TransportDiedSuspect(size_t i, const Tally& tally, const Incoming& t) {
    Suspect s = NodeSuspect(i, tally);
    s.confidence = 0.9;
    s.evidence.insert(
        s.evidence.begin(),
        absl::StrCat("its transport process died: ", t.restarted, " of the ", t.judged,
                     " peers probing it hold pairs to the old process or none"));
    return s;
  }

  Suspect DaemonSuspect(size_t i, size_t up, size_t silent, size_t alive, double longest_silence) {
    Suspect s;
    s.kind = SuspectKind::kDaemon;
    s.name = in_.nodes[i].name;
    s.evidence_self.push_back("its daemon does not answer");
    s.evidence_peers.push_back(
        absl::StrCat("its transport still answers ",
                     up == 1 ? "the 1 peer" : absl::StrCat("all ", up, " peers"), " probing it"));
    if (silent > 0) {
      s.evidence_peers.push_back(absl::StrCat("its transport says the daemon has been silent for ",
                                              static_cast<int64_t>(longest_silence), " s (", silent,
                                              " of ", up, " peers)"));
    }
    // Peers that say so are sure; without them it may be our path to it.
    s.confidence = silent == 0 ? 0.6 : alive == 0 ? 0.95 : 0.8;
    return s;
  }

  bool TakeBestHypothesis(std::vector<Suspect>& out) {
    std::vector<Tally> nodes, groups;
    Tallies(nodes, groups);
    // The best: highest score, then fewest fine links, then groups before
    // nodes (a group explains more with one cause), then input order.
    int64_t best_node = -1, best_group = -1;
    auto better = [](const Tally& x, const Tally& y) {
      if (x.Score() != y.Score()) return x.Score() > y.Score();
      return x.Fine() < y.Fine();
    };
    // An overloaded host goes before any network explanation of its links.
    auto node_before = [&](size_t i, size_t j) {
      const bool oi = !in_.nodes[i].overload.empty(), oj = !in_.nodes[j].overload.empty();
      if (oi != oj) return oi;
      return better(nodes[i], nodes[j]);
    };
    for (size_t i = 0; i < n_; ++i) {
      if (!Eligible(nodes[i], !in_.nodes[i].overload.empty())) continue;
      if (best_node < 0 || node_before(i, static_cast<size_t>(best_node))) {
        best_node = static_cast<int64_t>(i);
      }
    }
    // Two groups share their cross links: one hypothesis, "the path between them".
    const size_t group_candidates = groups_.size() < 2 ? 0 : TwoGroups() ? 1 : groups_.size();
    for (size_t g = 0; g < group_candidates; ++g) {
      if (!Eligible(groups[g], false)) continue;
      if (best_group < 0 || better(groups[g], groups[best_group]))
        best_group = static_cast<int64_t>(g);
    }
    const bool overloaded_node = best_node >= 0 && !in_.nodes[best_node].overload.empty();
    if (best_group >= 0 && !overloaded_node &&
        (best_node < 0 || !better(nodes[best_node], groups[best_group]))) {
      out.push_back(GroupSuspect(static_cast<size_t>(best_group), groups[best_group]));
      named_groups_.push_back(static_cast<size_t>(best_group));
      return true;
    }
    if (best_node >= 0) {
      out.push_back(NodeSuspect(static_cast<size_t>(best_node), nodes[best_node]));
      named_[static_cast<size_t>(best_node)] = true;
      return true;
    }
    return false;
  }

  // The observations of a bad link as evidence: those `self` made are what
  // the suspect says of itself, the others what its peers say (for a link or
  // an uplink, what its ends say: all peers' evidence).
  void Quote(const BadLink& l, Suspect& s, size_t& quoted,
             std::optional<size_t> self = std::nullopt) const {
    for (int64_t k : {l.ab, l.ba}) {
      if (k < 0 || quoted >= kMaxQuoted) continue;
      const LinkObservation& o = in_.observations[static_cast<size_t>(k)];
      if (o.evidence.empty()) continue;
      (self && o.from == *self ? s.evidence_self : s.evidence_peers).push_back(o.evidence);
      ++quoted;
    }
  }

  void Explain(BadLink& l, Suspect& s) {
    l.explained = true;
    if (s.links.size() < kMaxLinksListed) {
      s.links.emplace_back(in_.nodes[l.a].name, in_.nodes[l.b].name);
    }
  }

  Suspect NodeSuspect(size_t i, const Tally& t) {
    const LocaliseNode& node = in_.nodes[i];
    Suspect s;
    s.kind = node.overload.empty() ? SuspectKind::kNode : SuspectKind::kOverloadedHost;
    s.name = node.name;
    s.bad_links = static_cast<size_t>(t.bad);
    s.fine_links = static_cast<size_t>(t.Fine());
    s.confidence = Confidence(t);
    if (!node.overload.empty()) {
      s.evidence.push_back(node.overload);  // the case of an overloaded host
      s.evidence_self.push_back(node.overload);
    }
    int64_t out_bad = 0, in_bad = 0;
    for (const BadLink& l : bad_) {
      if (l.a != i && l.b != i) continue;
      const bool from_i = l.a == i;
      if ((from_i ? l.ab : l.ba) >= 0) ++out_bad;
      if ((from_i ? l.ba : l.ab) >= 0) ++in_bad;
    }
    s.evidence.push_back(absl::StrCat(t.bad, " of its ", t.measured, " measured links bad (",
                                      out_bad, " as ", node.name, " sees them, ", in_bad,
                                      " as the peers see it); the other links are fine"));
    if (!node.reachable) s.evidence_self.push_back("its daemon does not answer");
    size_t quoted = 0;
    for (BadLink& l : bad_) {
      if ((l.a != i && l.b != i) || l.explained) continue;
      Quote(l, s, quoted, i);
      Explain(l, s);
    }
    return s;
  }

  Suspect GroupSuspect(size_t g, const Tally& t) {
    Suspect s;
    s.kind = SuspectKind::kGroupUplink;
    s.bad_links = static_cast<size_t>(t.bad);
    s.fine_links = static_cast<size_t>(t.Fine());
    s.confidence = Confidence(t);
    int64_t inside_bad = 0;
    for (const BadLink& l : bad_) {
      if (group_of_[l.a] == g && group_of_[l.b] == g) ++inside_bad;
    }
    if (TwoGroups()) {
      s.groups = {GroupLabel(groups_[0]), GroupLabel(groups_[1])};
      s.name = absl::StrCat(s.groups[0], " <-> ", s.groups[1]);
      s.evidence.push_back(absl::StrCat(
          t.bad, " of the ", t.measured, " measured links between the two groups bad, ",
          InsideFineText(0), ", ", InsideFineText(1),
          " (with two groups the uplink of either one, or the path between them, explains it)"));
    } else {
      s.groups = {GroupLabel(groups_[g])};
      s.name = s.groups[0];
      s.evidence_peers.push_back(absl::StrCat(t.bad, " of the ", t.measured,
                                              " measured links leaving ", s.name, " bad, ",
                                              group_inside_measured_[g] - inside_bad, " of the ",
                                              group_inside_measured_[g], " inside it fine"));
    }
    size_t quoted = 0;
    for (BadLink& l : bad_) {
      const size_t ga = group_of_[l.a], gb = group_of_[l.b];
      if (l.explained || ga == gb || (ga != g && gb != g && !TwoGroups())) continue;
      Quote(l, s, quoted);
      Explain(l, s);
    }
    return s;
  }

  std::string InsideFineText(size_t g) const {
    int64_t inside_bad = 0;
    for (const BadLink& l : bad_) {
      if (group_of_[l.a] == g && group_of_[l.b] == g) ++inside_bad;
    }
    return absl::StrCat(group_inside_measured_[g] - inside_bad, " of the ",
                        group_inside_measured_[g], " inside ", GroupLabel(groups_[g]), " fine");
  }

  // --- pooled loss ------------------------------------------------------------

  // Both directions of one link: their loss counts added up.
  struct PooledLink {
    uint32_t a = 0, b = 0;             // a < b
    LossCount window, recent, latest;  // latest: the last 10 s (and the jobs')
    bool has_recent = false;
    // Each direction's counts, for the evidence.
    std::optional<LossCount> ab, ba;
    // The same of the jobs' own connections (counted in window and recent),
    // and both directions of them together.
    std::optional<LossCount> job_ab, job_ba;
    LossCount job;
  };

  // The counts a pooled hypothesis is weighed on (basis_): the probes' and
  // the jobs' over the window, the jobs' alone (their 15 s are all recent),
  // or the probes' and the jobs' over the window's last 30 s or last 10 s
  // alone. Weighed on a part, the part is its own recent segments.
  enum class Basis { kWindow, kJobs, kRecent, kLatest };
  const LossCount& Window(const PooledLink& l) const {
    switch (basis_) {
      case Basis::kJobs:
        return l.job;
      case Basis::kRecent:
        return l.recent;
      case Basis::kLatest:
        return l.latest;
      case Basis::kWindow:
        break;
    }
    return l.window;
  }
  const LossCount& Recent(const PooledLink& l) const {
    return basis_ == Basis::kWindow ? l.recent : Window(l);
  }
  bool HasRecent(const PooledLink& l) const {
    return basis_ == Basis::kWindow ? l.has_recent : Window(l).sent > 0;
  }

  bool GroupNamed(size_t g) const {
    return std::find(named_groups_.begin(), named_groups_.end(), g) != named_groups_.end();
  }

  // Whether a suspect named before already explains link a-b.
  bool Covered(uint32_t a, uint32_t b) const {
    if (named_[a] || named_[b] || pooled_links_named_.count(Key(a, b))) return true;
    const size_t ga = group_of_[a], gb = group_of_[b];
    if (ga == gb) return false;
    return GroupNamed(ga) || GroupNamed(gb) || (TwoGroups() && !named_groups_.empty());
  }

  void CollectPooled() {
    std::unordered_map<uint64_t, size_t> index;
    auto link_of = [&](uint32_t from, uint32_t to) -> PooledLink& {
      const uint32_t a = std::min(from, to), b = std::max(from, to);
      auto [it, added] = index.emplace(Key(a, b), pooled_.size());
      if (added) {
        PooledLink l;
        l.a = a;
        l.b = b;
        pooled_.push_back(l);
      }
      return pooled_[it->second];
    };
    for (const auto& o : in_.observations) {
      if (!o.loss || o.from >= n_ || o.to >= n_ || o.from == o.to) continue;
      const uint32_t a = std::min(o.from, o.to);
      PooledLink& l = link_of(o.from, o.to);
      l.window.lost += std::min(o.loss->lost, o.loss->sent);
      l.window.sent += o.loss->sent;
      if (o.recent_loss) {
        l.has_recent = true;
        l.recent.lost += std::min(o.recent_loss->lost, o.recent_loss->sent);
        l.recent.sent += o.recent_loss->sent;
      }
      if (o.latest_loss) {
        l.latest.lost += std::min(o.latest_loss->lost, o.latest_loss->sent);
        l.latest.sent += o.latest_loss->sent;
      }
      (o.from == a ? l.ab : l.ba) = *o.loss;
    }
    // The jobs' own connections count like the probes', in the recent and
    // latest parts too: their window (15 s) is all recent.
    for (const JobLinkLoss& j : in_.job_links) {
      if (j.from >= n_ || j.to >= n_ || j.from == j.to || j.loss.sent == 0) continue;
      PooledLink& l = link_of(j.from, j.to);
      const LossCount c{std::min(j.loss.lost, j.loss.sent), j.loss.sent};
      for (LossCount* sum : {&l.window, &l.recent, &l.latest}) {
        sum->lost += c.lost;
        sum->sent += c.sent;
      }
      l.has_recent = true;
      l.job.lost += c.lost;
      l.job.sent += c.sent;
      std::optional<LossCount>& job = j.from == l.a ? l.job_ab : l.job_ba;
      job = LossCount{(job ? job->lost : 0) + c.lost, (job ? job->sent : 0) + c.sent};
    }
    std::sort(pooled_.begin(), pooled_.end(), [](const PooledLink& x, const PooledLink& y) {
      return Key(x.a, x.b) < Key(y.a, y.b);
    });
    half_losing_.assign(n_, 0);
    for (const PooledLink& p : pooled_) {
      if (!HalfLosing(p)) continue;
      ++half_losing_[p.a];
      ++half_losing_[p.b];
    }
  }

  // A hypothesis of pooled loss: which links it predicts lossy.
  struct LossHypothesis {
    SuspectKind kind = SuspectKind::kNode;
    size_t index = 0;           // node or group; for a link, into pooled_
    std::vector<size_t> links;  // into pooled_
    LossCount total, recent, without_worst;
    LossCount job;  // of total, the jobs' own connections'
    bool has_recent = false;
    size_t lossy_links = 0;
    double evidence = 0;
  };

  // Fills the counts of `h` over its links; false when it is not a case of
  // pooled loss (see kPooledEvidence) against `base`.
  bool Weigh(LossHypothesis& h, double base) const {
    uint64_t worst = 0;
    size_t worst_at = 0;
    for (size_t k : h.links) {
      const PooledLink& l = pooled_[k];
      h.total.lost += Window(l).lost;
      h.total.sent += Window(l).sent;
      if (HasRecent(l)) {
        h.has_recent = true;
        h.recent.lost += Recent(l).lost;
        h.recent.sent += Recent(l).sent;
      }
      for (const auto& c : {l.job_ab, l.job_ba}) {
        if (!c) continue;
        h.job.lost += c->lost;
        h.job.sent += c->sent;
      }
      if (Window(l).lost > 0) ++h.lossy_links;
      if (Window(l).lost >= worst) {
        worst = Window(l).lost;
        worst_at = k;
      }
    }
    const double threshold = in_.loss_ratio;
    if (h.total.sent < kPooledMinSegments || h.total.lost < kPooledMinLost) return false;
    if (static_cast<double>(h.total.lost) < threshold * static_cast<double>(h.total.sent)) {
      return false;
    }
    // The loss of a node or an uplink is on most of its links, not on one:
    // without its worst link the rest still loses at half the threshold.
    if (h.kind != SuspectKind::kLink) {
      h.without_worst = {h.total.lost - Window(pooled_[worst_at]).lost,
                         h.total.sent - Window(pooled_[worst_at]).sent};
      if (h.lossy_links < 2 || h.without_worst.lost < 3 ||
          static_cast<double>(h.without_worst.lost) <
              threshold / 2 * static_cast<double>(h.without_worst.sent)) {
        return false;
      }
    }
    // Gone now: its recent segments rule the loss out.
    if (h.has_recent && LossRuledOut(h.recent, threshold)) return false;
    h.evidence = LossEvidence(h.total, base);
    return h.evidence >= evidence_needed_;
  }

  // A healthy network's loss rate here: the rest of the cluster's (what is
  // not `h`, nor explained), at least kBaseLossRatio.
  double BaseRate(const std::vector<bool>& in_hypothesis) const {
    LossCount rest;
    for (size_t k = 0; k < pooled_.size(); ++k) {
      if (in_hypothesis[k] || Covered(pooled_[k].a, pooled_[k].b)) continue;
      rest.lost += Window(pooled_[k]).lost;
      rest.sent += Window(pooled_[k]).sent;
    }
    // One loss more than seen, over a thousand segments more: a rest of few
    // segments says little.
    return std::max(kBaseLossRatio,
                    static_cast<double>(rest.lost + 1) / static_cast<double>(rest.sent + 1000));
  }

  bool TakePooledLoss(std::vector<Suspect>& out) {
    if (pooled_.empty()) return false;
    // More hypotheses, more chances of a fluke: Bonferroni on the statistic.
    const double hypotheses = static_cast<double>(n_ + groups_.size() + pooled_.size());
    evidence_needed_ = kPooledEvidence + 2 * std::log(std::max(1.0, hypotheses / 20));
    std::vector<LossHypothesis> candidates;
    auto consider = [&](SuspectKind kind, size_t index, const std::function<bool(size_t)>& has) {
      LossHypothesis h;
      h.kind = kind;
      h.index = index;
      std::vector<bool> in(pooled_.size(), false);
      for (size_t k = 0; k < pooled_.size(); ++k) {
        if (Covered(pooled_[k].a, pooled_[k].b) || !has(k)) continue;
        h.links.push_back(k);
        in[k] = true;
      }
      if (h.links.empty()) return;
      if (Weigh(h, BaseRate(in))) candidates.push_back(std::move(h));
    };
    for (size_t i = 0; i < n_; ++i) {
      if (named_[i]) continue;
      consider(SuspectKind::kNode, i,
               [&](size_t k) { return pooled_[k].a == i || pooled_[k].b == i; });
    }
    const size_t group_candidates = groups_.size() < 2 ? 0 : TwoGroups() ? 1 : groups_.size();
    for (size_t g = 0; g < group_candidates; ++g) {
      consider(SuspectKind::kGroupUplink, g, [&](size_t k) {
        const size_t ga = group_of_[pooled_[k].a], gb = group_of_[pooled_[k].b];
        return ga != gb && (TwoGroups() || ga == g || gb == g);
      });
    }
    // A link is named on its minute (or its jobs'): on a shorter part a
    // node's or an uplink's loss starting crosses the threshold link by
    // link, one first, while its other links still look clean (an uplink's
    // inside links dilute what its ends' other links lose).
    const bool part = basis_ == Basis::kRecent || basis_ == Basis::kLatest;
    for (size_t k = 0; k < pooled_.size() && !part; ++k) {
      const PooledLink& l = pooled_[k];
      // A link bad on its own is named as such (AddLeftoverLinks); one whose
      // loss spreads over an end is not named alone either.
      if (bad_index_.count(Key(l.a, l.b)) || LossSpreadOverAnEnd(l.a, l.b)) continue;
      consider(SuspectKind::kLink, k, [k](size_t j) { return j == k; });
    }
    if (candidates.empty()) {
      // The minute may still be mostly the clean segments from before a
      // fault that the jobs' last 15 s or its own last 30 or 10 s show (a
      // loss starting: a lossy link's transfers crawl while the clean ones
      // before it went at full speed): weighed again on those alone.
      if (basis_ != Basis::kWindow) return false;
      for (const Basis fallback : {Basis::kJobs, Basis::kRecent, Basis::kLatest}) {
        if (fallback == Basis::kJobs && in_.job_links.empty()) continue;
        basis_ = fallback;
        const bool named = TakePooledLoss(out);
        basis_ = Basis::kWindow;
        if (named) return true;
      }
      return false;
    }
    // The strongest case; on a tie groups before nodes before links.
    auto rank = [](SuspectKind kind) {
      return kind == SuspectKind::kGroupUplink ? 0 : kind == SuspectKind::kNode ? 1 : 2;
    };
    const LossHypothesis& best =
        *std::min_element(candidates.begin(), candidates.end(),
                          [&](const LossHypothesis& x, const LossHypothesis& y) {
                            if (x.evidence != y.evidence) return x.evidence > y.evidence;
                            return rank(x.kind) < rank(y.kind);
                          });
    out.push_back(PooledSuspect(best));
    return true;
  }

  static std::string Percent(const LossCount& c) {
    return absl::StrFormat(
        "%.2f%% (%d of %d segments lost)",
        c.sent > 0 ? 100.0 * static_cast<double>(c.lost) / static_cast<double>(c.sent) : 0.0,
        c.lost, c.sent);
  }

  Suspect PooledSuspect(const LossHypothesis& h) {
    Suspect s;
    s.kind = h.kind;
    std::optional<size_t> self;
    if (h.kind == SuspectKind::kNode) {
      s.name = in_.nodes[h.index].name;
      self = h.index;
      named_[h.index] = true;
    } else if (h.kind == SuspectKind::kGroupUplink) {
      if (TwoGroups()) {
        s.groups = {GroupLabel(groups_[0]), GroupLabel(groups_[1])};
        s.name = absl::StrCat(s.groups[0], " <-> ", s.groups[1]);
      } else {
        s.groups = {GroupLabel(groups_[h.index])};
        s.name = s.groups[0];
      }
      named_groups_.push_back(h.index);
    } else {
      const PooledLink& l = pooled_[h.index];
      s.name = absl::StrCat(in_.nodes[l.a].name, " <-> ", in_.nodes[l.b].name);
      pooled_links_named_.insert(Key(l.a, l.b));
    }
    s.pooled_loss_ratio = static_cast<double>(h.total.lost) / static_cast<double>(h.total.sent);
    s.bad_links = h.lossy_links;
    s.fine_links = h.links.size() - h.lossy_links;
    const double k = static_cast<double>(h.lossy_links);
    s.confidence = static_cast<double>(static_cast<int64_t>(
                       k / static_cast<double>(h.links.size()) * k / (k + 1) * 100 + 0.5)) /
                   100;
    if (h.job.sent > 0) s.job_loss = h.job;
    s.evidence.push_back(absl::StrCat(
        basis_ == Basis::kJobs     ? "TCP loss of the training jobs' own connections pooled over "
        : basis_ == Basis::kRecent ? "TCP loss of the last 30 s pooled over "
        : basis_ == Basis::kLatest ? "TCP loss of the last 10 s pooled over "
                                   : "TCP loss pooled over ",
        h.kind == SuspectKind::kLink ? "both directions: " : "its ",
        h.kind == SuspectKind::kLink ? "" : absl::StrCat(h.links.size(), " links: "),
        Percent(h.total), ", ", h.lossy_links, " of ", h.links.size(),
        h.links.size() == 1 ? " link" : " links", " losing",
        basis_ != Basis::kWindow
            ? absl::StrFormat(" (the probes' minute does not show it yet; evidence %.0f)",
                              h.evidence)
        : h.job.sent > 0
            ? absl::StrFormat(" (%s of the segments the training jobs' own connections'; "
                              "evidence %.0f)",
                              Thousands(h.job.sent), h.evidence)
            : absl::StrFormat(" (no single direction has enough segments; evidence %.0f)",
                              h.evidence)));
    QuoteJobLinks(h, self, s);
    size_t quoted = 0;
    std::vector<size_t> by_loss = h.links;
    std::sort(by_loss.begin(), by_loss.end(), [&](size_t x, size_t y) {
      return Window(pooled_[x]).lost > Window(pooled_[y]).lost;
    });
    for (size_t k : by_loss) {
      const PooledLink& l = pooled_[k];
      for (const auto& [from, to, c] : {std::tuple{l.a, l.b, l.ab}, std::tuple{l.b, l.a, l.ba}}) {
        if (!c || c->lost == 0 || quoted >= kMaxQuoted) continue;
        const std::string text = absl::StrCat(in_.nodes[from].name, "->", in_.nodes[to].name,
                                              ": TCP loss ", Percent(*c));
        (self && from == *self ? s.evidence_self : s.evidence_peers).push_back(text);
        ++quoted;
      }
      if (s.links.size() < kMaxLinksListed && Window(l).lost > 0) {
        s.links.emplace_back(in_.nodes[l.a].name, in_.nodes[l.b].name);
      }
    }
    // Bad links it covers are explained by it.
    for (BadLink& l : bad_) {
      if (!l.explained && Covered(l.a, l.b)) l.explained = true;
    }
    return s;
  }

  // "31,000".
  static std::string Thousands(uint64_t n) {
    std::string digits = absl::StrCat(n), out;
    for (size_t i = 0; i < digits.size(); ++i) {
      if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
      out.push_back(digits[i]);
    }
    return out;
  }

  // The jobs' own directions that lose, the worst first: "job links: 4.9% of
  // 31,000 segments h1->h3 retransmitted".
  void QuoteJobLinks(const LossHypothesis& h, std::optional<size_t> self, Suspect& s) const {
    struct Direction {
      uint32_t from, to;
      LossCount c;
    };
    // The directions that make the case: a stray retransmission is no news.
    auto losing = [&](const std::optional<LossCount>& c) {
      return c && c->lost > 0 &&
             static_cast<double>(c->lost) >= in_.loss_ratio / 2 * static_cast<double>(c->sent);
    };
    std::vector<Direction> lossy;
    for (size_t k : h.links) {
      const PooledLink& l = pooled_[k];
      if (losing(l.job_ab)) lossy.push_back({l.a, l.b, *l.job_ab});
      if (losing(l.job_ba)) lossy.push_back({l.b, l.a, *l.job_ba});
    }
    std::sort(lossy.begin(), lossy.end(), [](const Direction& x, const Direction& y) {
      return x.c.lost * y.c.sent > y.c.lost * x.c.sent;
    });
    if (lossy.size() > kMaxQuoted) lossy.resize(kMaxQuoted);
    for (const Direction& d : lossy) {
      const std::string text =
          absl::StrFormat("job links: %.1f%% of %s segments %s->%s retransmitted",
                          100.0 * static_cast<double>(d.c.lost) / static_cast<double>(d.c.sent),
                          Thousands(d.c.sent), in_.nodes[d.from].name, in_.nodes[d.to].name);
      (self && d.from == *self ? s.evidence_self : s.evidence_peers).push_back(text);
    }
  }

  // A suspect named on its bad links (not on pooled loss) gets what the
  // jobs' own connections over its links say too.
  void AddJobEvidence(Suspect& s) const {
    if (s.job_loss || in_.job_links.empty()) return;
    std::function<bool(const PooledLink&)> predicts;
    std::optional<size_t> self;
    if (s.kind == SuspectKind::kNode) {
      for (size_t i = 0; i < n_; ++i) {
        if (in_.nodes[i].name == s.name) self = i;
      }
      if (!self) return;
      predicts = [&](const PooledLink& l) { return l.a == *self || l.b == *self; };
    } else if (s.kind == SuspectKind::kGroupUplink) {
      predicts = [&](const PooledLink& l) {
        const std::string ga = GroupLabel(groups_[group_of_[l.a]]);
        const std::string gb = GroupLabel(groups_[group_of_[l.b]]);
        auto named = [&](const std::string& g) {
          return std::find(s.groups.begin(), s.groups.end(), g) != s.groups.end();
        };
        return ga != gb && (named(ga) || named(gb));
      };
    } else if (s.kind == SuspectKind::kLink && !s.links.empty()) {
      predicts = [&](const PooledLink& l) {
        const std::string& a = in_.nodes[l.a].name;
        const std::string& b = in_.nodes[l.b].name;
        return (a == s.links[0].first && b == s.links[0].second) ||
               (a == s.links[0].second && b == s.links[0].first);
      };
    } else {
      return;
    }
    LossHypothesis h;
    for (size_t k = 0; k < pooled_.size(); ++k) {
      if (!predicts(pooled_[k])) continue;
      h.links.push_back(k);
      for (const auto& c : {pooled_[k].job_ab, pooled_[k].job_ba}) {
        if (!c) continue;
        h.job.lost += c->lost;
        h.job.sent += c->sent;
      }
    }
    if (h.job.sent == 0) return;
    s.job_loss = h.job;
    QuoteJobLinks(h, self, s);
  }

  // A link whose every bad direction is down or cut for less than
  // kLoneLinkSettleSeconds: too fresh to tell a link from the start of a
  // node's fault. While an end has another link cut too, the fault spreads
  // over that end: kSpreadCutSettleSeconds, for the node's other peers to
  // put a command on their pairs and see it go unanswered.
  bool Settling(const BadLink& l) const {
    if (!CutOnly(l)) return false;
    const bool spread = cut_links_[l.a] >= 2 || cut_links_[l.b] >= 2;
    const double settle = spread ? kSpreadCutSettleSeconds : kLoneLinkSettleSeconds;
    for (int64_t k : {l.ab, l.ba}) {
      if (k >= 0 && *in_.observations[static_cast<size_t>(k)].cut_seconds >= settle) return false;
    }
    return true;
  }

  // A link bad only for its loss whose every bad direction's last 10 s rule
  // that loss out: clearing, its window still holding the fault's segments
  // (an uplink's or a node's loss after the repair clears link by link, one
  // last). Shown lossy, named by nobody; the link again if it loses anew.
  bool Clearing(const BadLink& l) const {
    for (int64_t k : {l.ab, l.ba}) {
      if (k < 0) continue;
      const LinkObservation& o = in_.observations[static_cast<size_t>(k)];
      if (!o.loss_only || !o.latest_loss || !LossRuledOut(*o.latest_loss, in_.loss_ratio)) {
        return false;
      }
    }
    return true;
  }

  // Loses at half the threshold or more over its window (a loss clearing)
  // or over its recent part (a loss starting: a lossy link's transfers
  // crawl, so the window is mostly the clean segments from before).
  bool HalfLosing(const PooledLink& p) const {
    auto losing = [&](const LossCount& c) {
      return c.lost > 0 &&
             static_cast<double>(c.lost) >= in_.loss_ratio / 2 * static_cast<double>(c.sent);
    };
    // The last 10 s over enough segments too: a loss starting shows there
    // first (an uplink's 5% cut one link's commands for seconds while the
    // others' windows still held the clean transfers from before).
    return losing(p.window) || (p.has_recent && losing(p.recent)) ||
           (p.latest.sent >= kPooledMinSegments && losing(p.latest));
  }

  // One of the link's ends loses on another of its links too (HalfLosing):
  // a node's or uplink's loss starting or clearing, which crosses the
  // thresholds link by link (and, dropping a probe, takes a link down for a
  // while), not this link's fault alone.
  bool LossSpreadOverAnEnd(uint32_t a, uint32_t b) const {
    // pooled_ is sorted by Key.
    auto it =
        std::lower_bound(pooled_.begin(), pooled_.end(), Key(a, b),
                         [](const PooledLink& p, uint64_t key) { return Key(p.a, p.b) < key; });
    const size_t itself =
        it != pooled_.end() && it->a == a && it->b == b && HalfLosing(*it) ? 1 : 0;
    return half_losing_[a] - itself >= 1 || half_losing_[b] - itself >= 1;
  }

  void AddLeftoverLinks(std::vector<Suspect>& out) {
    std::vector<Suspect> links;
    for (BadLink& l : bad_) {
      if (l.explained || Settling(l) || Clearing(l) || LossSpreadOverAnEnd(l.a, l.b) ||
          in_.nodes[l.a].starved_now || in_.nodes[l.b].starved_now) {
        continue;
      }
      Suspect s;
      s.kind = SuspectKind::kLink;
      s.name = absl::StrCat(in_.nodes[l.a].name, " <-> ", in_.nodes[l.b].name);
      Tally t;
      t.measured = t.bad = 1;
      t.hits = (l.ab >= 0 ? 1 : 0) + (l.ba >= 0 ? 1 : 0);  // directions: both is surer
      s.bad_links = 1;
      s.confidence = Confidence(t);
      size_t quoted = 0;
      Quote(l, s, quoted);
      Explain(l, s);
      links.push_back(std::move(s));
    }
    std::stable_sort(links.begin(), links.end(), [](const Suspect& x, const Suspect& y) {
      return x.confidence > y.confidence;
    });
    for (auto& s : links) {
      if (out.size() >= kMaxSuspects) break;
      out.push_back(std::move(s));
    }
  }

  // A busy host whose links are still fine: named, with less confidence.
  void AddIdleOverloadedHosts(std::vector<Suspect>& out) {
    for (size_t i = 0; i < n_ && out.size() < kMaxSuspects; ++i) {
      if (in_.nodes[i].overload.empty() || named_[i]) continue;
      Suspect s;
      s.kind = SuspectKind::kOverloadedHost;
      s.name = in_.nodes[i].name;
      s.evidence_self = {in_.nodes[i].overload};
      s.evidence_peers = {"its links are fine so far"};
      s.fine_links = static_cast<size_t>(node_measured_[i]);
      s.confidence = 0.5;
      out.push_back(std::move(s));
    }
  }

  const LocaliseInput& in_;
  const size_t n_;
  std::vector<std::string> groups_;
  std::vector<size_t> group_of_;
  std::vector<int64_t> node_measured_, group_cross_measured_, group_inside_measured_;
  std::vector<BadLink> bad_;
  std::vector<bool> named_;           // nodes already named as a suspect
  std::vector<size_t> named_groups_;  // groups whose uplink is named
  std::vector<PooledLink> pooled_;
  std::vector<Incoming> incoming_;   // per node (CountMeasured)
  std::vector<size_t> half_losing_;  // per node, its HalfLosing links (CollectPooled)
  std::vector<size_t> cut_links_;    // per node, its CutOnly bad links (CollectBad)
  std::unordered_set<uint64_t> pooled_links_named_;
  std::unordered_set<uint64_t> bad_index_;  // the links in bad_
  double evidence_needed_ = kPooledEvidence;
  Basis basis_ = Basis::kWindow;  // what TakePooledLoss weighs
};

}  // namespace

const char* SuspectKindName(SuspectKind k) {
  switch (k) {
    case SuspectKind::kNode:
      return "node";
    case SuspectKind::kGroupUplink:
      return "group_uplink";
    case SuspectKind::kLink:
      return "link";
    case SuspectKind::kOverloadedHost:
      return "overloaded_host";
    case SuspectKind::kDaemon:
      return "daemon";
    case SuspectKind::kPath:
      return "path";
  }
  return "link";
}

double LossEvidence(const LossCount& c, double base) {
  if (c.sent == 0 || base <= 0 || base >= 1) return 0;
  const double n = static_cast<double>(c.sent), k = static_cast<double>(std::min(c.lost, c.sent));
  const double p = k / n;
  if (p <= base) return 0;
  const double lost = k > 0 ? k * std::log(p / base) : 0;
  const double kept = n > k ? (n - k) * std::log((1 - p) / (1 - base)) : 0;
  return 2 * (lost + kept);
}

bool LossRuledOut(const LossCount& c, double ratio) {
  const double lambda = static_cast<double>(c.sent) * ratio;
  const double k = static_cast<double>(std::min(c.lost, c.sent));
  if (k >= lambda) return false;
  // P(X <= k), X ~ Poisson(lambda), summed in log space.
  double term = -lambda, cdf = std::exp(term);
  for (uint64_t i = 1; i <= std::min(c.lost, c.sent); ++i) {
    term += std::log(lambda) - std::log(static_cast<double>(i));
    cdf += std::exp(term);
    if (cdf >= 0.01) return false;
  }
  return cdf < 0.01;
}

std::vector<Suspect> Localise(const LocaliseInput& input) {
  // A path-dependent fault first: its directions' loss is one path's, so
  // it must not count against their nodes, uplinks or links below.
  PathFaults paths = FindPathFaults(input);
  if (paths.suspects.empty()) return Localiser(input).Run();
  std::vector<Suspect> out = Localiser(paths.rest).Run();
  for (Suspect& s : paths.suspects) out.push_back(std::move(s));
  if (out.size() > kMaxSuspects) out.resize(kMaxSuspects);
  return out;
}

}  // namespace gloowatch::client
