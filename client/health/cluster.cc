#include "client/health/cluster.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/health/job_evidence.h"
#include "common/exit_codes.h"
#include "common/failure.h"
#include "common/proto_time.h"

namespace gloowatch::client {
namespace {

// Offsets measured from both ends must cancel within their error bounds;
// the extra slack covers scheduling noise between the two samples.
constexpr double kOffsetSlackSeconds = 0.001;

// The reporting daemon's clock: every age in its status is read against it.
absl::Time NowOf(const v1::NodeStatus& s) {
  return s.has_now() ? FromProtoTimestamp(s.now()) : absl::Now();
}

// Node name -> its status, for the nodes that answered.
std::map<std::string, const v1::NodeStatus*> StatusByName(const std::vector<NodeReport>& reports) {
  std::map<std::string, const v1::NodeStatus*> out;
  for (const auto& n : reports) {
    if (n.status) out[n.name] = n.status;
  }
  return out;
}

const v1::NodeStatus* Find(const std::map<std::string, const v1::NodeStatus*>& by_name,
                           const std::string& name) {
  auto it = by_name.find(name);
  return it == by_name.end() ? nullptr : it->second;
}

// When each node last had a session come up again after a failure, on its
// own clock (a peer's view moved by the offset it measured): proof that its
// side accepts pairs again after a fault. Views that are not sound now
// (unacknowledged data, a pair older than the peer's transport) prove
// nothing, nor do sessions that never failed (a sampled mesh's new pairs).
std::map<std::string, absl::Time> LastRecovered(
    const std::vector<NodeReport>& reports,
    const std::map<std::string, const v1::NodeStatus*>& by_name) {
  std::map<std::string, absl::Time> out;
  auto note = [&](const std::string& node, absl::Time t) {
    auto [it, added] = out.emplace(node, t);
    if (!added && t > it->second) it->second = t;
  };
  for (const auto& n : reports) {
    if (!n.status) continue;
    for (const auto& p : n.status->peers()) {
      if (p.state() != v1::PEER_STATE_UP || p.has_unacknowledged() || !p.has_up_since() ||
          p.failures_in_window() == 0) {
        continue;
      }
      const double offset = p.clock().has_offset_seconds() ? p.clock().offset_seconds() : 0;
      const absl::Time up_since = FromProtoTimestamp(p.up_since());
      const v1::NodeStatus* peer = Find(by_name, p.name());
      if (peer != nullptr && peer->transport().has_started_at() &&
          up_since + absl::Seconds(offset) <
              FromProtoTimestamp(peer->transport().started_at()) - kStalePairMargin) {
        continue;
      }
      note(n.name, up_since);
      note(p.name(), up_since + absl::Seconds(offset));
    }
    // Data that had gone unacknowledged was acknowledged again: the path
    // came back then.
    for (const auto& p : n.status->peers()) {
      if (p.state() != v1::PEER_STATE_UP || p.has_unacknowledged() ||
          !p.has_acknowledged_again_at()) {
        continue;
      }
      const double offset = p.clock().has_offset_seconds() ? p.clock().offset_seconds() : 0;
      const absl::Time at = FromProtoTimestamp(p.acknowledged_again_at());
      note(n.name, at);
      note(p.name(), at + absl::Seconds(offset));
    }
  }
  return out;
}

// What the direction from `from` toward `peer` is judged with: the peer's own
// word on its transport, when it answered, and when either end last had a
// session recover (on the reporting node's clock, by the offset the view
// measured).
DirectionContext ContextOf(const std::string& from, const v1::NodeStatus& self,
                           const v1::PeerStatus& p, const v1::NodeStatus* peer,
                           const std::map<std::string, absl::Time>& recovered) {
  DirectionContext context;
  const double offset = p.clock().has_offset_seconds() ? p.clock().offset_seconds() : 0;
  if (self.host_load().has_starved_until()) {
    context.starved_until = FromProtoTimestamp(self.host_load().starved_until());
  }
  if (peer != nullptr && peer->host_load().has_starved_until()) {
    const absl::Time until =
        FromProtoTimestamp(peer->host_load().starved_until()) - absl::Seconds(offset);
    if (!context.starved_until || until > *context.starved_until) context.starved_until = until;
  }
  if (peer != nullptr && peer->transport().has_started_at()) {
    context.peer_transport_started =
        FromProtoTimestamp(peer->transport().started_at()) - absl::Seconds(offset);
  } else if (peer != nullptr && peer->has_transport()) {
    context.peer_transport_stopped = true;
  }
  std::optional<absl::Time> latest;
  if (auto it = recovered.find(p.name()); it != recovered.end()) {
    latest = it->second - absl::Seconds(offset);
  }
  if (auto it = recovered.find(from); it != recovered.end() && (!latest || it->second > *latest)) {
    latest = it->second;
  }
  context.recovered_since = latest;
  return context;
}

// Why an unreachable daemon did not answer: a refused connection means
// nothing listens on its port (the daemon is gone), unlike a timeout.
bool Refused(const NodeReport& n) {
  return !n.reachable && absl::StrContains(absl::AsciiStrToLower(n.error), "connection refused");
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
    in.nodes[i].refused = Refused(n);
    if (!n.status) continue;
    in.nodes[i].group = n.status->topology().group();
    group_known[i] = true;
    const EffectiveThresholds t = ThresholdsOf(*n.status);
    in.nodes[i].overload = OverloadOf(*n.status, t);
    const v1::HostLoad& load = n.status->host_load();
    in.nodes[i].starved_now = load.has_recent_scheduling_delay_seconds() &&
                              load.recent_scheduling_delay_seconds() >= t.scheduling_delay_seconds;
  }
  const std::map<std::string, const v1::NodeStatus*> by_name = StatusByName(c.node_reports);
  const auto recovered = LastRecovered(c.node_reports, by_name);
  for (const auto& n : c.node_reports) {
    if (!n.status) continue;
    const uint32_t from = index_of(n.name);
    const EffectiveThresholds t = ThresholdsOf(*n.status);
    in.loss_ratio = t.loss_ratio;
    for (const auto& p : n.status->peers()) {
      const uint32_t to = index_of(p.name());
      if (to >= c.nodes.size() || to == from) continue;
      if (!group_known[to] && !p.group().empty()) in.nodes[to].group = p.group();
      if (p.state() == v1::PEER_STATE_CONNECTING || p.state() == v1::PEER_STATE_UNSPECIFIED) {
        continue;
      }
      DirectionState d =
          JudgeDirection(n.name, p.name(), p, t, NowOf(*n.status),
                         ContextOf(n.name, *n.status, p, Find(by_name, p.name()), recovered));
      LinkObservation o;
      o.from = from;
      o.to = to;
      o.bad = !d.bad.empty();
      // A loss ratio over too few segments is evidence for the pooled loss
      // alone.
      // A direction still reconnecting is none either.
      o.judged = !(d.bad.empty() && d.inconclusive) && !d.reconnecting;
      o.evidence = std::move(d.bad);
      o.down = (p.state() == v1::PEER_STATE_DOWN && !d.reconnecting) || d.cut;
      o.peer_restarted = d.peer_restarted;
      o.loss_only = o.bad && std::all_of(d.findings.begin(), d.findings.end(), [](const auto& f) {
                      return f.first == Finding::kLossy || f.first == Finding::kClockOffset;
                    });
      if (d.cut_for) o.cut_seconds = absl::ToDoubleSeconds(*d.cut_for);
      if (p.state() == v1::PEER_STATE_UP && p.peer_daemon().has_silent_seconds()) {
        o.daemon_silent_seconds = p.peer_daemon().silent_seconds();
      }
      if (p.state() == v1::PEER_STATE_UP && p.tcp().has_window_sent_segments() &&
          p.tcp().has_loss_ratio()) {
        const uint64_t sent = p.tcp().window_sent_segments();
        o.loss = LossCount{
            static_cast<uint64_t>(std::llround(p.tcp().loss_ratio() * static_cast<double>(sent))),
            sent};
        o.recent_loss = RecentLoss(p.tcp());
        if (p.tcp().has_latest_sent_segments()) {
          o.latest_loss = LossCount{p.tcp().latest_lost_segments(), p.tcp().latest_sent_segments()};
        }
      }
      for (const v1::FlowFigures& f : p.flows()) {
        FlowObservation flow;
        flow.flow = f.flow();
        flow.loss = LossCount{f.window_lost_segments(), f.window_sent_segments()};
        flow.failures_in_window = f.failures_in_window();
        if (f.has_sent_while_losing()) {
          flow.while_losing = LossCount{f.lost_while_losing(), f.sent_while_losing()};
        }
        if (f.has_sent_since_last_loss()) flow.sent_since_last_loss = f.sent_since_last_loss();
        o.flows.push_back(flow);
      }
      in.observations.push_back(std::move(o));
    }
  }
  // The training jobs' own connections: pooled loss evidence too.
  std::vector<const v1::NodeStatus*> statuses;
  for (const auto& n : c.node_reports) statuses.push_back(n.status);
  in.job_links = JobLinkLossOf(statuses, c.nodes);
  return in;
}

// Both ends report the link: their states and clock offsets must agree.
void CompareEnds(LinkReport& l) {
  const bool up_ab = l.ab->state() == v1::PEER_STATE_UP, up_ba = l.ba->state() == v1::PEER_STATE_UP;
  if (up_ab != up_ba) {
    Worsen(l.health, Health::kDegraded);
    l.problems.push_back(absl::StrCat("asymmetric: ", l.a, " sees ", l.b, " ",
                                      PeerStateWord(l.ab->state()), ", ", l.b, " sees ", l.a, " ",
                                      PeerStateWord(l.ba->state())));
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

// A node's own problems now (its Gloo endpoint, its host's load, a daemon
// its peers hear nothing from), its past (a restart within the failure
// window) and its jobs, which are reported on the job alone.
void JudgeNodes(ClusterPicture& c) {
  // What the other nodes' views say of each node's daemon.
  std::map<std::string, std::vector<std::string>> silent_as_seen_by;
  for (const auto& n : c.node_reports) {
    if (!n.status) continue;
    for (const auto& p : n.status->peers()) {
      if (double s = PeerDaemonSilence(p); s > 0) {
        silent_as_seen_by[p.name()].push_back(absl::StrFormat("%s (%.0f s)", n.name, s));
      }
    }
  }
  for (auto& n : c.node_reports) {
    // A daemon that answers us now is not silent now, whatever a peer heard
    // at its last probe (one probe interval ago at most).
    if (auto it = silent_as_seen_by.find(n.name); it != silent_as_seen_by.end() && !n.reachable) {
      Worsen(n.health, Health::kFailed);
      n.problems.push_back(absl::StrCat("daemon silent while its transport still answers, as ",
                                        absl::StrJoin(it->second, ", "), " see it"));
    }
    if (!n.status) continue;
    const EffectiveThresholds t = ThresholdsOf(*n.status);
    const absl::Time now = NowOf(*n.status);
    if (n.status->has_started_at()) {
      n.age = now - FromProtoTimestamp(n.status->started_at());
      const double window = n.status->thresholds().failure_window_seconds() > 0
                                ? n.status->thresholds().failure_window_seconds()
                                : 3600;
      if (*n.age < absl::Seconds(window)) {
        n.history.push_back(absl::StrCat("daemon started ", AgeText(*n.age), " ago"));
      }
    }
    if (const v1::TransportStatus& transport = n.status->transport();
        transport.has_last_exit_time()) {
      const absl::Duration ago = now - FromProtoTimestamp(transport.last_exit_time());
      const double window = n.status->thresholds().failure_window_seconds() > 0
                                ? n.status->thresholds().failure_window_seconds()
                                : 3600;
      if (ago < absl::Seconds(window)) {
        n.history.push_back(absl::StrCat("transport restarted ", AgeText(ago), " ago (",
                                         transport.last_exit(), ")"));
      }
    }
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
      r.over_threshold =
          j.has_communication_share() && j.communication_share() > t.communication_share;
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
  const std::map<std::string, const v1::NodeStatus*> by_name = StatusByName(reports);
  const auto recovered = LastRecovered(reports, by_name);
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
      DirectionState d =
          JudgeDirection(n.name, p.name(), p, t, NowOf(*n.status),
                         ContextOf(n.name, *n.status, p, Find(by_name, p.name()), recovered));
      Worsen(l.health, d.health);
      for (auto& problem : d.problems) l.problems.push_back(std::move(problem));
      for (auto& finding : d.findings) l.findings.push_back(std::move(finding));
      if (!d.history.empty()) l.history.push_back(std::move(d.history));
      double p50 = p.latency().has_recent_p50_seconds() ? p.latency().recent_p50_seconds()
                                                        : p.latency().p50_seconds();
      l.worst_p50_seconds = std::max(l.worst_p50_seconds, p50);
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

// "2 links lossy (h1<->h3 4.8%, h2<->h4 2.1%)": a count and the first few.
std::string CountedReason(size_t n, const char* one, const char* many, const char* word,
                          const std::vector<std::string>& items) {
  constexpr size_t kListed = 3;
  std::vector<std::string> listed(items.begin(), items.begin() + std::min(items.size(), kListed));
  if (items.size() > kListed) listed.push_back("...");
  return absl::StrCat(n, " ", n == 1 ? one : many, " ", word, " (", absl::StrJoin(listed, ", "),
                      ")");
}

// Why the verdict is what it is, worst first: the nodes that cannot be
// asked or whose daemon is silent, then the links by kind of fault, then the
// hosts' own problems.
std::vector<std::string> VerdictReasons(const ClusterPicture& c) {
  std::vector<std::string> reasons;
  std::vector<std::string> unreachable, silent, overloaded, endpoint;
  for (const auto& n : c.node_reports) {
    if (!n.reachable) unreachable.push_back(n.name);
    for (const auto& p : n.problems) {
      if (absl::StartsWith(p, "daemon silent")) silent.push_back(n.name);
      if (absl::StartsWith(p, "host overloaded")) overloaded.push_back(n.name);
      if (absl::StartsWith(p, "gloo endpoint")) endpoint.push_back(n.name);
    }
  }
  if (!unreachable.empty()) {
    reasons.push_back(
        CountedReason(unreachable.size(), "node", "nodes", "unreachable", unreachable));
  }
  if (!silent.empty()) {
    reasons.push_back(CountedReason(silent.size(), "daemon", "daemons",
                                    "silent while its transport answers", silent));
  }
  std::map<Finding, std::vector<std::string>> by_kind;
  std::vector<std::string> other;
  for (const auto& l : c.links) {
    if (l.health == Health::kHealthy) continue;
    std::map<Finding, std::string> kinds;  // one figure per kind, the first
    for (const auto& [kind, figure] : l.findings) kinds.emplace(kind, figure);
    const std::string name = absl::StrCat(l.a, "<->", l.b);
    for (const auto& [kind, figure] : kinds) {
      by_kind[kind].push_back(figure.empty() ? name : absl::StrCat(name, " ", figure));
    }
    if (kinds.empty()) other.push_back(name);
  }
  for (const auto& [kind, links] : by_kind) {
    reasons.push_back(CountedReason(links.size(), "link", "links", FindingWord(kind), links));
  }
  if (!other.empty()) {
    reasons.push_back(
        CountedReason(other.size(), "link", "links", "inconsistent between its ends", other));
  }
  std::vector<std::string> pooled;
  for (const auto& s : c.suspects) {
    if (!s.pooled_loss_ratio) continue;
    pooled.push_back(absl::StrFormat("%s %s %.1f%%", SuspectKindName(s.kind), s.name,
                                     *s.pooled_loss_ratio * 100));
  }
  if (!pooled.empty()) {
    reasons.push_back(CountedReason(pooled.size(), "suspect", "suspects",
                                    "lossy over its links together", pooled));
  }
  if (!overloaded.empty()) {
    reasons.push_back(CountedReason(overloaded.size(), "host", "hosts", "overloaded", overloaded));
  }
  if (!endpoint.empty()) {
    reasons.push_back(CountedReason(endpoint.size(), "Gloo endpoint", "Gloo endpoints",
                                    "misconfigured", endpoint));
  }
  return reasons;
}

}  // namespace

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
  return source == "daemons" && !node_reports.empty() && !hidden_answered_ &&
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

void ClusterPicture::IndexViews() {
  views_.clear();
  // The first report of a node that lists the peer wins.
  auto index_of = [&](const std::string& name) -> std::optional<uint64_t> {
    auto it = std::lower_bound(nodes.begin(), nodes.end(), name);
    if (it == nodes.end() || *it != name) return std::nullopt;
    return static_cast<uint64_t>(it - nodes.begin());
  };
  for (const auto& n : node_reports) {
    const std::optional<uint64_t> row = index_of(n.name);
    if (!n.status || !row) continue;
    for (const auto& p : n.status->peers()) {
      if (auto column = index_of(p.name())) views_.emplace(*row * nodes.size() + *column, &p);
    }
  }
}

ClusterPicture BuildCluster(std::vector<FetchResult> fetched) {
  ClusterPicture c;
  c.fetched = std::move(fetched);
  c.node_reports = NodeReportsOf(c.fetched);
  c.nodes = NodeNames(c.node_reports);
  c.IndexViews();
  std::map<std::string, const NodeReport*> report_of;  // the last report of a name
  for (const auto& n : c.node_reports) report_of[n.name] = &n;
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
  // Pooled loss is present now although no single direction shows it.
  for (const auto& s : c.suspects) {
    if (s.pooled_loss_ratio) Worsen(c.verdict, Health::kDegraded);
  }
  c.reasons = VerdictReasons(c);
  return c;
}

void ApplyNodeFilter(const NodeFilter& filter, ClusterPicture& c) {
  if (filter.empty()) return;
  // Each node's group and labels: its own, else its peers' config's.
  std::map<std::string, std::pair<std::string, std::map<std::string, std::string>>> topology;
  for (const auto& n : c.node_reports) {
    if (!n.status) continue;
    topology[n.name] = {n.status->topology().group(),
                        {n.status->labels().begin(), n.status->labels().end()}};
  }
  for (const auto& n : c.node_reports) {
    if (!n.status) continue;
    for (const auto& p : n.status->peers()) {
      topology.emplace(p.name(),
                       std::make_pair(p.group(), std::map<std::string, std::string>(
                                                     p.labels().begin(), p.labels().end())));
    }
  }
  auto matches = [&](const std::string& name) {
    if (!filter.names.empty() && !filter.names.count(name)) return false;
    const auto it = topology.find(name);
    if (!filter.group.empty() && (it == topology.end() || it->second.first != filter.group)) {
      return false;
    }
    for (const auto& [key, value] : filter.labels) {
      if (it == topology.end()) return false;
      const auto label = it->second.second.find(key);
      if (label == it->second.second.end() || label->second != value) return false;
    }
    return true;
  };
  std::set<std::string> kept;
  for (const auto& name : c.nodes) {
    if (matches(name)) kept.insert(name);
  }
  c.nodes.assign(kept.begin(), kept.end());
  for (const auto& n : c.node_reports) {
    if (n.reachable && !kept.count(n.name)) c.hidden_answered_ = true;
  }
  c.node_reports.erase(std::remove_if(c.node_reports.begin(), c.node_reports.end(),
                                      [&](const NodeReport& n) { return !kept.count(n.name); }),
                       c.node_reports.end());
  c.links.erase(
      std::remove_if(c.links.begin(), c.links.end(),
                     [&](const LinkReport& l) { return !kept.count(l.a) && !kept.count(l.b); }),
      c.links.end());
  c.suspects.erase(std::remove_if(c.suspects.begin(), c.suspects.end(),
                                  [&](const Suspect& s) {
                                    if (kept.count(s.name)) return false;
                                    for (const auto& [a, b] : s.links) {
                                      if (kept.count(a) || kept.count(b)) return false;
                                    }
                                    return true;
                                  }),
                   c.suspects.end());
  c.training.erase(std::remove_if(c.training.begin(), c.training.end(),
                                  [&](const TrainingReport& t) { return !kept.count(t.node); }),
                   c.training.end());
  std::set<std::pair<std::string, std::string>> measured;
  for (const auto& [a, b] : c.measured_) {
    if (kept.count(a) && kept.count(b)) measured.insert({a, b});
  }
  c.measured_ = std::move(measured);
  c.coverage.node_pairs = c.nodes.size() * (c.nodes.size() - (c.nodes.empty() ? 0 : 1)) / 2;
  c.coverage.measured_pairs = c.measured_.size();
  c.IndexViews();
  c.verdict = Health::kHealthy;
  for (const auto& n : c.node_reports) Worsen(c.verdict, n.health);
  for (const auto& l : c.links) Worsen(c.verdict, l.health);
  for (const auto& s : c.suspects) {
    if (s.pooled_loss_ratio) Worsen(c.verdict, Health::kDegraded);
  }
  c.reasons = VerdictReasons(c);
}

}  // namespace gloowatch::client
