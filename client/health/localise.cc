#include "client/health/localise.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "absl/strings/str_cat.h"

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
    while (out.size() < kMaxSuspects) {
      if (!TakeBestHypothesis(out)) break;
    }
    AddLeftoverLinks(out);
    AddIdleOverloadedHosts(out);
    if (out.size() > kMaxSuspects) out.resize(kMaxSuspects);
    return out;
  }

 private:
  // Per node: distinct measured neighbours; per group: measured links leaving it.
  void CountMeasured() {
    std::vector<std::vector<uint32_t>> neighbours(n_);
    for (const auto& o : in_.observations) {
      if (o.from >= n_ || o.to >= n_ || o.from == o.to) continue;
      neighbours[o.from].push_back(o.to);
      neighbours[o.to].push_back(o.from);
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
    for (size_t i = 0; i < n_; ++i) {
      auto& v = neighbours[i];
      std::sort(v.begin(), v.end());
      v.erase(std::unique(v.begin(), v.end()), v.end());
      node_measured_[i] = static_cast<int64_t>(v.size());
      for (uint32_t j : v) {
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
  }

  bool TwoGroups() const { return groups_.size() == 2; }

  bool Eligible(const Tally& t, bool overloaded) const {
    if (overloaded) return t.hits >= 1;
    return t.hits >= kMinExplained && t.Score() >= kMinExplained && t.Precision() > 0.5;
  }

  bool TakeBestHypothesis(std::vector<Suspect>& out) {
    std::vector<Tally> nodes(n_), groups(groups_.size());
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
      return true;
    }
    if (best_node >= 0) {
      out.push_back(NodeSuspect(static_cast<size_t>(best_node), nodes[best_node]));
      named_[static_cast<size_t>(best_node)] = true;
      return true;
    }
    return false;
  }

  void Quote(const BadLink& l, Suspect& s, size_t& quoted) const {
    for (int64_t k : {l.ab, l.ba}) {
      if (k < 0 || quoted >= kMaxQuoted) continue;
      const std::string& e = in_.observations[static_cast<size_t>(k)].evidence;
      if (!e.empty()) s.evidence.push_back(e), ++quoted;
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
    if (!node.overload.empty()) s.evidence.push_back(node.overload);
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
    if (!node.reachable) s.evidence.push_back("its daemon does not answer");
    size_t quoted = 0;
    for (BadLink& l : bad_) {
      if ((l.a != i && l.b != i) || l.explained) continue;
      Quote(l, s, quoted);
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
      s.evidence.push_back(absl::StrCat(t.bad, " of the ", t.measured, " measured links leaving ",
                                        s.name, " bad, ", group_inside_measured_[g] - inside_bad,
                                        " of the ", group_inside_measured_[g], " inside it fine"));
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

  void AddLeftoverLinks(std::vector<Suspect>& out) {
    std::vector<Suspect> links;
    for (BadLink& l : bad_) {
      if (l.explained) continue;
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
      s.evidence = {in_.nodes[i].overload, "its links are fine so far"};
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
  std::vector<bool> named_;  // nodes already named as a suspect
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
  }
  return "link";
}

std::vector<Suspect> Localise(const LocaliseInput& input) { return Localiser(input).Run(); }

}  // namespace gloowatch::client
