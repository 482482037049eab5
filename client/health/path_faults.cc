#include "client/health/path_faults.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace gloowatch::client {
namespace {

// Directions quoted as evidence, and links listed, per suspect.
constexpr size_t kMaxQuoted = 8;
constexpr size_t kMaxLinksListed = 20;

enum class FlowClass { kUnknown, kLossy, kClean };

// A flow's failures are path evidence when its direction's recur: a path
// that drops fails the flows hashed onto it session after session (each
// reconnect rehashes), while a node's outage or a partition fails each
// direction once.
bool Failing(const LinkObservation& o, const FlowObservation& f) {
  if (f.failures_in_window == 0) return false;
  uint64_t failures = 0;
  for (const FlowObservation& g : o.flows) failures += g.failures_in_window;
  return failures >= kPathMinFailures;
}

// A flow whose loss stopped: what it carried after its last loss rules out
// half its loss ratio over the window.
bool LossStopped(const FlowObservation& f) {
  if (!f.sent_since_last_loss || f.loss.sent == 0) return false;
  const double ratio = static_cast<double>(f.loss.lost) / static_cast<double>(f.loss.sent);
  return *f.sent_since_last_loss >= kPathMinSegments &&
         LossRuledOut(LossCount{0, *f.sent_since_last_loss}, ratio / 2);
}

bool Lossy(const LinkObservation& o, const FlowObservation& f, double threshold) {
  if (Failing(o, f)) return true;
  const LossCount& c = f.loss;
  return c.sent >= kPathMinSegments && c.lost >= kPathMinLost &&
         static_cast<double>(c.lost) >= threshold * static_cast<double>(c.sent) &&
         LossEvidence(c, kBaseLossRatio) >= kPathEvidence && !LossStopped(f);
}

// Whether a direction's loss holds still over its window: its recent part
// (TcpFigures.recent_*, the last 30 s) loses neither much more (a loss
// starting) nor much less (clearing) than the whole. While it changes, its
// flows split by when each last carried data, not by path: no evidence
// either way.
bool Steady(const LinkObservation& o, double threshold) {
  if (!o.loss || !o.recent_loss || o.loss->sent == 0 || o.recent_loss->sent == 0) return true;
  const double window = static_cast<double>(o.loss->lost) / static_cast<double>(o.loss->sent);
  const double recent =
      static_cast<double>(o.recent_loss->lost) / static_cast<double>(o.recent_loss->sent);
  // Below a quarter of the threshold both parts are clean alike; above it
  // a flow may be lossy on a direction whose pooled loss is under the
  // threshold, so the parts must agree there too.
  const double high = std::max(window, recent), low = std::min(window, recent);
  return high <= kPathSteadyFactor * low + threshold / 4;
}

// Clean while its direction's loss lasted (over the window when the source
// does not say): a flow that went quiet before it began, or carried its
// segments after it stopped, is no evidence.
bool Clean(const FlowObservation& f, double ruled_out) {
  const LossCount& c = f.while_losing ? *f.while_losing : f.loss;
  return f.failures_in_window == 0 && c.sent >= kPathMinSegments && LossRuledOut(c, ruled_out);
}

std::string Percent(const LossCount& c) {
  return c.sent == 0 ? "0%"
                     : absl::StrFormat("%.1f%%", 100.0 * static_cast<double>(c.lost) /
                                                     static_cast<double>(c.sent));
}

// The directions between two groups, or between two nodes.
struct Unit {
  bool by_group = false;
  std::string a, b;  // a < b
  std::vector<size_t> observations;
};

class PathFinder {
 public:
  explicit PathFinder(const LocaliseInput& in) : in_(in) {}

  PathFaults Run() {
    PathFaults out;
    std::map<UnitKey, Unit> units;
    const size_t n = in_.nodes.size();
    for (size_t k = 0; k < in_.observations.size(); ++k) {
      const LinkObservation& o = in_.observations[k];
      if (o.from >= n || o.to >= n || o.from == o.to) continue;
      if (HalfLosing(o)) {
        losing_peers_[o.from].insert(o.to);
        losing_peers_[o.to].insert(o.from);
      }
      if (o.flows.empty()) continue;
      const UnitKey key = KeyOf(o.from, o.to);
      Unit& u = units[key];
      std::tie(u.by_group, u.a, u.b) = key;
      u.observations.push_back(k);
    }
    std::vector<std::pair<size_t, Suspect>> found;  // lossy flows, suspect
    std::set<UnitKey> path_units;
    for (const auto& [key, unit] : units) {
      size_t lossy_flows = 0;
      if (std::optional<Suspect> s = Judge(unit, &lossy_flows)) {
        found.emplace_back(lossy_flows, *std::move(s));
        path_units.insert(key);
      }
    }
    std::stable_sort(found.begin(), found.end(),
                     [](const auto& x, const auto& y) { return x.first > y.first; });
    for (auto& [count, s] : found) out.suspects.push_back(std::move(s));
    // Copied only then: a full mesh's directions are many.
    if (!out.suspects.empty()) {
      out.rest = in_;
      for (size_t k : set_aside_) {
        LinkObservation& r = out.rest.observations[k];
        r.bad = false;
        r.evidence.clear();
        r.loss.reset();
        r.recent_loss.reset();
      }
      // The jobs' own connections over those units take the same paths:
      // their loss is the path's too.
      std::vector<JobLinkLoss>& jobs = out.rest.job_links;
      jobs.erase(std::remove_if(jobs.begin(), jobs.end(),
                                [&](const JobLinkLoss& j) {
                                  return j.from < n && j.to < n && j.from != j.to &&
                                         path_units.count(KeyOf(j.from, j.to)) > 0;
                                }),
                 jobs.end());
    }
    return out;
  }

 private:
  using UnitKey = std::tuple<bool, std::string, std::string>;  // by group, a < b

  // The unit a direction belongs to: its pair of groups, or of nodes.
  UnitKey KeyOf(uint32_t from, uint32_t to) const {
    const std::string& ga = in_.nodes[from].group;
    const std::string& gb = in_.nodes[to].group;
    const bool by_group = !ga.empty() && !gb.empty() && ga != gb;
    std::string a = by_group ? ga : in_.nodes[from].name;
    std::string b = by_group ? gb : in_.nodes[to].name;
    if (b < a) std::swap(a, b);
    return {by_group, std::move(a), std::move(b)};
  }

  // Loses at half the threshold or more over its window or its recent part
  // (a loss starting shows there first).
  bool HalfLosing(const LinkObservation& o) const {
    auto losing = [&](const std::optional<LossCount>& c) {
      return c && c->lost > 0 &&
             static_cast<double>(c->lost) >= in_.loss_ratio / 2 * static_cast<double>(c->sent);
    };
    return losing(o.loss) || losing(o.recent_loss);
  }

  // A node that loses with two or more peers outside the unit: its loss
  // (a lossy NIC) spreads over its links, and its flows in the unit split
  // into lossy and clean by chance and by windows that straddle the start.
  bool LossSpreadOutside(uint32_t node, const Unit& unit) const {
    auto it = losing_peers_.find(node);
    if (it == losing_peers_.end()) return false;
    const UnitKey key{unit.by_group, unit.a, unit.b};
    size_t outside = 0;
    for (uint32_t peer : it->second) {
      if (KeyOf(node, peer) != key) ++outside;
    }
    return outside >= 2;
  }

  // The unit's path suspect, if it is one; its lossy directions are then
  // set aside (set_aside_).
  std::optional<Suspect> Judge(const Unit& unit, size_t* lossy_flows) {
    const double threshold = in_.loss_ratio;
    // Lossy flows first: their pooled loss says what a clean one must rule out.
    std::vector<std::vector<FlowClass>> classes(unit.observations.size());
    LossCount lossy_pool;
    size_t lossy = 0;
    for (size_t i = 0; i < unit.observations.size(); ++i) {
      const LinkObservation& o = in_.observations[unit.observations[i]];
      classes[i].assign(o.flows.size(), FlowClass::kUnknown);
      if (!Steady(o, threshold)) continue;
      for (size_t f = 0; f < o.flows.size(); ++f) {
        if (!Lossy(o, o.flows[f], threshold)) continue;
        classes[i][f] = FlowClass::kLossy;
        ++lossy;
        if (Failing(o, o.flows[f]) && o.flows[f].loss.lost == 0) continue;
        lossy_pool.lost += std::min(o.flows[f].loss.lost, o.flows[f].loss.sent);
        lossy_pool.sent += o.flows[f].loss.sent;
      }
    }
    if (lossy == 0) return std::nullopt;
    const double lossy_ratio = lossy_pool.sent > 0 ? static_cast<double>(lossy_pool.lost) /
                                                         static_cast<double>(lossy_pool.sent)
                                                   : 0;
    // A failed probe lost everything while it lasted.
    bool failed = false;
    for (size_t i = 0; i < unit.observations.size(); ++i) {
      const LinkObservation& o = in_.observations[unit.observations[i]];
      for (const FlowObservation& f : o.flows) failed |= Failing(o, f);
    }
    const double ruled_out =
        std::max(threshold, (failed && lossy_pool.sent == 0 ? 1.0 : lossy_ratio) / 2);
    size_t clean = 0, total = 0;
    bool mixed = false;
    // Per node: whether it sends (receives) a lossy flow and a clean one here.
    std::map<uint32_t, std::pair<bool, bool>> sends, receives;
    for (size_t i = 0; i < unit.observations.size(); ++i) {
      const LinkObservation& o = in_.observations[unit.observations[i]];
      bool has_lossy = false, has_clean = false;
      const bool steady = Steady(o, threshold);
      for (size_t f = 0; f < o.flows.size(); ++f) {
        ++total;
        if (steady && classes[i][f] == FlowClass::kUnknown && Clean(o.flows[f], ruled_out)) {
          classes[i][f] = FlowClass::kClean;
          ++clean;
        }
        has_lossy |= classes[i][f] == FlowClass::kLossy;
        has_clean |= classes[i][f] == FlowClass::kClean;
      }
      mixed |= has_lossy && has_clean;
      sends[o.from].first |= has_lossy;
      sends[o.from].second |= has_clean;
      receives[o.to].first |= has_lossy;
      receives[o.to].second |= has_clean;
    }
    if (clean == 0 || !mixed) return std::nullopt;
    // A node's clean flows elsewhere count too: a NIC loses on every flow of
    // its host, inside its group as well as across.
    for (const LinkObservation& o : in_.observations) {
      if (!sends.count(o.from) && !receives.count(o.to)) continue;
      if (!Steady(o, threshold)) continue;
      for (const FlowObservation& f : o.flows) {
        if (Lossy(o, f, threshold) || !Clean(f, ruled_out)) continue;
        if (auto it = sends.find(o.from); it != sends.end()) it->second.second = true;
        if (auto it = receives.find(o.to); it != receives.end()) it->second.second = true;
      }
    }
    for (const auto* side : {&sends, &receives}) {
      for (const auto& [node, seen] : *side) {
        if (seen.first && !seen.second) return std::nullopt;  // all its flows lossy: a NIC
        if (seen.first && LossSpreadOutside(node, unit)) return std::nullopt;
      }
    }

    Suspect s;
    s.kind = SuspectKind::kPath;
    s.name = absl::StrCat(unit.a, " <-> ", unit.b);
    if (unit.by_group) s.groups = {unit.a, unit.b};
    if (lossy_pool.sent > 0) s.pooled_loss_ratio = lossy_ratio;
    s.evidence.push_back(absl::StrCat(
        lossy, " of ", total, " probe flows between ", unit.a, " and ", unit.b, " lossy",
        lossy_pool.sent > 0
            ? absl::StrCat(" (", Percent(lossy_pool), " of ", lossy_pool.sent, " segments lost)")
            : "",
        ", ", clean, " clean (under ", absl::StrFormat("%.1f%%", 100 * ruled_out),
        "): a path-dependent fault (a bad ECMP member or link between them), not a node or a "
        "link as a whole"));
    std::set<std::pair<uint32_t, uint32_t>> bad_links, fine_links;
    size_t lossy_directions = 0, mixed_directions = 0;
    for (size_t i = 0; i < unit.observations.size(); ++i) {
      const size_t k = unit.observations[i];
      const LinkObservation& o = in_.observations[k];
      std::vector<std::string> lossy_text, clean_ids;
      for (size_t f = 0; f < o.flows.size(); ++f) {
        const FlowObservation& flow = o.flows[f];
        if (classes[i][f] == FlowClass::kLossy) {
          lossy_text.push_back(
              Failing(o, flow)
                  ? absl::StrCat("flow ", flow.flow, " failed ", flow.failures_in_window, "x")
                  : absl::StrCat("flow ", flow.flow, " loses ", Percent(flow.loss), " (",
                                 flow.loss.lost, " of ", flow.loss.sent, ")"));
        } else if (classes[i][f] == FlowClass::kClean) {
          clean_ids.push_back(absl::StrCat(flow.flow));
        }
      }
      const std::pair<uint32_t, uint32_t> link = {std::min(o.from, o.to), std::max(o.from, o.to)};
      if (lossy_text.empty()) {
        fine_links.insert(link);
        continue;
      }
      bad_links.insert(link);
      ++lossy_directions;
      mixed_directions += clean_ids.empty() ? 0 : 1;
      if (lossy_directions <= kMaxQuoted) {
        s.evidence.push_back(absl::StrCat(
            in_.nodes[o.from].name, "->", in_.nodes[o.to].name, ": ",
            absl::StrJoin(lossy_text, ", "),
            clean_ids.empty() ? ""
                              : absl::StrCat("; flow", clean_ids.size() > 1 ? "s " : " ",
                                             absl::StrJoin(clean_ids, ", "), " clean")));
      }
      // Its loss is the path's: no node, uplink or link is blamed for it.
      if (!o.down) set_aside_.push_back(k);
    }
    for (const auto& link : bad_links) {
      fine_links.erase(link);
      if (s.links.size() < kMaxLinksListed) {
        s.links.emplace_back(in_.nodes[link.first].name, in_.nodes[link.second].name);
      }
    }
    s.bad_links = bad_links.size();
    s.fine_links = fine_links.size();
    // The share of lossy directions whose own flows disagree, times
    // k/(k+1) over the lossy flows, as the other kinds weigh their support.
    const double support = static_cast<double>(lossy) / static_cast<double>(lossy + 1);
    const double share =
        static_cast<double>(mixed_directions) / static_cast<double>(lossy_directions);
    s.confidence = std::round(share * support * 100) / 100;
    *lossy_flows = lossy;
    return s;
  }

  const LocaliseInput& in_;
  std::map<uint32_t, std::set<uint32_t>> losing_peers_;  // HalfLosing, per node
  std::vector<size_t> set_aside_;                        // observations whose loss is a path's
};

}  // namespace

PathFaults FindPathFaults(const LocaliseInput& input) { return PathFinder(input).Run(); }

}  // namespace gloowatch::client
