#include "client/health/render.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "client/core/plural.h"
#include "client/health/pending.h"
#include "client/health/suspects_render.h"
#include "common/proto_time.h"

namespace gloowatch::client {
namespace {

using Getter = std::function<std::optional<double>(const v1::PeerStatus&)>;

struct Metric {
  const char* json_key;
  const char* title;
  const char* format;  // for the text table
  Getter get;
};

const std::vector<Metric>& Metrics() {
  static const auto* m = new std::vector<Metric>{
      {"latency_p50_ms", "latency p50 (ms)", "%.3f",
       [](const v1::PeerStatus& p) -> std::optional<double> {
         if (!p.latency().has_p50_seconds()) return std::nullopt;
         return p.latency().p50_seconds() * 1e3;
       }},
      {"latency_p99_ms", "latency p99 (ms)", "%.3f",
       [](const v1::PeerStatus& p) -> std::optional<double> {
         if (!p.latency().has_p99_seconds()) return std::nullopt;
         return p.latency().p99_seconds() * 1e3;
       }},
      {"tx_bytes_per_second", "bandwidth tx (MB/s)", "%.1f",
       [](const v1::PeerStatus& p) -> std::optional<double> {
         if (!p.bandwidth().has_tx_bytes_per_second()) return std::nullopt;
         return p.bandwidth().tx_bytes_per_second();
       }},
      {"rx_bytes_per_second", "bandwidth rx (MB/s)", "%.1f",
       [](const v1::PeerStatus& p) -> std::optional<double> {
         if (!p.bandwidth().has_rx_bytes_per_second()) return std::nullopt;
         return p.bandwidth().rx_bytes_per_second();
       }},
      {"link_ratio", "link ratio", "%.2f",
       [](const v1::PeerStatus& p) -> std::optional<double> {
         if (!p.bandwidth().has_link_ratio()) return std::nullopt;
         return p.bandwidth().link_ratio();
       }},
      {"clock_offset_ms", "clock offset (ms, peer - row)", "%+.3f",
       [](const v1::PeerStatus& p) -> std::optional<double> {
         if (!p.clock().has_offset_seconds()) return std::nullopt;
         return p.clock().offset_seconds() * 1e3;
       }},
  };
  return *m;
}

std::string Paint(const std::string& text, Health h, bool color) {
  if (!color || h == Health::kHealthy) return text;
  return absl::StrCat(h == Health::kFailed ? "\033[31m" : "\033[33m", text, "\033[0m");
}

// Pads before colouring so escape codes do not break alignment.
std::string Cell(const std::string& s, size_t width, bool left = false) {
  if (s.size() >= width) return s;
  std::string pad(width - s.size(), ' ');
  return left ? s + pad : pad + s;
}

nlohmann::json ViewJson(const v1::PeerStatus* p) {
  if (p == nullptr) return nullptr;
  nlohmann::json j;
  j["state"] = p->state() == v1::PEER_STATE_UP           ? "up"
               : p->state() == v1::PEER_STATE_DOWN       ? "down"
               : p->state() == v1::PEER_STATE_CONNECTING ? "connecting"
                                                         : "unknown";
  for (const auto& m : Metrics()) {
    auto v = m.get(*p);
    j[m.json_key] = v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  }
  // A figure the daemon has, or null.
  auto optional = [](bool has, auto value) {
    return has ? nlohmann::json(value) : nlohmann::json(nullptr);
  };
  const v1::TcpFigures& tcp = p->tcp();
  j["latency_jitter_ms"] =
      optional(p->latency().has_jitter_seconds(), p->latency().jitter_seconds() * 1e3);
  j["clock_error_ms"] = optional(p->clock().has_error_seconds(), p->clock().error_seconds() * 1e3);
  j["selection"] = p->selection().empty() ? "unknown" : p->selection();
  j["failures_in_window"] = p->failures_in_window();
  j["drops_in_window"] = p->drops_in_window();
  j["latency_recent_p50_ms"] =
      optional(p->latency().has_recent_p50_seconds(), p->latency().recent_p50_seconds() * 1e3);
  j["peer_daemon_silent_seconds"] =
      optional(p->peer_daemon().has_silent_seconds(), p->peer_daemon().silent_seconds());
  j["tcp_loss_ratio"] = optional(tcp.has_loss_ratio(), tcp.loss_ratio());
  j["tcp_window_sent_segments"] =
      optional(tcp.has_window_sent_segments(), tcp.window_sent_segments());
  j["tcp_recent_sent_segments"] =
      optional(tcp.has_recent_sent_segments(), tcp.recent_sent_segments());
  j["tcp_recent_lost_segments"] =
      optional(tcp.has_recent_lost_segments(), tcp.recent_lost_segments());
  j["tcp_latest_sent_segments"] =
      optional(tcp.has_latest_sent_segments(), tcp.latest_sent_segments());
  j["tcp_latest_lost_segments"] =
      optional(tcp.has_latest_lost_segments(), tcp.latest_lost_segments());
  j["unacknowledged_seconds"] = optional(p->has_unacknowledged(), p->unacknowledged().seconds());
  // Per probe flow (probe.flows): a loss on some flows and not others is a
  // path's (the `path` suspect).
  nlohmann::json flows = nlohmann::json::array();
  for (const v1::FlowFigures& f : p->flows()) {
    flows.push_back({{"flow", f.flow()},
                     {"loss_ratio", f.has_loss_ratio() ? nlohmann::json(f.loss_ratio())
                                                       : nlohmann::json(nullptr)},
                     {"window_sent_segments", f.window_sent_segments()},
                     {"window_lost_segments", f.window_lost_segments()},
                     {"failures_in_window", f.failures_in_window()}});
  }
  j["flows"] = std::move(flows);
  j["last_failure"] = p->last_failure().message();
  return j;
}

// The figures up links do not have yet, soonest due first.
void AppendPendingText(const ClusterPicture& c, std::string& out) {
  constexpr size_t kListed = 20;
  const std::vector<PendingFigure> pending = PendingFigures(c);
  if (pending.empty()) return;
  const absl::Time now = absl::Now();
  absl::StrAppend(&out, "\npending figures (link up, not measured yet)\n");
  for (size_t k = 0; k < pending.size() && k < kListed; ++k) {
    const PendingFigure& p = pending[k];
    absl::StrAppend(&out, "  ", Cell(absl::StrCat(p.from, "->", p.to), 24, true), "  ",
                    Cell(p.figure, 12, true), "  ", DueText(p, now), "\n");
  }
  if (pending.size() > kListed) {
    absl::StrAppend(&out, "  ... and ", pending.size() - kListed,
                    " more (gloowatch health --json lists them all)\n");
  }
}

// The REASON column: why an unreachable daemon did not answer, else the
// node's first problem now, or what the first suspect naming it says.
std::string NodeReason(const ClusterPicture& c, const NodeReport& n) {
  // Why it did not answer, in one short line: its one line of the output.
  if (!n.reachable) return n.error;
  if (!n.problems.empty()) return n.problems.front();
  for (const Suspect& s : c.suspects) {
    if (s.name == n.name) {
      return absl::StrFormat("suspect: %s (confidence %.2f)", SuspectKindName(s.kind),
                             s.confidence);
    }
  }
  for (const auto& l : c.links) {
    if (l.health != Health::kHealthy && (l.a == n.name || l.b == n.name))
      return "a link has problems";
  }
  return "-";
}

// One row per node, in the kubectl habit: NODE STATUS REASON AGE (AGE: its
// daemon's uptime); -o wide adds where it is and what it runs.
void AppendNodesText(const ClusterPicture& c, size_t w, const HealthTextOptions& o,
                     std::string& out) {
  absl::StrAppend(&out, Cell("NODE", w, true), "  ", Cell("STATUS", 11, true), "  ",
                  Cell("REASON", 50, true), "  AGE",
                  o.wide ? "    ADDRESS                 DETAIL" : "", "\n");
  for (const auto& n : c.node_reports) {
    std::string reason = NodeReason(c, n);
    if (!o.wide && reason.size() > 50) reason = reason.substr(0, 47) + "...";
    absl::StrAppend(&out, Cell(n.name, w, true), "  ",
                    Paint(Cell(n.reachable ? HealthName(n.health) : "UNREACHABLE", 11, true),
                          n.health, o.color),
                    "  ", Cell(reason, 50, true), "  ",
                    Cell(n.age ? AgeText(*n.age) : "-", 5, true));
    if (o.wide) {
      std::string detail =
          n.reachable ? absl::StrCat("version ", n.status->version(), ", gloo ",
                                     n.status->gloo().interface(), " ", n.status->gloo().address())
                      : "-";  // its error is the REASON
      if (n.reachable && !n.status->labels().empty()) {
        // Sorted, as the config's map was (a proto map has no order).
        std::map<std::string, std::string> labels(n.status->labels().begin(),
                                                  n.status->labels().end());
        absl::StrAppend(&detail, ", labels ", absl::StrJoin(labels, ",", absl::PairFormatter("=")));
      }
      absl::StrAppend(&out, "  ", Cell(n.address, 22, true), "  ", detail);
    }
    out += "\n";
  }
}

// The past: links that recovered, daemons that restarted. Never in the verdict.
void AppendHistoryText(const ClusterPicture& c, std::string& out) {
  std::vector<std::string> lines;
  for (const auto& n : c.node_reports) {
    for (const auto& h : n.history) lines.push_back(absl::StrCat("node ", n.name, ": ", h));
  }
  for (const auto& l : c.links) {
    for (const auto& h : l.history) lines.push_back(h);
  }
  if (lines.empty()) return;
  absl::StrAppend(&out, "\nhistory (within the failure window; not counted in the verdict)\n");
  for (const auto& h : lines) absl::StrAppend(&out, "  ", h, "\n");
}

// One matrix per figure: row = the node measuring, column = its peer.
void AppendMatricesText(const ClusterPicture& c, size_t w, std::string& out) {
  const bool any_data = std::any_of(c.node_reports.begin(), c.node_reports.end(),
                                    [](const NodeReport& n) { return n.status != nullptr; });
  if (!any_data) return;
  const size_t cw = std::max<size_t>(9, w);
  for (const auto& m : Metrics()) {
    absl::StrAppend(&out, "\n", m.title, "\n", Cell("", w, true));
    for (const auto& n : c.nodes) absl::StrAppend(&out, " ", Cell(n, cw));
    out += "\n";
    for (size_t i = 0; i < c.nodes.size(); ++i) {
      absl::StrAppend(&out, Cell(c.nodes[i], w, true));
      for (size_t j = 0; j < c.nodes.size(); ++j) {
        std::string v = i == j ? "-" : c.coverage.sampled && !c.Measured(i, j) ? "~" : ".";
        if (const v1::PeerStatus* p = c.View(i, j)) {
          if (auto x = m.get(*p)) {
            const bool mb = std::string(m.json_key).find("bytes") != std::string::npos;
            v = absl::StrFormat(m.format, mb ? *x / 1e6 : *x);
          } else {
            v = p->state() == v1::PEER_STATE_UP ? "?" : "down";
          }
        }
        absl::StrAppend(&out, " ", Cell(v, cw));
      }
      out += "\n";
    }
  }
}

// Unhealthy links, worst first, then the nodes' own problems.
void AppendProblemsText(const ClusterPicture& c, bool color, std::string& out) {
  bool any = false;
  for (const auto& l : c.links) {
    if (l.health == Health::kHealthy) continue;
    if (!any) absl::StrAppend(&out, "\nproblem links (worst first)\n");
    any = true;
    absl::StrAppend(&out, "  ", Paint(Cell(HealthName(l.health), 8, true), l.health, color), "  ",
                    l.a, " <-> ", l.b, "\n");
    for (const auto& p : l.problems) absl::StrAppend(&out, "            ", p, "\n");
  }
  for (const auto& n : c.node_reports) {
    // An unreachable daemon's error is its row in the node table: once.
    if (!n.reachable) continue;
    for (const auto& p : n.problems) {
      absl::StrAppend(&out, any ? "" : "\n", "  ",
                      Paint(Cell(HealthName(n.health), 8, true), n.health, color), "  node ",
                      n.name, ": ", p, "\n");
      any = true;
    }
  }
}

void AppendTrainingText(const ClusterPicture& c, size_t w, bool color, std::string& out) {
  if (c.training.empty()) return;
  absl::StrAppend(&out, "\ntraining jobs (job signals; `gloowatch job NAME` judges a job)\n",
                  Cell("NODE", w, true), "  ", Cell("JOB", 20, true),
                  "  RANK   STEPS  COMM SHARE\n");
  for (const auto& t : c.training) {
    std::string share = t.job.has_communication_share()
                            ? absl::StrFormat("%.1f%%", t.job.communication_share() * 100)
                            : "-";
    absl::StrAppend(
        &out, Cell(t.node, w, true), "  ", Cell(t.job.job(), 20, true), "  ",
        Cell(absl::StrCat(t.job.rank()), 4), "  ", Cell(absl::StrCat(t.job.steps()), 6), "  ",
        Paint(Cell(share, 10), t.over_threshold ? Health::kDegraded : Health::kHealthy, color),
        t.over_threshold ? absl::StrFormat(" > %.0f%%", t.threshold * 100) : "", "\n");
  }
}

nlohmann::json CoverageJson(const ClusterPicture& c) {
  nlohmann::json coverage = {
      {"mode", c.coverage.sampled ? "sampled" : "full_mesh"},
      {"node_pairs", c.coverage.node_pairs},
      {"measured_pairs", c.coverage.measured_pairs},
      {"measured_both_ways", c.coverage.measured_both_ways},
      {"not_measured_pairs", c.coverage.node_pairs - c.coverage.measured_pairs}};
  // Which pairs: links[] lists every measured pair, this every other one.
  nlohmann::json not_measured = nlohmann::json::array();
  for (size_t a = 0; a < c.nodes.size(); ++a) {
    for (size_t b = a + 1; b < c.nodes.size(); ++b) {
      if (!c.Measured(a, b)) not_measured.push_back({c.nodes[a], c.nodes[b]});
    }
  }
  coverage["not_measured"] = std::move(not_measured);
  return coverage;
}

nlohmann::json NodeJson(const NodeReport& n) {
  nlohmann::json x = {
      {"name", n.name},
      {"address", n.address},
      {"reachable", n.reachable},
      {"error", n.error},
      {"status", HealthName(n.health)},
      {"problems", n.problems},
      {"history", n.history},
      {"age_seconds", n.age ? nlohmann::json(absl::ToDoubleSeconds(*n.age)) : nlohmann::json()}};
  if (!n.status) return x;
  x["version"] = n.status->version();
  x["gloo_version"] = n.status->gloo_version();
  x["gloo_interface"] = n.status->gloo().interface();
  x["gloo_address"] = n.status->gloo().address();
  const v1::TransportStatus& transport = n.status->transport();
  x["transport"] = {
      {"started_at", transport.has_started_at()
                         ? nlohmann::json(absl::FormatTime(
                               absl::RFC3339_sec, FromProtoTimestamp(transport.started_at()),
                               absl::UTCTimeZone()))
                         : nlohmann::json()},
      {"restarts", transport.restarts()},
      {"last_exit", transport.last_exit()}};
  // The node's topology labels (its config's labels:), {} when none.
  x["labels"] = nlohmann::json::object();
  for (const auto& [key, value] : n.status->labels()) x["labels"][key] = value;
  const EffectiveThresholds t = ThresholdsOf(*n.status);
  x["thresholds"] = {{"latency_seconds", t.latency_seconds},
                     {"bandwidth_link_ratio", t.link_ratio},
                     {"clock_offset_seconds", t.clock_offset_seconds},
                     {"communication_share", t.communication_share},
                     {"scheduling_delay_seconds", t.scheduling_delay_seconds},
                     {"cpu_steal_ratio", t.cpu_steal_ratio}};
  // Host load figures, null until measured.
  const v1::HostLoad& h = n.status->host_load();
  auto figure = [](bool has, double v) { return has ? nlohmann::json(v) : nlohmann::json(); };
  x["host_load"] = {
      {"scheduling_delay_seconds",
       figure(h.has_scheduling_delay_seconds(), h.scheduling_delay_seconds())},
      {"recent_scheduling_delay_seconds",
       figure(h.has_recent_scheduling_delay_seconds(), h.recent_scheduling_delay_seconds())},
      {"cpu_steal_ratio", figure(h.has_cpu_steal_ratio(), h.cpu_steal_ratio())},
      {"cpu_pressure_ratio", figure(h.has_cpu_pressure_ratio(), h.cpu_pressure_ratio())}};
  return x;
}

// Figure -> rows (the node measuring) of columns (its peer), null unmeasured.
nlohmann::json MatricesJson(const ClusterPicture& c) {
  nlohmann::json matrices;
  for (const auto& m : Metrics()) {
    nlohmann::json rows = nlohmann::json::array();
    for (size_t r = 0; r < c.nodes.size(); ++r) {
      nlohmann::json row = nlohmann::json::array();
      for (size_t k = 0; k < c.nodes.size(); ++k) {
        const v1::PeerStatus* p = r == k ? nullptr : c.View(r, k);
        auto v = p ? m.get(*p) : std::nullopt;
        row.push_back(v ? nlohmann::json(*v) : nlohmann::json(nullptr));
      }
      rows.push_back(row);
    }
    matrices[m.json_key] = rows;
  }
  return matrices;
}

nlohmann::json LinkJson(const LinkReport& l) {
  return {{"a", l.a},
          {"b", l.b},
          {"status", HealthName(l.health)},
          {"measured", true},
          {"measured_both_ways", l.ab != nullptr && l.ba != nullptr},
          {"problems", l.problems},
          {"history", l.history},
          {"a_to_b", ViewJson(l.ab)},
          {"b_to_a", ViewJson(l.ba)}};
}

nlohmann::json PendingJson(const PendingFigure& p, absl::Time now) {
  return {{"from", p.from},
          {"to", p.to},
          {"figure", p.figure},
          {"due",
           p.due ? nlohmann::json(absl::FormatTime(absl::RFC3339_sec, *p.due, absl::UTCTimeZone()))
                 : nlohmann::json(nullptr)},
          {"due_in_seconds",
           p.due ? nlohmann::json(absl::ToDoubleSeconds(*p.due - now)) : nlohmann::json(nullptr)}};
}

nlohmann::json TrainingJson(const TrainingReport& t) {
  return {{"node", t.node},
          {"job", t.job.job()},
          {"rank", t.job.rank()},
          {"steps", t.job.steps()},
          {"step_seconds_total", t.job.step_seconds_total()},
          {"communication_seconds_total", t.job.communication_seconds_total()},
          {"communication_share", t.job.has_communication_share()
                                      ? nlohmann::json(t.job.communication_share())
                                      : nlohmann::json(nullptr)},
          {"threshold", t.threshold},
          {"over_threshold", t.over_threshold}};
}

}  // namespace

std::string RenderHealthText(const ClusterPicture& c, const HealthTextOptions& o) {
  std::string out;
  const std::string asked = c.source == "prometheus"
                                ? absl::StrCat("from Prometheus ", c.source_url)
                                : absl::StrCat(Counted(c.node_reports.size(), "daemon"), " asked");
  absl::StrAppend(&out, "cluster: ", Paint(HealthName(c.verdict), c.verdict, o.color),
                  c.reasons.empty() ? "" : absl::StrCat(": ", absl::StrJoin(c.reasons, "; ")), " (",
                  asked, ", ", Counted(c.nodes.size(), "node"), ", ",
                  Counted(c.links.size(), "link"), ")\n");
  absl::StrAppend(&out, RenderSuspectsText(c.suspects, o.color));
  absl::StrAppend(
      &out, "coverage: ", c.coverage.measured_pairs, " of ", c.coverage.node_pairs,
      " node pairs measured directly",
      c.coverage.sampled ? " (sampled mesh; ~ = not probed by either node, not a failure)" : "",
      "\n\n");
  size_t w = 4;  // the node-name column
  for (const auto& n : c.nodes) w = std::max(w, n.size());
  AppendNodesText(c, w, o, out);
  AppendProblemsText(c, o.color, out);
  AppendHistoryText(c, out);
  AppendPendingText(c, out);
  AppendTrainingText(c, w, o.color, out);
  if (o.matrices || o.wide || c.nodes.size() <= kMatricesUpTo) AppendMatricesText(c, w, out);
  return out;
}

nlohmann::json HealthToJson(const ClusterPicture& c) {
  nlohmann::json j;
  j["schema"] = "gloowatch.health.v1";
  j["generated_at"] = absl::FormatTime(absl::RFC3339_sec, absl::Now(), absl::UTCTimeZone());
  j["verdict"] = HealthName(c.verdict);
  j["reasons"] = c.reasons;
  j["exit_code"] = c.ExitCode();
  j["source"] = c.source;
  if (!c.source_url.empty()) j["source_url"] = c.source_url;
  j["node_names"] = c.nodes;
  j["suspects"] = SuspectsToJson(c.suspects);
  j["coverage"] = CoverageJson(c);
  j["nodes"] = nlohmann::json::array();
  for (const auto& n : c.node_reports) j["nodes"].push_back(NodeJson(n));
  j["matrices"] = MatricesJson(c);
  j["links"] = nlohmann::json::array();
  for (const auto& l : c.links) j["links"].push_back(LinkJson(l));
  j["pending"] = nlohmann::json::array();
  const absl::Time now = absl::Now();
  for (const PendingFigure& p : PendingFigures(c)) j["pending"].push_back(PendingJson(p, now));
  j["training"] = nlohmann::json::array();
  for (const auto& t : c.training) j["training"].push_back(TrainingJson(t));
  return j;
}

}  // namespace gloowatch::client
