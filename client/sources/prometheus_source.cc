#include "client/sources/prometheus_source.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "common/failure.h"
#include "google/protobuf/util/time_util.h"

namespace gloowatch::client {
namespace {

using nlohmann::json;

constexpr int64_t kDefaultFailureWindowSeconds = 3600;  // thresholds.failure_window default
// Nodes answer GetStatus with a 5-minute share window; the same here.
constexpr char kTrainingShareRange[] = "5m";

struct Sample {
  std::map<std::string, std::string> labels;
  double value = 0;
  std::string Label(const std::string& key) const {
    auto it = labels.find(key);
    return it == labels.end() ? "" : it->second;
  }
};

// The training job of a training series: `training_job`; daemons before it
// exposed `job`, which Prometheus stores as `exported_job`.
std::string TrainingJobLabel(const Sample& s) {
  if (s.labels.count("training_job")) return s.Label("training_job");
  return s.labels.count("exported_job") ? s.Label("exported_job") : s.Label("job");
}

// "data.result" of an instant vector query -> samples.
absl::StatusOr<std::vector<Sample>> Samples(const json& result, const char* what) {
  if (result.is_null()) return std::vector<Sample>{};
  if (!result.is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": result is not a vector"));
  }
  std::vector<Sample> out;
  out.reserve(result.size());
  for (const json& r : result) {
    if (!r.is_object() || !r.contains("metric") || !r["metric"].is_object() ||
        !r.contains("value") || !r["value"].is_array() || r["value"].size() != 2 ||
        !r["value"][1].is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": unexpected element ", r.dump().substr(0, 200)));
    }
    Sample s;
    for (const auto& [k, v] : r["metric"].items()) {
      if (v.is_string()) s.labels[k] = v.get<std::string>();
    }
    const std::string text = r["value"][1].get<std::string>();
    char* end = nullptr;
    s.value = std::strtod(text.c_str(), &end);
    if (end == text.c_str()) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": value '", text, "' is not a number"));
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::string WindowText(int64_t seconds) { return absl::FormatDuration(absl::Seconds(seconds)); }

// Accumulates one peer's series.
struct PeerSeries {
  std::optional<double> up, p50, p99, jitter, tx, rx, offset, offset_error;
  std::optional<double> ratio_tx, ratio_rx;
  std::optional<double> loss_ratio;
  std::optional<double> recent_p50, daemon_silent, last_failure_time;
  std::map<std::string, double> failures_total;  // reason -> counter
  double probes_total = 0;
};

struct NodeSeries {
  std::map<std::string, PeerSeries> peers;
  v1::Thresholds thresholds;
  v1::HostLoad host_load;
  std::string interface;
  std::optional<double> link_speed;
  std::optional<double> started_at;  // the daemon's process_start_time_seconds
  // (job, rank) -> totals
  std::map<std::pair<std::string, int>, v1::TrainingJobStatus> training;
};

void SetThreshold(v1::Thresholds& t, const std::string& name, double v) {
  if (name == "gloowatch_threshold_latency_seconds") t.set_latency_seconds(v);
  if (name == "gloowatch_threshold_bandwidth_link_ratio") t.set_bandwidth_link_ratio(v);
  if (name == "gloowatch_threshold_clock_offset_seconds") t.set_clock_offset_seconds(v);
  if (name == "gloowatch_threshold_failure_window_seconds") t.set_failure_window_seconds(v);
  if (name == "gloowatch_threshold_communication_share") t.set_communication_share(v);
  if (name == "gloowatch_threshold_scheduling_delay_seconds") t.set_scheduling_delay_seconds(v);
  if (name == "gloowatch_threshold_cpu_steal_ratio") t.set_cpu_steal_ratio(v);
}

void SetHostLoad(v1::HostLoad& h, const std::string& name, double v) {
  if (name == "gloowatch_host_scheduling_delay_seconds") h.set_scheduling_delay_seconds(v);
  if (name == "gloowatch_host_recent_scheduling_delay_seconds") {
    h.set_recent_scheduling_delay_seconds(v);
  }
  if (name == "gloowatch_host_cpu_steal_ratio") h.set_cpu_steal_ratio(v);
  if (name == "gloowatch_host_cpu_pressure_ratio") h.set_cpu_pressure_ratio(v);
}

int64_t WindowOf(const v1::Thresholds& t) {
  return t.failure_window_seconds() > 0 ? std::llround(t.failure_window_seconds())
                                        : kDefaultFailureWindowSeconds;
}

void AddSeries(const Sample& s, NodeSeries& n) {
  const std::string name = s.Label("__name__");
  if (std::isnan(s.value)) return;
  if (absl::StartsWith(name, "gloowatch_threshold_")) {
    SetThreshold(n.thresholds, name, s.value);
    return;
  }
  if (absl::StartsWith(name, "gloowatch_host_")) {
    SetHostLoad(n.host_load, name, s.value);
    return;
  }
  if (name == "process_start_time_seconds") {
    if (s.Label("process").empty()) n.started_at = s.value;  // the daemon, not its transport
    return;
  }
  if (name == "gloowatch_link_speed_bytes_per_second") {
    n.interface = s.Label("interface");
    n.link_speed = s.value;
    return;
  }
  if (absl::StartsWith(name, "gloowatch_training_")) {
    int rank = 0;
    if (!absl::SimpleAtoi(s.Label("rank"), &rank)) return;
    const std::string job = TrainingJobLabel(s);
    v1::TrainingJobStatus& j = n.training[{job, rank}];
    j.set_job(job);
    j.set_rank(rank);
    if (name == "gloowatch_training_steps_total") j.set_steps(static_cast<uint64_t>(s.value));
    if (name == "gloowatch_training_step_seconds_total") j.set_step_seconds_total(s.value);
    if (name == "gloowatch_training_communication_seconds_total")
      j.set_communication_seconds_total(s.value);
    return;
  }
  const std::string peer = s.Label("peer");
  if (peer.empty()) return;
  PeerSeries& p = n.peers[peer];
  const bool tx = s.Label("direction") == "tx";
  if (name == "gloowatch_peer_up") p.up = s.value;
  if (name == "gloowatch_peer_rtt_p50_seconds") p.p50 = s.value;
  if (name == "gloowatch_peer_rtt_p99_seconds") p.p99 = s.value;
  if (name == "gloowatch_peer_rtt_jitter_seconds") p.jitter = s.value;
  if (name == "gloowatch_peer_bandwidth_bytes_per_second") (tx ? p.tx : p.rx) = s.value;
  if (name == "gloowatch_peer_bandwidth_link_ratio") (tx ? p.ratio_tx : p.ratio_rx) = s.value;
  if (name == "gloowatch_peer_clock_offset_seconds") p.offset = s.value;
  if (name == "gloowatch_peer_clock_offset_error_seconds") p.offset_error = s.value;
  if (name == "gloowatch_peer_probe_failures_total") p.failures_total[s.Label("reason")] = s.value;
  if (name == "gloowatch_peer_probes_total") p.probes_total += s.value;
  if (name == "gloowatch_peer_tcp_loss_ratio") p.loss_ratio = s.value;
  if (name == "gloowatch_peer_rtt_recent_p50_seconds") p.recent_p50 = s.value;
  if (name == "gloowatch_peer_daemon_silent_seconds") p.daemon_silent = s.value;
  if (name == "gloowatch_peer_last_failure_timestamp_seconds") p.last_failure_time = s.value;
}

// The same figures GetStatus gives. What Prometheus cannot tell: the last
// failure's text (the reasons counted in the window stand in for it), the
// Gloo address, up_since.
v1::PeerStatus ToPeerStatus(const std::string& name, const PeerSeries& p,
                            const std::map<std::string, uint64_t>& in_window, uint64_t drops,
                            int64_t window_seconds) {
  v1::PeerStatus s;
  s.set_name(name);
  uint64_t failed = 0;
  for (const auto& [reason, total] : p.failures_total) {
    const auto n = static_cast<uint64_t>(std::max(0.0, total));
    (*s.mutable_failures_by_reason())[reason] = n;
    failed += n;
  }
  s.set_probes_failed(failed);
  s.set_probes_ok(static_cast<uint64_t>(std::max(0.0, p.probes_total)));
  // gloowatch_peer_up is 0 both before the first connection and after a
  // failure; the daemon's state is DOWN exactly when a failure came last,
  // CONNECTING when there has been none.
  if (p.up && *p.up >= 1) {
    s.set_state(v1::PEER_STATE_UP);
  } else if (failed > 0) {
    s.set_state(v1::PEER_STATE_DOWN);
  } else {
    s.set_state(v1::PEER_STATE_CONNECTING);
  }
  if (p.p50) s.mutable_latency()->set_p50_seconds(*p.p50);
  if (p.p99) s.mutable_latency()->set_p99_seconds(*p.p99);
  if (p.jitter) s.mutable_latency()->set_jitter_seconds(*p.jitter);
  if (p.tx) s.mutable_bandwidth()->set_tx_bytes_per_second(*p.tx);
  if (p.rx) s.mutable_bandwidth()->set_rx_bytes_per_second(*p.rx);
  if (p.ratio_tx || p.ratio_rx) {
    s.mutable_bandwidth()->set_link_ratio(
        std::min(p.ratio_tx.value_or(HUGE_VAL), p.ratio_rx.value_or(HUGE_VAL)));
  }
  if (p.offset) s.mutable_clock()->set_offset_seconds(*p.offset);
  if (p.offset_error) s.mutable_clock()->set_error_seconds(*p.offset_error);
  if (p.loss_ratio) s.mutable_tcp()->set_loss_ratio(*p.loss_ratio);
  if (p.recent_p50) s.mutable_latency()->set_recent_p50_seconds(*p.recent_p50);
  if (p.daemon_silent) s.mutable_peer_daemon()->set_silent_seconds(*p.daemon_silent);
  s.set_drops_in_window(drops);
  uint64_t window_total = 0;
  std::vector<std::string> parts;
  std::string worst;
  uint64_t worst_n = 0;
  for (const auto& [reason, n] : in_window) {
    window_total += n;
    parts.push_back(absl::StrCat(reason, " ", n));
    if (n > worst_n) worst = reason, worst_n = n;
  }
  s.set_failures_in_window(window_total);
  if (window_total > 0) {
    s.mutable_last_failure()->set_message(absl::StrCat(
        "failures in the last ", WindowText(window_seconds), ": ", absl::StrJoin(parts, ", ")));
    for (v1::FailureReason r : kFailureReasons) {
      if (ReasonName(r) == worst) s.mutable_last_failure()->set_reason(r);
    }
  }
  if (p.last_failure_time && *p.last_failure_time > 0) {
    *s.mutable_last_failure()->mutable_time() =
        google::protobuf::util::TimeUtil::NanosecondsToTimestamp(
            static_cast<int64_t>(*p.last_failure_time * 1e9));
  }
  return s;
}

struct Target {
  std::string instance;
  std::string node;  // from gloowatch_build_info, else the target's `node` label
  std::optional<double> up;
  bool current = false;  // gloowatch_build_info has a sample now
  bool recent = false;   // ... within the lookback
  std::string version, gloo_version;
  std::string group;                               // gloowatch_build_info's `group` label
  std::map<std::string, std::string> info_labels;  // every label of gloowatch_build_info
  std::map<std::string, std::string> up_labels;    // every label of `up`: the target's
};

// The node's topology labels: what gloowatch_build_info carries beyond the
// target's own labels (those Prometheus puts on every series, so on `up`
// too) and its fixed ones. A topology label that clashed with a target label
// is kept by Prometheus as exported_<name>.
std::map<std::string, std::string> TopologyLabelsOf(const Target& t) {
  static const std::set<std::string> kFixed = {"__name__", "node", "version", "gloo_version",
                                               "group"};
  std::map<std::string, std::string> out;
  if (t.up_labels.empty()) return out;  // cannot tell them from the target's
  for (const auto& [name, value] : t.info_labels) {
    const bool renamed = absl::StartsWith(name, "exported_") && t.up_labels.count(name.substr(9));
    const std::string key = renamed ? name.substr(9) : name;
    if (kFixed.count(key) || (!renamed && t.up_labels.count(key))) continue;
    out[key] = value;
  }
  return out;
}

}  // namespace

std::string EscapeLabelValue(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string SeriesSelector(const PrometheusOptions& o) {
  std::string s = absl::StrCat("job=\"", EscapeLabelValue(o.job), "\"");
  if (!o.selector.empty()) absl::StrAppend(&s, ",", o.selector);
  return s;
}

std::string UpQuery(const PrometheusOptions& o) {
  return absl::StrCat("up{", SeriesSelector(o), "}");
}
std::string BuildInfoQuery(const PrometheusOptions& o) {
  return absl::StrCat("gloowatch_build_info{", SeriesSelector(o), "}");
}
std::string BuildInfoRecentQuery(const PrometheusOptions& o) {
  return absl::StrCat("last_over_time(gloowatch_build_info{", SeriesSelector(o), "}[",
                      absl::ToInt64Seconds(o.lookback), "s])");
}
std::string SeriesQuery(const PrometheusOptions& o) {
  return absl::StrCat(
      "{__name__=~\"gloowatch_(peer_up|peer_rtt_p50_seconds|peer_rtt_p99_seconds|"
      "peer_rtt_jitter_seconds|"
      "peer_bandwidth_bytes_per_second|peer_bandwidth_link_ratio|peer_clock_offset_seconds|"
      "peer_clock_offset_error_seconds|peer_probe_failures_total|peer_probes_total|"
      "peer_tcp_loss_ratio|peer_rtt_recent_p50_seconds|peer_daemon_silent_seconds|"
      "peer_last_failure_timestamp_seconds|"
      "link_speed_bytes_per_second|threshold_.+|host_.+|training_.+_total)|"
      "process_start_time_seconds\",",
      SeriesSelector(o), "}");
}
std::string FailuresQuery(const PrometheusOptions& o, int64_t window_seconds) {
  return absl::StrCat("increase(gloowatch_peer_probe_failures_total{", SeriesSelector(o), "}[",
                      window_seconds, "s]) > 0");
}
std::string DropsQuery(const PrometheusOptions& o, int64_t window_seconds) {
  return absl::StrCat("increase(gloowatch_peer_drops_total{", SeriesSelector(o), "}[",
                      window_seconds, "s]) > 0");
}
std::string FailuresSinceUpQuery(const PrometheusOptions& o, int64_t window_seconds,
                                 const std::set<std::string>& nodes) {
  std::string sel = SeriesSelector(o);
  if (!nodes.empty()) {
    std::vector<std::string> escaped;
    for (const std::string& n : nodes) {
      std::string e;
      for (char c : n) {
        // A regex escape, itself escaped for the PromQL string.
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') e += "\\\\";
        if (c == '"') e += '\\';
        e += c;
      }
      escaped.push_back(e);
    }
    absl::StrAppend(&sel, ",node=~\"", absl::StrJoin(escaped, "|"), "\"");
  }
  const std::string w = absl::StrCat(window_seconds, "s");
  // Counter values sampled while the peer was up: the smallest is the value
  // when it was first up in the window (counters only grow).
  const std::string step = absl::StrCat(std::max<int64_t>(5, window_seconds / 720), "s");
  const std::string failures = absl::StrCat("gloowatch_peer_probe_failures_total{", sel, "}");
  return absl::StrCat("(", failures, " - on(node, peer, instance, reason) min_over_time((",
                      failures, " and on(node, peer, instance) gloowatch_peer_up{", sel, "} == 1)[",
                      w, ":", step, "])) and on(node, peer, instance, reason) (increase(", failures,
                      "[", w, "]) > 0)");
}

std::string TcpSentInWindowQuery(const PrometheusOptions& o) {
  return absl::StrCat("increase(gloowatch_peer_tcp_sent_segments_total{", SeriesSelector(o),
                      "}[60s])");
}
std::string TrainingShareQuery(const PrometheusOptions& o) {
  // Daemons before `training_job` exposed `job`, stored as `exported_job`.
  const std::string by = "sum by (node, instance, training_job, exported_job, rank)";
  return absl::StrCat(by, " (rate(gloowatch_training_communication_seconds_total{",
                      SeriesSelector(o), "}[", kTrainingShareRange, "])) / ", by,
                      " (rate(gloowatch_training_step_seconds_total{", SeriesSelector(o), "}[",
                      kTrainingShareRange, "]))");
}

std::vector<int64_t> FailureWindows(const json& series) {
  std::set<int64_t> windows;
  std::set<std::string> nodes, with_window;
  auto samples = Samples(series, "series");
  if (!samples.ok()) return {kDefaultFailureWindowSeconds};
  for (const Sample& s : *samples) {
    nodes.insert(s.Label("node"));
    if (s.Label("__name__") == "gloowatch_threshold_failure_window_seconds" && s.value > 0 &&
        std::isfinite(s.value)) {
      windows.insert(std::llround(s.value));
      with_window.insert(s.Label("node"));
    }
  }
  if (with_window.size() < nodes.size() || windows.empty())
    windows.insert(kDefaultFailureWindowSeconds);
  return {windows.begin(), windows.end()};
}

namespace {

// (node, peer)
using PairKey = std::pair<std::string, std::string>;
// Failure window (seconds) -> (node, peer) -> reason -> failures in it.
using FailuresByWindow = std::map<int64_t, std::map<PairKey, std::map<std::string, uint64_t>>>;

// What gloowatch_build_info says about the target that exports it.
void TakeBuildInfo(const Sample& s, Target& t) {
  t.recent = true;
  t.node = s.Label("node");
  t.version = s.Label("version");
  t.gloo_version = s.Label("gloo_version");
  t.group = s.Label("group");
  t.info_labels = s.labels;
}

// Targets by instance: what Prometheus scrapes, and what it last saw there.
std::map<std::string, Target> TargetsByInstance(const std::vector<Sample>& up,
                                                const std::vector<Sample>& build_info,
                                                const std::vector<Sample>& build_info_recent) {
  std::map<std::string, Target> targets;
  for (const Sample& s : build_info_recent) TakeBuildInfo(s, targets[s.Label("instance")]);
  for (const Sample& s : build_info) {
    Target& t = targets[s.Label("instance")];
    TakeBuildInfo(s, t);
    t.current = true;
  }
  for (const Sample& s : up) {
    Target& t = targets[s.Label("instance")];
    t.up = s.value;
    t.up_labels = s.labels;
    if (t.node.empty()) t.node = s.Label("node");  // a target label, if the config sets one
  }
  return targets;
}

// A node that answers where Prometheus scrapes it now.
bool Reachable(const Target& t) { return t.current && t.up.value_or(1) != 0 && !t.node.empty(); }

// Series by node, only from the instance that node is scraped at (a node
// that moved leaves stale series at its old instance).
std::map<std::string, NodeSeries> SeriesByNode(const std::vector<Sample>& series,
                                               const std::map<std::string, Target>& targets) {
  std::map<std::string, std::string> instance_of;
  for (const auto& [instance, t] : targets) {
    if (t.current && !t.node.empty()) instance_of.emplace(t.node, instance);
  }
  std::map<std::string, NodeSeries> by_node;
  for (const Sample& s : series) {
    const std::string node = s.Label("node");
    auto it = instance_of.find(node);
    if (it == instance_of.end()) continue;
    if (s.labels.count("instance") && s.Label("instance") != it->second) continue;
    AddSeries(s, by_node[node]);
  }
  return by_node;
}

// Failures in each node's window, rounded: increase() extrapolates. Where
// the peer was up in the window, only what failed since it first was.
absl::StatusOr<FailuresByWindow> WindowFailures(const PrometheusSnapshot& snap) {
  FailuresByWindow window_failures;
  for (const auto& [window, result] : snap.failures_by_window) {
    auto f = Samples(result, "increase(gloowatch_peer_probe_failures_total)");
    if (!f.ok()) return f.status();
    for (const Sample& s : *f) {
      if (!(s.value > 0) || !std::isfinite(s.value)) continue;
      window_failures[window][{s.Label("node"), s.Label("peer")}][s.Label("reason")] +=
          std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(s.value)));
    }
  }
  for (const auto& [window, result] : snap.failures_since_up_by_window) {
    auto f = Samples(result, "failures since up");
    if (!f.ok()) return f.status();
    for (const Sample& s : *f) {
      auto& reasons = window_failures[window][{s.Label("node"), s.Label("peer")}];
      const int64_t n = std::isfinite(s.value) ? std::llround(s.value) : 0;
      if (n > 0) {
        reasons[s.Label("reason")] = static_cast<uint64_t>(n);
      } else {
        reasons.erase(s.Label("reason"));
      }
    }
  }
  return window_failures;
}

// TCP segments each (node, peer) sent in the loss window.
absl::StatusOr<std::map<PairKey, double>> TcpSentByPair(const PrometheusSnapshot& snap) {
  std::map<PairKey, double> tcp_sent;
  if (snap.tcp_sent_in_window.is_null()) return tcp_sent;
  auto sent = Samples(snap.tcp_sent_in_window, "TCP segments in the loss window");
  if (!sent.ok()) return sent.status();
  for (const Sample& s : *sent) {
    if (std::isfinite(s.value)) tcp_sent[{s.Label("node"), s.Label("peer")}] = s.value;
  }
  return tcp_sent;
}

// (node, training job, rank) -> communication share.
std::map<std::tuple<std::string, std::string, int>, double> TrainingShares(
    const std::vector<Sample>& share) {
  std::map<std::tuple<std::string, std::string, int>, double> shares;
  for (const Sample& s : share) {
    int rank = 0;
    if (!absl::SimpleAtoi(s.Label("rank"), &rank) || !std::isfinite(s.value)) continue;
    shares[{s.Label("node"), TrainingJobLabel(s), rank}] = s.value;
  }
  return shares;
}

// Everything of one snapshot a node's status is built from.
struct SnapshotIndex {
  double time = 0;
  std::map<std::string, NodeSeries> by_node;
  std::set<std::string> all_names;  // every node named anywhere
  FailuresByWindow window_failures;
  // Failure window (seconds) -> (node, peer) -> drops in it.
  std::map<int64_t, std::map<PairKey, uint64_t>> drops_by_window;
  std::map<PairKey, double> tcp_sent;
  std::map<std::tuple<std::string, std::string, int>, double> shares;
  std::map<std::string, std::string> group_of;  // node -> group, from build_info
};

absl::StatusOr<SnapshotIndex> IndexSnapshot(const PrometheusSnapshot& snap,
                                            const std::vector<Sample>& series,
                                            const std::vector<Sample>& share,
                                            const std::map<std::string, Target>& targets) {
  SnapshotIndex index;
  index.time = snap.time;
  index.by_node = SeriesByNode(series, targets);
  for (const auto& [node, n] : index.by_node) {
    index.all_names.insert(node);
    for (const auto& [peer, p] : n.peers) index.all_names.insert(peer);
  }
  absl::StatusOr<FailuresByWindow> failures = WindowFailures(snap);
  if (!failures.ok()) return failures.status();
  index.window_failures = *std::move(failures);
  for (const auto& [window, result] : snap.drops_by_window) {
    auto drops = Samples(result, "increase(gloowatch_peer_drops_total)");
    if (!drops.ok()) return drops.status();
    for (const Sample& s : *drops) {
      if (!(s.value > 0) || !std::isfinite(s.value)) continue;
      index.drops_by_window[window][{s.Label("node"), s.Label("peer")}] =
          std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(s.value)));
    }
  }
  absl::StatusOr<std::map<PairKey, double>> tcp_sent = TcpSentByPair(snap);
  if (!tcp_sent.ok()) return tcp_sent.status();
  index.tcp_sent = *std::move(tcp_sent);
  index.shares = TrainingShares(share);
  for (const auto& [instance, t] : targets) {
    if (!t.node.empty()) index.all_names.insert(t.node);
    if (t.recent && !t.node.empty()) index.group_of.emplace(t.node, t.group);
  }
  return index;
}

// Why a target that is not a reachable node is listed: the error of its row.
void ExplainUnreachable(const std::string& instance, const Target& t,
                        const PrometheusOptions& options, FetchResult& r) {
  if (t.up && *t.up == 0) {
    r.error_code = "SCRAPE_FAILED";
    r.error =
        absl::StrCat("Prometheus cannot scrape ", instance, " (up == 0 in job ", options.job, ")");
  } else if (!t.recent) {
    r.error_code = "NOT_GLOOWATCH";
    r.error = absl::StrCat("scraped in job ", options.job,
                           ", but exports no gloowatch_build_info (not a gloowatchd?)");
  } else {
    r.error_code = "STALE";
    r.error =
        absl::StrCat("no samples from ", instance, " now, only within the last ",
                     absl::FormatDuration(options.lookback), " (target gone from Prometheus?)");
  }
}

// Node `t.node`'s peers as its series describe them.
void AddPeers(const std::string& node, const NodeSeries& n, bool full_mesh,
              const SnapshotIndex& index, v1::NodeStatus& s) {
  static const std::map<std::string, uint64_t> kNone;
  static const std::map<PairKey, std::map<std::string, uint64_t>> kNoWindow;
  const auto wit = index.window_failures.find(WindowOf(n.thresholds));
  const auto& wf = wit == index.window_failures.end() ? kNoWindow : wit->second;
  for (const auto& [peer, p] : n.peers) {
    auto fit = wf.find({node, peer});
    uint64_t drops = 0;
    if (auto dit = index.drops_by_window.find(WindowOf(n.thresholds));
        dit != index.drops_by_window.end()) {
      if (auto it = dit->second.find({node, peer}); it != dit->second.end()) drops = it->second;
    }
    v1::PeerStatus ps =
        ToPeerStatus(peer, p, fit == wf.end() ? kNone : fit->second, drops, WindowOf(n.thresholds));
    if (full_mesh) ps.set_selection("mesh");
    if (auto g = index.group_of.find(peer); g != index.group_of.end()) ps.set_group(g->second);
    if (auto it = index.tcp_sent.find({node, peer}); it != index.tcp_sent.end() && p.loss_ratio) {
      ps.mutable_tcp()->set_window_sent_segments(
          static_cast<uint64_t>(std::llround(std::max(0.0, it->second))));
    }
    *s.add_peers() = std::move(ps);
  }
}

// A reachable node's status, as Prometheus last saw it.
v1::NodeStatus NodeStatusOf(const Target& t, const SnapshotIndex& index) {
  v1::NodeStatus s;
  s.set_node(t.node);
  s.set_version(t.version);
  s.set_gloo_version(t.gloo_version);
  s.mutable_topology()->set_group(t.group);
  for (const auto& [name, value] : TopologyLabelsOf(t)) (*s.mutable_labels())[name] = value;
  *s.mutable_now() = google::protobuf::util::TimeUtil::NanosecondsToTimestamp(
      static_cast<int64_t>(index.time * 1e9));
  const NodeSeries empty;
  auto nit = index.by_node.find(t.node);
  const NodeSeries& n = nit != index.by_node.end() ? nit->second : empty;
  *s.mutable_thresholds() = n.thresholds;
  *s.mutable_host_load() = n.host_load;
  s.mutable_gloo()->set_interface(n.interface);
  if (n.link_speed) s.mutable_gloo()->set_link_speed_bytes_per_second(*n.link_speed);
  if (n.started_at) {
    *s.mutable_started_at() = google::protobuf::util::TimeUtil::NanosecondsToTimestamp(
        static_cast<int64_t>(*n.started_at * 1e9));
  }
  const bool full_mesh = n.peers.size() + 1 >= index.all_names.size();
  AddPeers(t.node, n, full_mesh, index, s);
  for (const auto& [key, job] : n.training) {
    v1::TrainingJobStatus j = job;
    if (auto it = index.shares.find({t.node, key.first, key.second}); it != index.shares.end()) {
      j.set_communication_share(it->second);
    }
    *s.add_training() = std::move(j);
  }
  // Prometheus does not carry the topology: a node with series for fewer
  // peers than the cluster has is taken as probing a sample.
  v1::Topology* topo = s.mutable_topology();
  topo->set_mode(full_mesh ? "full_mesh" : "sampled");
  topo->set_cluster_nodes(static_cast<uint32_t>(index.all_names.size()));
  topo->set_probed_peers(static_cast<uint32_t>(n.peers.size()));
  return s;
}

}  // namespace

absl::StatusOr<std::vector<FetchResult>> NodesFromSnapshot(const PrometheusSnapshot& snap,
                                                           const PrometheusOptions& options) {
  auto up = Samples(snap.up, "up");
  if (!up.ok()) return up.status();
  auto now = Samples(snap.build_info, "gloowatch_build_info");
  if (!now.ok()) return now.status();
  auto recent = Samples(snap.build_info_recent, "last_over_time(gloowatch_build_info)");
  if (!recent.ok()) return recent.status();
  auto series = Samples(snap.series, "gloowatch series");
  if (!series.ok()) return series.status();
  auto share = Samples(snap.training_share, "training share");
  if (!share.ok()) return share.status();

  const std::map<std::string, Target> targets = TargetsByInstance(*up, *now, *recent);
  if (targets.empty()) {
    return absl::NotFoundError(absl::StrCat(
        "no gloowatch series for {", SeriesSelector(options),
        "}: no up and no gloowatch_build_info within ", absl::FormatDuration(options.lookback),
        " (is the scrape job named '", options.job,
        "'? see --prometheus_job; does Prometheus scrape each daemon's metrics_listen?)"));
  }
  absl::StatusOr<SnapshotIndex> index = IndexSnapshot(snap, *series, *share, targets);
  if (!index.ok()) return index.status();

  std::set<std::string> reachable_names;
  for (const auto& [instance, t] : targets) {
    if (Reachable(t)) reachable_names.insert(t.node);
  }
  std::vector<FetchResult> out;
  std::set<std::string> listed;
  for (const auto& [instance, t] : targets) {
    FetchResult r;
    r.target.name = t.node.empty() ? instance : t.node;
    if (auto ep = ParseEndpoint(instance); ep.ok()) {
      r.target.endpoint = *ep;
    } else {
      r.target.endpoint.host = instance;
    }
    if (!Reachable(t)) {
      // The same node reachable at another instance: this one is a leftover.
      if (reachable_names.count(r.target.name) || listed.count(r.target.name)) continue;
      ExplainUnreachable(instance, t, options, r);
      listed.insert(r.target.name);
      out.push_back(std::move(r));
      continue;
    }
    if (!listed.insert(t.node).second) continue;  // duplicate target for one node
    r.status = NodeStatusOf(t, *index);
    out.push_back(std::move(r));
  }
  return out;
}

absl::StatusOr<json> QueryPrometheus(const PrometheusOptions& o, const std::string& promql,
                                     double time) {
  const std::string url = absl::StrCat(absl::StripSuffix(o.url, "/"), "/api/v1/query");
  const std::string form =
      absl::StrCat("query=", FormEscape(promql), "&time=", absl::StrFormat("%.3f", time));
  auto response = HttpPostForm(url, form, o.http);
  if (!response.ok()) {
    if (absl::IsDeadlineExceeded(response.status())) {
      return absl::DeadlineExceededError(absl::StrCat("Prometheus at ", o.url, ": ",
                                                      response.status().message(),
                                                      " (raise --deadline for a large cluster)"));
    }
    return absl::UnavailableError(
        absl::StrCat("cannot reach Prometheus at ", o.url, ": ", response.status().message()));
  }
  const json reply = json::parse(response->body, nullptr, /*allow_exceptions=*/false);
  const bool prometheus_shaped =
      reply.is_object() && reply.contains("status") && reply["status"].is_string();
  const std::string excerpt = response->body.substr(0, 120);
  if (!prometheus_shaped) {
    return absl::FailedPreconditionError(
        absl::StrCat(url, " answered HTTP ", response->status, " without Prometheus query JSON",
                     response->status == 200 ? " (is this a Prometheus server?)" : "",
                     excerpt.empty() ? "" : absl::StrCat(": ", excerpt)));
  }
  if (reply["status"] != "success") {
    return absl::FailedPreconditionError(absl::StrCat(
        "Prometheus at ", o.url, " rejected `", promql, "` (HTTP ", response->status, ", ",
        reply.value("errorType", "error"), "): ", reply.value("error", "no reason given")));
  }
  if (response->status != 200) {
    return absl::FailedPreconditionError(
        absl::StrCat(url, " answered HTTP ", response->status, ": ", excerpt));
  }
  if (!reply.contains("data") || !reply["data"].is_object() ||
      reply["data"].value("resultType", "") != "vector" || !reply["data"].contains("result") ||
      !reply["data"]["result"].is_array()) {
    return absl::FailedPreconditionError(
        absl::StrCat(url, " did not answer `", promql,
                     "` with an instant vector (is this a Prometheus server?)"));
  }
  return reply["data"]["result"];
}

namespace {

absl::StatusOr<json> Query(const PrometheusOptions& o, const std::string& promql, double time) {
  return QueryPrometheus(o, promql, time);
}

}  // namespace

absl::StatusOr<std::vector<FetchResult>> FetchFromPrometheus(const PrometheusOptions& o) {
  if (absl::Status s = ValidateHttpUrl(o.url); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--prometheus: ", s.message()));
  }
  if (o.url.find_first_of("?#") != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--prometheus: '", o.url, "' has a query or fragment; give the server's base URL"));
  }
  PrometheusSnapshot snap;
  snap.time = absl::ToUnixMillis(absl::Now()) / 1e3;
  struct Step {
    std::string promql;
    json* into;
  };
  for (const Step& step :
       {Step{UpQuery(o), &snap.up}, Step{BuildInfoQuery(o), &snap.build_info},
        Step{BuildInfoRecentQuery(o), &snap.build_info_recent}, Step{SeriesQuery(o), &snap.series},
        Step{TrainingShareQuery(o), &snap.training_share},
        Step{TcpSentInWindowQuery(o), &snap.tcp_sent_in_window}}) {
    auto result = Query(o, step.promql, snap.time);
    if (!result.ok()) return result.status();
    *step.into = *std::move(result);
  }
  for (int64_t window : FailureWindows(snap.series)) {
    auto result = Query(o, FailuresQuery(o, window), snap.time);
    if (!result.ok()) return result.status();
    snap.failures_by_window[window] = *std::move(result);
    auto drops = Query(o, DropsQuery(o, window), snap.time);
    if (!drops.ok()) return drops.status();
    snap.drops_by_window[window] = *std::move(drops);
    // Only when something failed: this one runs a subquery over the window.
    std::set<std::string> nodes;
    for (const json& r : snap.failures_by_window[window]) {
      if (r.is_object() && r.contains("metric") && r["metric"].contains("node") &&
          r["metric"]["node"].is_string())
        nodes.insert(r["metric"]["node"].get<std::string>());
    }
    if (nodes.empty()) continue;
    if (nodes.size() > 200) nodes.clear();  // a long regex costs more than it saves
    // Best effort: a server that refuses the subquery (e.g. query.max-samples
    // on a huge cluster) leaves the plain increase().
    auto since_up = Query(o, FailuresSinceUpQuery(o, window, nodes), snap.time);
    if (since_up.ok()) snap.failures_since_up_by_window[window] = *std::move(since_up);
  }
  auto nodes = NodesFromSnapshot(snap, o);
  if (!nodes.ok() && absl::IsInvalidArgument(nodes.status())) {
    return absl::FailedPreconditionError(
        absl::StrCat("Prometheus at ", o.url, ": ", nodes.status().message()));
  }
  if (!nodes.ok() && absl::IsNotFound(nodes.status())) {
    return absl::NotFoundError(
        absl::StrCat("Prometheus at ", o.url, ": ", nodes.status().message()));
  }
  return nodes;
}

}  // namespace gloowatch::client
