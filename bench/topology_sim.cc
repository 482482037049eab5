// Deterministic simulation of the probing topology (daemon/peers/topology), no
// sockets: what each node probes, epoch by epoch, for clusters of 1,000 and
// 10,000 nodes, and what that costs and buys compared with a full mesh.
// docs/topology.md and docs/performance.md explain the figures.
//
//   topology_sim                        # the table for 1,000 and 10,000 nodes
//   topology_sim --nodes=200 --check    # one size, exit 1 if a property fails
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/config.h"
#include "common/simulated_clock.h"
#include "daemon/metrics/metrics.h"
#include "daemon/peers/peer_series.h"
#include "daemon/peers/peer_tracker.h"
#include "daemon/peers/topology.h"
#include "prometheus/text_serializer.h"

ABSL_FLAG(std::string, nodes, "1000,10000", "cluster sizes to simulate, comma-separated");
ABSL_FLAG(uint32_t, group_size, 40, "nodes per group (rack); 0 = no groups");
ABSL_FLAG(uint32_t, sample_peers, gloowatch::TopologyConfig().sample_peers,
          "topology.sample_peers");
ABSL_FLAG(uint32_t, tracked_pairs, 20000, "random pairs whose failure detection is timed");
ABSL_FLAG(bool, check, false, "assert the topology's properties; exit 1 if one fails");

namespace gloowatch {
namespace {

// Exposed series (lines of the text format that are not comments).
size_t CountSeries(const std::vector<prometheus::MetricFamily>& families) {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  size_t series = 0;
  for (absl::string_view line : absl::StrSplit(out.str(), '\n')) {
    if (!line.empty() && line[0] != '#') ++series;
  }
  return series;
}

struct SeriesCount {
  size_t per_node_fixed;  // build info, link speed, restarts
  size_t per_peer;
};

// From the real metrics modules: one peer with every figure recorded once.
SeriesCount CountSeriesFromMetricsModule() {
  Metrics metrics({"node-a", "sim", "sim", "eth0", 12.5e9, "", {}});
  SimulatedClock clock;
  PeerConfig peer;
  peer.name = "node-b";
  auto tracker =
      std::make_shared<PeerTracker>(peer, absl::Minutes(1), absl::Minutes(1), 12.5e9, &clock);
  tracker->SetUp("", "sim");
  tracker->RecordRtts({absl::Microseconds(50)});
  tracker->RecordBandwidth(BandwidthDirection::kTx, {1e9, 0, absl::ZeroDuration()});
  tracker->RecordBandwidth(BandwidthDirection::kRx, {1e9, 0, absl::ZeroDuration()});
  tracker->RecordOffset({absl::Microseconds(100), absl::Microseconds(40), absl::Microseconds(20)});
  tracker->RecordFailure(v1::FAILURE_REASON_TIMEOUT, "sim");
  const PeerSeries series(
      "node-a", [tracker] { return std::vector<std::shared_ptr<const PeerTracker>>{tracker}; });
  return {CountSeries(metrics.registry().Collect()), CountSeries(series.Collect())};
}

std::vector<TopologyNode> Nodes(size_t n, size_t per_group) {
  std::vector<TopologyNode> nodes;
  nodes.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    nodes.push_back({absl::StrFormat("node%05d", i),
                     per_group == 0 ? "" : absl::StrFormat("rack%04d", i / per_group)});
  }
  return nodes;
}

// A set of node indexes as bits.
class Bits {
 public:
  explicit Bits(size_t n) : words_((n + 63) / 64) {}
  void Clear() { std::fill(words_.begin(), words_.end(), 0); }
  // True when newly set.
  bool Set(size_t i) {
    uint64_t& word = words_[i / 64];
    const uint64_t mask = uint64_t{1} << (i % 64);
    if (word & mask) return false;
    word |= mask;
    return true;
  }
  bool Get(size_t i) const { return words_[i / 64] >> (i % 64) & 1; }

 private:
  std::vector<uint64_t> words_;
};

struct Result {
  size_t nodes = 0;
  size_t groups = 0;
  bool sampled = false;
  double peers_mean = 0;
  size_t peers_max = 0;
  size_t incoming_max = 0;
  uint64_t sample_cycle = 0;       // epochs
  uint64_t cross_group_cycle = 0;  // epochs
  uint64_t cover_aligned = 0;      // epochs until every ordered pair measured, from a cycle start
  uint64_t cover_mid = 0;          // the same from the middle of a cycle
  size_t epochs_all_group_pairs = 0;
  size_t group_epochs = 0;   // epochs checked for the pairs of groups
  size_t group_windows = 0;  // windows of cross_group_cycle epochs among them
  // Epochs until a pair's link is probed (either direction) after it fails
  // at the start of an epoch in the middle of a cycle: median, p99, max.
  uint64_t link_p50 = 0, link_p99 = 0, link_max = 0;
  uint64_t selections = 0;  // Select calls
  double seconds = 0;
};

// Node by node, epoch by epoch (so each node's bits stay in the cache):
// what it probes, until it has measured every other node both from a cycle
// start and from the middle of the cycle.
Result Simulate(size_t n, size_t per_group, const TopologyConfig& config, size_t tracked) {
  const auto started = std::chrono::steady_clock::now();
  Result r;
  const Topology t(Nodes(n, per_group), config);
  r.nodes = n;
  r.groups = t.group_count();
  r.sampled = t.sampled();
  r.sample_cycle = t.SampleCycle();
  r.cross_group_cycle = t.CrossGroupCycle();
  // Real epochs (unix time / 5 min in 2026), starting at a cycle start.
  const uint64_t cycle = r.sample_cycle;
  const uint64_t start = (5'900'000 / cycle + 1) * cycle;
  const uint64_t mid = start + cycle / 2;  // an arbitrary moment
  const size_t g = t.group_count();
  // Pairs of groups are checked in every epoch of one full cycle.
  r.group_epochs = static_cast<size_t>(std::max<uint64_t>(cycle, r.cross_group_cycle));
  std::vector<Bits> group_links(r.group_epochs, Bits(g * g));

  // Pairs whose link fails at epoch `mid`: when is it probed next, from
  // either end?
  std::mt19937_64 rng(20261203);
  std::vector<std::pair<size_t, size_t>> pairs;
  std::vector<std::vector<size_t>> tracked_by_node(n);  // node -> indexes into pairs
  for (size_t i = 0; i < tracked && n > 1; ++i) {
    size_t a = rng() % n, b = rng() % n;
    while (b == a) b = rng() % n;
    pairs.push_back({a, b});
    tracked_by_node[a].push_back(i);
    tracked_by_node[b].push_back(i);
  }
  std::vector<uint64_t> found(pairs.size(), std::numeric_limits<uint64_t>::max());

  std::vector<size_t> incoming(n);
  std::vector<ProbeTarget> targets;
  Bits from_start(n), from_mid(n);
  double peer_sum = 0;
  for (size_t self = 0; self < n; ++self) {
    from_start.Clear();
    from_mid.Clear();
    size_t count_start = 0, count_mid = 0;
    uint64_t done_start = 0, done_mid = 0;
    const size_t own = t.GroupOf(self);
    for (uint64_t epoch = start;; ++epoch) {
      t.Select(self, epoch, &targets);
      ++r.selections;
      const uint64_t since_start = epoch - start;
      if (since_start == 0) {
        peer_sum += targets.size();
        r.peers_max = std::max(r.peers_max, targets.size());
        for (const ProbeTarget& p : targets) ++incoming[p.index];
      }
      for (const ProbeTarget& p : targets) {
        if (since_start < r.group_epochs && p.selection != Selection::kSample) {
          group_links[since_start].Set(own * g + t.GroupOf(p.index));
        }
        if (done_start == 0 && from_start.Set(p.index) && ++count_start == n - 1) {
          done_start = since_start + 1;
        }
        if (epoch >= mid && done_mid == 0 && from_mid.Set(p.index) && ++count_mid == n - 1) {
          done_mid = epoch - mid + 1;
        }
      }
      if (epoch >= mid) {
        for (size_t k : tracked_by_node[self]) {
          const size_t other = pairs[k].first == self ? pairs[k].second : pairs[k].first;
          // Epochs until it is probed, this one included.
          if (from_mid.Get(other)) found[k] = std::min(found[k], epoch - mid + 1);
        }
      }
      if (done_start != 0 && done_mid != 0 && since_start + 1 >= r.group_epochs) break;
    }
    r.cover_aligned = std::max(r.cover_aligned, done_start);
    r.cover_mid = std::max(r.cover_mid, done_mid);
  }
  // Windows of cross_group_cycle epochs (1: every single epoch) in which
  // every pair of groups was probed directly.
  const size_t window = static_cast<size_t>(r.cross_group_cycle);
  for (size_t e = 0; e + window <= r.group_epochs; ++e) {
    ++r.group_windows;
    bool all = true;
    for (size_t a = 0; a < g && all; ++a) {
      for (size_t b = 0; b < g && all; ++b) {
        if (a == b) continue;
        bool linked = false;
        for (size_t w = e; w < e + window && !linked; ++w) linked = group_links[w].Get(a * g + b);
        all = linked;
      }
    }
    r.epochs_all_group_pairs += all;
  }
  r.peers_mean = peer_sum / n;
  r.incoming_max = *std::max_element(incoming.begin(), incoming.end());
  std::sort(found.begin(), found.end());
  if (!found.empty()) {
    r.link_p50 = found[found.size() / 2];
    r.link_p99 = found[found.size() * 99 / 100];
    r.link_max = found.back();
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return r;
}

std::string Duration(double seconds) {
  if (seconds < 120) return absl::StrFormat("%.1f s", seconds);
  if (seconds < 7200) return absl::StrFormat("%.0f min", seconds / 60);
  if (seconds < 2 * 86400) return absl::StrFormat("%.1f h", seconds / 3600);
  return absl::StrFormat("%.1f days", seconds / 86400);
}

std::string Count(double x) {
  if (x >= 1e6) return absl::StrFormat("%.2fM", x / 1e6);
  if (x >= 1e4) return absl::StrFormat("%.0fk", x / 1e3);
  return absl::StrFormat("%.0f", x);
}

int Run() {
  const Config defaults;
  TopologyConfig topology = defaults.topology;
  topology.sample_peers = absl::GetFlag(FLAGS_sample_peers);
  const ScheduleConfig& schedule = defaults.schedule;
  // With the default 8-byte latency message, skew comes from the latency
  // probes' round trips unless it is asked for more often (docs/design.md).
  const bool skew_rides_on_latency = schedule.skew_interval >= schedule.latency_interval;
  const double per_peer_per_minute =
      60 / absl::ToDoubleSeconds(schedule.latency_interval) +
      (skew_rides_on_latency ? 0 : 60 / absl::ToDoubleSeconds(schedule.skew_interval)) +
      60 / absl::ToDoubleSeconds(schedule.bandwidth_interval);
  // A link that stops answering: the next latency probe (at most one
  // interval plus jitter away) fails after the Gloo timeout.
  const double direct_detect =
      absl::ToDoubleSeconds(schedule.latency_interval) * (1 + schedule.jitter) +
      absl::ToDoubleSeconds(defaults.gloo.timeout);
  const double rotation = absl::ToDoubleSeconds(topology.sample_rotation);
  const SeriesCount series = CountSeriesFromMetricsModule();
  const size_t per_group = absl::GetFlag(FLAGS_group_size);

  absl::PrintF(
      "Probing topology simulation (daemon/peers/topology, no sockets)\n"
      "defaults: full_mesh_max_nodes %u, sample_peers %u, sample_rotation %s, group_peers_max "
      "%u, cross_group_peers_max %u; groups of %zu nodes\n"
      "schedule: latency %s, skew %s, bandwidth %s (%.0f probes per peer per minute), jitter "
      "%.0f%%, Gloo timeout %s\n"
      "Prometheus series (from daemon/peers/peer_series, daemon/metrics/metrics): %zu per peer, "
      "%zu per node besides\n\n",
      topology.full_mesh_max_nodes, topology.sample_peers,
      absl::FormatDuration(topology.sample_rotation), topology.group_peers_max,
      topology.cross_group_peers_max, static_cast<size_t>(per_group),
      absl::FormatDuration(schedule.latency_interval), absl::FormatDuration(schedule.skew_interval),
      absl::FormatDuration(schedule.bandwidth_interval), per_peer_per_minute, schedule.jitter * 100,
      absl::FormatDuration(defaults.gloo.timeout), series.per_peer, series.per_node_fixed);

  std::vector<std::string> header = {"figure"};
  std::vector<std::vector<std::string>> rows(14);
  const char* names[] = {"peers probed per node (mean / max)",
                         "probers of a node (max)",
                         "probes per node per minute",
                         "probes per minute, whole cluster",
                         "every ordered pair measured (from a cycle start)",
                         "every ordered pair measured (from mid-cycle)",
                         "failed link, directly probed (ring/group/cross-group)",
                         "failed link between two random nodes (median / p99 / max)",
                         "failed node (ring neighbours, own group)",
                         "partition between two groups",
                         "epochs with every pair of groups probed directly",
                         "Prometheus series per node",
                         "Prometheus series, whole cluster",
                         "simulation time"};
  for (size_t i = 0; i < rows.size(); ++i) rows[i].push_back(names[i]);

  bool ok = true;
  const auto fail = [&](const std::string& what) {
    std::fprintf(stderr, "CHECK FAILED: %s\n", what.c_str());
    ok = false;
  };
  for (absl::string_view size : absl::StrSplit(absl::GetFlag(FLAGS_nodes), ',')) {
    size_t n = 0;
    if (!absl::SimpleAtoi(size, &n) || n < 2) {
      std::fprintf(stderr, "--nodes: '%s' is not a cluster size >= 2\n", std::string(size).c_str());
      return 2;
    }
    const Result r = Simulate(n, per_group, topology, absl::GetFlag(FLAGS_tracked_pairs));
    const double peers_full = n - 1;
    // Full mesh.
    header.push_back(absl::StrCat(Count(n), " full mesh"));
    rows[0].push_back(absl::StrCat(Count(peers_full), " / ", Count(peers_full)));
    rows[1].push_back(Count(peers_full));
    rows[2].push_back(Count(peers_full * per_peer_per_minute));
    rows[3].push_back(Count(peers_full * per_peer_per_minute * n));
    rows[4].push_back(absl::StrCat(
        "first probes (",
        Duration(absl::ToDoubleSeconds(schedule.latency_interval) * (1 + schedule.jitter)), ")"));
    rows[5].push_back(rows[4].back());
    rows[6].push_back(Duration(direct_detect));
    rows[7].push_back("-");
    rows[8].push_back(Duration(direct_detect));
    rows[9].push_back(Duration(direct_detect));
    rows[10].push_back("all");
    rows[11].push_back(Count(series.per_node_fixed + peers_full * series.per_peer));
    rows[12].push_back(Count((series.per_node_fixed + peers_full * series.per_peer) * n));
    rows[13].push_back("-");
    // Sampled.
    header.push_back(absl::StrCat(Count(n), r.sampled ? " sampled" : " (full mesh)"));
    rows[0].push_back(absl::StrFormat("%.1f / %zu", r.peers_mean, r.peers_max));
    rows[1].push_back(absl::StrCat(r.incoming_max));
    rows[2].push_back(Count(r.peers_mean * per_peer_per_minute));
    rows[3].push_back(Count(r.peers_mean * per_peer_per_minute * n));
    rows[4].push_back(absl::StrCat(r.cover_aligned,
                                   " epochs = ", Duration(r.cover_aligned * rotation), " (bound ",
                                   r.sample_cycle, ")"));
    rows[5].push_back(absl::StrCat(r.cover_mid, " epochs = ", Duration(r.cover_mid * rotation)));
    rows[6].push_back(Duration(direct_detect));
    const auto link = [&](uint64_t epochs) {
      // Probed during the `epochs`-th epoch: on average half-way into it.
      return Duration((epochs - 0.5) * rotation + direct_detect);
    };
    rows[7].push_back(
        absl::StrCat(link(r.link_p50), " / ", link(r.link_p99), " / ", link(r.link_max)));
    rows[8].push_back(Duration(direct_detect));
    rows[9].push_back(r.cross_group_cycle == 1
                          ? Duration(direct_detect)
                          : absl::StrCat("within ", r.cross_group_cycle, " epochs = ",
                                         Duration(r.cross_group_cycle * rotation + direct_detect)));
    rows[10].push_back(r.cross_group_cycle == 1
                           ? absl::StrCat(r.epochs_all_group_pairs, " of ", r.group_windows)
                           : absl::StrCat(r.epochs_all_group_pairs, " of ", r.group_windows,
                                          " windows of ", r.cross_group_cycle, " epochs"));
    rows[11].push_back(Count(series.per_node_fixed + r.peers_max * series.per_peer) + " (max)");
    rows[12].push_back(Count((series.per_node_fixed + r.peers_mean * series.per_peer) * n));
    rows[13].push_back(absl::StrFormat("%.1f s (%s selections)", r.seconds,
                                       Count(static_cast<double>(r.selections))));

    if (absl::GetFlag(FLAGS_check)) {
      const size_t bound =
          2 + topology.group_peers_max + topology.cross_group_peers_max + topology.sample_peers;
      if (!r.sampled) fail(absl::StrCat(n, " nodes: not sampled"));
      if (r.peers_max > bound) {
        fail(absl::StrCat(n, " nodes: ", r.peers_max, " peers per node > bound ", bound));
      }
      if (r.cover_aligned == 0 || r.cover_aligned > r.sample_cycle) {
        fail(absl::StrCat(n, " nodes: all pairs measured after ", r.cover_aligned,
                          " epochs, bound ", r.sample_cycle));
      }
      if (r.cover_mid == 0 || r.cover_mid > 2 * r.sample_cycle - 1) {
        fail(absl::StrCat(n, " nodes: from mid-cycle, all pairs after ", r.cover_mid,
                          " epochs, bound ", 2 * r.sample_cycle - 1));
      }
      if (r.group_windows == 0 || r.epochs_all_group_pairs != r.group_windows) {
        fail(absl::StrCat(n, " nodes: every pair of groups probed in only ",
                          r.epochs_all_group_pairs, " of ", r.group_windows, " windows of ",
                          r.cross_group_cycle, " epochs"));
      }
      if (r.link_max == 0 || r.link_max > 2 * r.sample_cycle - 1) {
        fail(absl::StrCat(n, " nodes: a tracked link took ", r.link_max, " epochs, bound ",
                          2 * r.sample_cycle - 1));
      }
    }
  }

  const auto print_row = [](const std::vector<std::string>& cells) {
    std::printf("| %s |\n", absl::StrJoin(cells, " | ").c_str());
  };
  print_row(header);
  std::vector<std::string> rule(header.size(), "---");
  print_row(rule);
  for (const auto& row : rows) print_row(row);
  if (absl::GetFlag(FLAGS_check)) std::printf("\nchecks: %s\n", ok ? "all passed" : "FAILED");
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace gloowatch

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return gloowatch::Run();
}
