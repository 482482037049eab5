#include "client/health/cluster.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/exit_codes.h"
#include "common/failure.h"

namespace gloowatch::client {
namespace {

// Offsets measured from both ends must cancel within their error bounds;
// the extra slack covers scheduling noise between the two samples.
constexpr double kOffsetSlackSeconds = 0.001;

void Worsen(Health& h, Health to) { h = std::max(h, to); }

const char* StateWord(v1::PeerState s) {
  switch (s) {
    case v1::PEER_STATE_UP:
      return "up";
    case v1::PEER_STATE_DOWN:
      return "down";
    case v1::PEER_STATE_CONNECTING:
      return "connecting";
    default:
      return "unknown";
  }
}

// A loss ratio over enough segments to mean something, above the threshold.
bool LossCounts(const v1::PeerStatus& p, const EffectiveThresholds& t) {
  if (!p.tcp().has_loss_ratio() || p.tcp().loss_ratio() <= t.loss_ratio) return false;
  return !p.tcp().has_window_sent_segments() ||
         p.tcp().window_sent_segments() >= t.loss_min_segments;
}

// Judges one direction; problems are phrased "A->B: ...".
// "N failures", naming the latency probes lost among them (each one ended
// its session as a timeout).
std::string FailuresText(const v1::PeerStatus& p) {
  const uint64_t lost = p.latency().lost_probes_in_window();
  return absl::StrCat(p.failures_in_window(), " failures",
                      lost > 0 ? absl::StrCat(" (", lost, " lost latency probes)") : "");
}

void JudgeView(const std::string& from, const std::string& to, const v1::PeerStatus& p,
               const EffectiveThresholds& t, LinkReport& link) {
  const std::string who = absl::StrCat(from, "->", to, ": ");
  if (p.state() == v1::PEER_STATE_DOWN) {
    Worsen(link.health, Health::kFailed);
    link.problems.push_back(absl::StrCat(
        who, "down",
        p.last_failure().message().empty() ? ""
                                           : absl::StrCat(" (", p.last_failure().message(), ")")));
  } else if (p.state() != v1::PEER_STATE_UP) {
    Worsen(link.health, Health::kDegraded);
    link.problems.push_back(absl::StrCat(who, StateWord(p.state())));
  }
  if (p.latency().has_p50_seconds()) {
    link.worst_p50_seconds = std::max(link.worst_p50_seconds, p.latency().p50_seconds());
    if (p.latency().p50_seconds() >= t.latency_seconds) {
      Worsen(link.health, Health::kDegraded);
      link.problems.push_back(absl::StrFormat("%slatency p50 %.3f ms >= %.3f ms", who,
                                              p.latency().p50_seconds() * 1e3,
                                              t.latency_seconds * 1e3));
    }
  }
  if (p.bandwidth().has_link_ratio() && p.bandwidth().link_ratio() < t.link_ratio) {
    Worsen(link.health, Health::kDegraded);
    link.problems.push_back(
        absl::StrFormat("%slink ratio %.2f < %.2f", who, p.bandwidth().link_ratio(), t.link_ratio));
  }
  if (p.clock().has_offset_seconds() &&
      std::abs(p.clock().offset_seconds()) >= t.clock_offset_seconds) {
    Worsen(link.health, Health::kDegraded);
    link.problems.push_back(absl::StrFormat("%sclock offset %+.1f ms, |offset| >= %.1f ms", who,
                                            p.clock().offset_seconds() * 1e3,
                                            t.clock_offset_seconds * 1e3));
  }
  if (p.failures_in_window() > 0) {
    Worsen(link.health, Health::kDegraded);
    link.problems.push_back(absl::StrCat(who, FailuresText(p), " in window"));
  }
  if (LossCounts(p, t)) {
    Worsen(link.health, Health::kDegraded);
    link.problems.push_back(absl::StrFormat("%sTCP loss %.2f%% > %.2f%%", who,
                                            p.tcp().loss_ratio() * 100, t.loss_ratio * 100));
  }
}

// Why one direction counts as bad for localisation, or "" when it does not:
// down, failures in the window, TCP loss, latency or bandwidth past their
// thresholds. A clock offset is no network fault; "connecting" is no evidence.
std::string BadDirection(const std::string& from, const std::string& to, const v1::PeerStatus& p,
                         const EffectiveThresholds& t) {
  const std::string who = absl::StrCat(from, "->", to, ": ");
  std::vector<std::string> why;
  // The last failure's reason says what kind of fault: refused (a firewall's
  // reject, nothing listening), timeout (drops), reset...
  const v1::FailureReason last = p.last_failure().reason();
  const std::string reason =
      last == v1::FAILURE_REASON_UNSPECIFIED ? "" : absl::StrCat(" (last: ", ReasonName(last), ")");
  if (p.state() == v1::PEER_STATE_DOWN) why.push_back(absl::StrCat("down", reason));
  if (p.failures_in_window() > 0) {
    why.push_back(absl::StrCat(FailuresText(p), p.state() == v1::PEER_STATE_DOWN ? "" : reason));
  }
  if (LossCounts(p, t)) {
    why.push_back(absl::StrFormat("TCP loss %.2f%%", p.tcp().loss_ratio() * 100));
  }
  if (p.latency().has_p50_seconds() && p.latency().p50_seconds() >= t.latency_seconds) {
    why.push_back(absl::StrFormat("latency p50 %.3f ms", p.latency().p50_seconds() * 1e3));
  }
  if (p.bandwidth().has_link_ratio() && p.bandwidth().link_ratio() < t.link_ratio) {
    why.push_back(absl::StrFormat("link ratio %.2f", p.bandwidth().link_ratio()));
  }
  return why.empty() ? "" : absl::StrCat(who, absl::StrJoin(why, ", "));
}

// The link matrix of the picture, for Localise: every node named, with its
// group (its own status, else what its peers' configs say), every reported
// direction that is not still connecting.
LocaliseInput LinkMatrixOf(const ClusterPicture& c) {
  LocaliseInput in;
  in.nodes.resize(c.nodes.size());
  for (size_t i = 0; i < c.nodes.size(); ++i) in.nodes[i].name = c.nodes[i];
  auto index_of = [&](const std::string& name) {
    return static_cast<uint32_t>(std::lower_bound(c.nodes.begin(), c.nodes.end(), name) -
                                 c.nodes.begin());
  };
  std::vector<bool> group_known(c.nodes.size(), false);
  for (const auto& n : c.node_reports) {
    const uint32_t i = index_of(n.name);
    if (i >= c.nodes.size()) continue;
    in.nodes[i].reachable = n.reachable;
    if (!n.status) continue;
    in.nodes[i].group = n.status->topology().group();
    group_known[i] = true;
    in.nodes[i].overload = OverloadOf(*n.status, ThresholdsOf(*n.status));
  }
  for (const auto& n : c.node_reports) {
    if (!n.status) continue;
    const uint32_t from = index_of(n.name);
    const EffectiveThresholds t = ThresholdsOf(*n.status);
    for (const auto& p : n.status->peers()) {
      const uint32_t to = index_of(p.name());
      if (to >= c.nodes.size() || to == from) continue;
      if (!group_known[to] && !p.group().empty()) in.nodes[to].group = p.group();
      if (p.state() == v1::PEER_STATE_CONNECTING || p.state() == v1::PEER_STATE_UNSPECIFIED) {
        continue;
      }
      std::string why = BadDirection(n.name, p.name(), p, t);
      // A loss above the threshold over too few segments is no evidence that
      // the direction is bad, nor that it is fine.
      if (why.empty() && p.tcp().has_loss_ratio() && p.tcp().loss_ratio() > t.loss_ratio) {
        continue;
      }
      in.observations.push_back({from, to, !why.empty(), std::move(why)});
    }
  }
  return in;
}

// Both ends report the link: their states and clock offsets must agree.
void CompareEnds(LinkReport& l) {
  const bool up_ab = l.ab->state() == v1::PEER_STATE_UP, up_ba = l.ba->state() == v1::PEER_STATE_UP;
  if (up_ab != up_ba) {
    Worsen(l.health, Health::kDegraded);
    l.problems.push_back(absl::StrCat("asymmetric: ", l.a, " sees ", l.b, " ",
                                      StateWord(l.ab->state()), ", ", l.b, " sees ", l.a, " ",
                                      StateWord(l.ba->state())));
  }
  if (l.ab->clock().has_offset_seconds() && l.ba->clock().has_offset_seconds()) {
    const double sum = l.ab->clock().offset_seconds() + l.ba->clock().offset_seconds();
    const double bound =
        l.ab->clock().error_seconds() + l.ba->clock().error_seconds() + kOffsetSlackSeconds;
    if (std::abs(sum) > bound) {
      Worsen(l.health, Health::kDegraded);
      l.problems.push_back(absl::StrFormat(
          "clock offsets disagree: %s->%s %+.3f ms, %s->%s %+.3f ms (should cancel within "
          "%.3f ms)",
          l.a, l.b, l.ab->clock().offset_seconds() * 1e3, l.b, l.a,
          l.ba->clock().offset_seconds() * 1e3, bound * 1e3));
    }
  }
}

// A node's own problems: its Gloo endpoint, its host's load, its jobs.
void JudgeNodes(ClusterPicture& c) {
  for (auto& n : c.node_reports) {
    if (!n.status) continue;
    const EffectiveThresholds t = ThresholdsOf(*n.status);
    if (!n.status->gloo().warning().empty()) {
      Worsen(n.health, Health::kDegraded);
      n.problems.push_back(absl::StrCat("gloo endpoint: ", n.status->gloo().warning()));
    }
    if (std::string overload = OverloadOf(*n.status, t); !overload.empty()) {
      Worsen(n.health, Health::kDegraded);
      n.problems.push_back(absl::StrCat("host overloaded: ", overload));
    }
    for (const auto& j : n.status->training()) {
      TrainingReport r{n.name, j, false, t.communication_share};
      if (j.has_communication_share() && j.communication_share() > t.communication_share) {
        r.over_threshold = true;
        Worsen(n.health, Health::kDegraded);
        n.problems.push_back(absl::StrFormat("job %s rank %d: communication share %.1f%% > %.1f%%",
                                             j.job(), j.rank(), j.communication_share() * 100,
                                             t.communication_share * 100));
      }
      c.training.push_back(r);
    }
  }
}

// One report per fetched daemon. An unreachable daemon given only by address
// (--daemons) is named after the peer that answering daemons know at that
// address, so it is not shown twice (once as "host:port", once as the peer
// name). The reports point into `fetched`.
std::vector<NodeReport> NodeReportsOf(const std::vector<FetchResult>& fetched) {
  std::map<std::string, std::string> peer_name_at;
  for (const auto& f : fetched) {
    if (!f.status) continue;
    for (const auto& p : f.status->peers()) peer_name_at.emplace(p.grpc_address(), p.name());
  }
  std::vector<NodeReport> reports;
  for (const auto& f : fetched) {
    NodeReport n;
    n.address = f.target.endpoint.ToString();
    n.reachable = f.status.has_value();
    n.status = f.status ? &*f.status : nullptr;
    n.name = f.status ? f.status->node() : f.target.name;
    if (!f.status && f.target.name == n.address) {
      if (auto it = peer_name_at.find(n.address); it != peer_name_at.end()) n.name = it->second;
    }
    if (!n.reachable) {
      n.error = f.error;
      n.health = Health::kFailed;
      n.problems.push_back(absl::StrCat("unreachable at ", n.address, ": ", f.error));
    }
    reports.push_back(std::move(n));
  }
  return reports;
}

// Every node named: the reports' and their peers', sorted.
std::vector<std::string> NodeNames(const std::vector<NodeReport>& reports) {
  std::set<std::string> names;
  for (const auto& n : reports) {
    names.insert(n.name);
    if (n.status) {
      for (const auto& p : n.status->peers()) names.insert(p.name());
    }
  }
  return {names.begin(), names.end()};
}

// Links from both ends, each end's view judged on its own.
std::map<std::pair<std::string, std::string>, LinkReport> LinksFromBothEnds(
    const std::vector<NodeReport>& reports) {
  std::map<std::pair<std::string, std::string>, LinkReport> links;
  for (const auto& n : reports) {
    if (!n.status) continue;
    const EffectiveThresholds t = ThresholdsOf(*n.status);
    for (const auto& p : n.status->peers()) {
      const bool forward = n.name < p.name();
      auto key = forward ? std::make_pair(n.name, p.name()) : std::make_pair(p.name(), n.name);
      LinkReport& l = links[key];
      l.a = key.first;
      l.b = key.second;
      (forward ? l.ab : l.ba) = &p;
      JudgeView(n.name, p.name(), p, t, l);
    }
  }
  return links;
}

// The two ends against each other; a link only one end reports although the
// other end answered us is a config gap in a full mesh, normal in a sampled
// one. `report_of`: node name -> its report.
void JudgeEnds(LinkReport& l, const std::map<std::string, const NodeReport*>& report_of) {
  if (l.ab && l.ba) {
    CompareEnds(l);
    return;
  }
  const std::string& silent = l.ab ? l.b : l.a;
  const std::string& other = l.ab ? l.a : l.b;
  auto it = report_of.find(silent);
  const NodeReport* report = it == report_of.end() ? nullptr : it->second;
  const bool reachable = report != nullptr && report->reachable;
  const bool sampled = report != nullptr && report->status != nullptr &&
                       report->status->topology().mode() == "sampled";
  if (reachable && !sampled) {
    Worsen(l.health, Health::kDegraded);
    l.problems.push_back(
        absl::StrCat("one-sided: ", silent, " does not list ", other, " as a peer"));
  }
}

void SortWorstFirst(std::vector<LinkReport>& links) {
  std::stable_sort(links.begin(), links.end(), [](const LinkReport& x, const LinkReport& y) {
    if (x.health != y.health) return x.health > y.health;
    if (x.problems.size() != y.problems.size()) return x.problems.size() > y.problems.size();
    return x.worst_p50_seconds > y.worst_p50_seconds;
  });
}

}  // namespace

const char* HealthName(Health h) {
  switch (h) {
    case Health::kHealthy:
      return "healthy";
    case Health::kDegraded:
      return "degraded";
    case Health::kFailed:
      return "failed";
  }
  return "failed";
}

EffectiveThresholds ThresholdsOf(const v1::NodeStatus& s) {
  EffectiveThresholds t;
  const auto& p = s.thresholds();
  if (p.latency_seconds() > 0) t.latency_seconds = p.latency_seconds();
  if (p.bandwidth_link_ratio() > 0) t.link_ratio = p.bandwidth_link_ratio();
  if (p.clock_offset_seconds() > 0) t.clock_offset_seconds = p.clock_offset_seconds();
  if (p.communication_share() > 0) t.communication_share = p.communication_share();
  if (p.scheduling_delay_seconds() > 0) t.scheduling_delay_seconds = p.scheduling_delay_seconds();
  if (p.cpu_steal_ratio() > 0) t.cpu_steal_ratio = p.cpu_steal_ratio();
  return t;
}

std::string OverloadOf(const v1::NodeStatus& s, const EffectiveThresholds& t) {
  const v1::HostLoad& h = s.host_load();
  std::vector<std::string> why;
  if (h.has_scheduling_delay_seconds() &&
      h.scheduling_delay_seconds() >= t.scheduling_delay_seconds) {
    why.push_back(absl::StrFormat("scheduling delay %.1f ms >= %.1f ms",
                                  h.scheduling_delay_seconds() * 1e3,
                                  t.scheduling_delay_seconds * 1e3));
  }
  if (h.has_cpu_steal_ratio() && h.cpu_steal_ratio() >= t.cpu_steal_ratio) {
    why.push_back(absl::StrFormat("CPU steal %.1f%% >= %.1f%%", h.cpu_steal_ratio() * 100,
                                  t.cpu_steal_ratio * 100));
  }
  if (why.empty()) return "";
  if (h.has_cpu_pressure_ratio()) {
    why.push_back(absl::StrFormat("CPU pressure %.0f%%", h.cpu_pressure_ratio() * 100));
  }
  return absl::StrJoin(why, ", ");
}

bool ClusterPicture::NothingAnswered() const {
  // From Prometheus, an unreachable node is Prometheus' answer, not silence.
  return source == "daemons" && !node_reports.empty() &&
         std::none_of(node_reports.begin(), node_reports.end(),
                      [](const NodeReport& n) { return n.reachable; });
}

int ClusterPicture::ExitCode() const {
  if (NothingAnswered()) return kExitUnavailable;
  return verdict == Health::kHealthy ? 0 : verdict == Health::kDegraded ? 1 : 2;
}

bool ClusterPicture::Measured(size_t i, size_t j) const {
  const std::string &x = nodes[i], &y = nodes[j];
  return measured_.count(x < y ? std::make_pair(x, y) : std::make_pair(y, x)) > 0;
}

const v1::PeerStatus* ClusterPicture::View(size_t i, size_t j) const {
  auto it = views_.find(static_cast<uint64_t>(i) * nodes.size() + j);
  return it == views_.end() ? nullptr : it->second;
}

ClusterPicture BuildCluster(std::vector<FetchResult> fetched) {
  ClusterPicture c;
  c.fetched = std::move(fetched);
  c.node_reports = NodeReportsOf(c.fetched);
  c.nodes = NodeNames(c.node_reports);
  // The first report of a node that lists the peer wins.
  auto index_of = [&](const std::string& name) {
    return static_cast<uint64_t>(std::lower_bound(c.nodes.begin(), c.nodes.end(), name) -
                                 c.nodes.begin());
  };
  std::map<std::string, const NodeReport*> report_of;  // the last report of a name
  for (const auto& n : c.node_reports) {
    report_of[n.name] = &n;
    if (!n.status) continue;
    const uint64_t row = index_of(n.name) * c.nodes.size();
    for (const auto& p : n.status->peers()) c.views_.emplace(row + index_of(p.name()), &p);
  }
  for (auto& [key, l] : LinksFromBothEnds(c.node_reports)) {
    JudgeEnds(l, report_of);
    c.measured_.insert(key);
    if (l.ab && l.ba) ++c.coverage.measured_both_ways;
    c.links.push_back(l);
  }
  c.coverage.node_pairs = c.nodes.size() * (c.nodes.size() - (c.nodes.empty() ? 0 : 1)) / 2;
  c.coverage.measured_pairs = c.measured_.size();
  for (const auto& n : c.node_reports) {
    if (n.status && n.status->topology().mode() == "sampled") c.coverage.sampled = true;
  }
  SortWorstFirst(c.links);

  JudgeNodes(c);
  c.suspects = Localise(LinkMatrixOf(c));
  for (const auto& n : c.node_reports) Worsen(c.verdict, n.health);
  for (const auto& l : c.links) Worsen(c.verdict, l.health);
  return c;
}

}  // namespace gloowatch::client
