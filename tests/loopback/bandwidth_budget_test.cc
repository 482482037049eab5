// The bandwidth budget with real daemons on loopback: at an aggressive
// schedule (a transfer wanted every second to every peer, far more than 5 %
// of the link's time) every node's transfers, its own and those it serves,
// stay within `schedule.bandwidth_budget`, and transfers still happen.
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/support/daemon_process.h"
#include "tests/support/metrics_text.h"

namespace gloowatch::testing {
namespace {

constexpr int kNodes = 3;
constexpr double kBudget = 0.05;
constexpr absl::Duration kWindow = absl::Seconds(20);
// Above the budget: at each end of the window one transfer may straddle the
// boundary and the counter lags by up to one heartbeat (1 s). With transfers
// of at most ~100 ms on loopback that is (2 x 0.1 s + 0.05 x 2 s) / 20 s =
// 0.015. The window is timed by the daemons' own clock (GetStatus's now).
constexpr double kTolerance = 0.015;

constexpr char kYaml[] =
    "gloo:\n  address: 127.0.0.1\n  timeout: 2s\n"
    "schedule:\n  latency_interval: 1s\n  skew_interval: 2s\n  bandwidth_interval: 1s\n"
    "  bandwidth_budget: 0.05\n"
    "probe:\n  bandwidth_bytes: 64MiB\n  bandwidth_message_bytes: 4MiB\n"
    "  backoff_initial: 200ms\n  backoff_max: 1s\n";

struct Reading {
  absl::Time at;  // the daemon's own clock (GetStatus's now), not the test's
  double transfer_seconds = 0;
  double bandwidth_probes = 0;
};

// The daemon's `now`, or nullopt.
std::optional<absl::Time> DaemonNow(const LoopbackCluster& cluster, int node) {
  absl::StatusOr<v1::NodeStatus> s = GetStatus(cluster.grpc(node));
  if (!s.ok()) return std::nullopt;
  return absl::FromUnixSeconds(s->now().seconds()) + absl::Nanoseconds(s->now().nanos());
}

// The transfer counters, with the daemon's time read before them at the
// start of a window (`time_first`) and after them at its end: the counters'
// difference then covers no transfer time outside the window, so a share
// above the budget is the daemon's, not the reads' timing.
std::optional<Reading> Read(const LoopbackCluster& cluster, int node, bool time_first) {
  Reading r;
  if (time_first) {
    std::optional<absl::Time> now = DaemonNow(cluster, node);
    if (!now) return std::nullopt;
    r.at = *now;
  }
  auto body = HttpGet(cluster.node(node).metrics_port, "/metrics");
  if (!body.ok()) return std::nullopt;
  const auto metrics = ParseMetrics(*body);
  auto seconds = FindMetric(metrics, "gloowatch_bandwidth_probe_seconds_total", {});
  if (!seconds) return std::nullopt;
  r.transfer_seconds = *seconds;
  for (int peer = 0; peer < kNodes; ++peer) {
    if (peer == node) continue;
    r.bandwidth_probes += FindMetric(metrics, "gloowatch_peer_probes_total",
                                     {{"peer", cluster.node(peer).name}, {"kind", "bandwidth"}})
                              .value_or(0);
  }
  if (!time_first) {
    std::optional<absl::Time> now = DaemonNow(cluster, node);
    if (!now) return std::nullopt;
    r.at = *now;
  }
  return r;
}

TEST(BandwidthBudgetTest, LinkTimeInTransfersStaysWithinTheBudget) {
  LoopbackCluster cluster(kNodes, kYaml);
  for (int i = 0; i < kNodes; ++i) cluster.Start(i);
  // Warm-up: every node has done a transfer.
  for (int i = 0; i < kNodes; ++i) {
    ASSERT_TRUE(WaitFor(
        [&] {
          auto r = Read(cluster, i, /*time_first=*/true);
          return r && r->transfer_seconds > 0;
        },
        absl::Seconds(30)))
        << cluster.node(i).name << " log:\n"
        << cluster.process(i)->Log();
  }
  Reading before[kNodes];
  for (int i = 0; i < kNodes; ++i) {
    auto r = Read(cluster, i, /*time_first=*/true);
    ASSERT_TRUE(r.has_value());
    before[i] = *r;
  }
  absl::SleepFor(kWindow);  // the window to measure over, not a wait for an event
  double completed = 0;
  for (int i = 0; i < kNodes; ++i) {
    auto after = Read(cluster, i, /*time_first=*/false);
    ASSERT_TRUE(after.has_value());
    const double elapsed = absl::ToDoubleSeconds(after->at - before[i].at);
    const double share = (after->transfer_seconds - before[i].transfer_seconds) / elapsed;
    const double probes = after->bandwidth_probes - before[i].bandwidth_probes;
    completed += probes;
    std::printf("%s: %.2f%% of %.1f s in transfers (budget %.0f%%), %.0f bandwidth probes\n",
                cluster.node(i).name.c_str(), share * 100, elapsed, kBudget * 100, probes);
    EXPECT_LE(share, kBudget + kTolerance) << cluster.node(i).name;
    // Demand is several times the budget, so the budget is mostly used.
    EXPECT_GE(share, kBudget / 10) << cluster.node(i).name;
    // Transfers still happen: each node completed a probe (tx and rx).
    EXPECT_GE(probes, 1) << cluster.node(i).name;
  }
  EXPECT_GE(completed, kNodes);
}

}  // namespace
}  // namespace gloowatch::testing
