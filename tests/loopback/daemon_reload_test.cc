// SIGHUP re-reads the config: peers come and go and schedules change without
// dropping healthy pairs; a bad new config is refused and the old one kept.
#include <signal.h>

#include <fstream>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/support/daemon_process.h"
#include "tests/support/free_port.h"
#include "tests/support/metrics_text.h"

namespace gloowatch::testing {
namespace {

std::vector<std::string> PeerNames(const v1::NodeStatus& status) {
  std::vector<std::string> names;
  for (const auto& p : status.peers()) names.push_back(p.name());
  return names;
}

bool Up(const v1::NodeStatus& status, const std::string& peer) {
  const v1::PeerStatus* p = FindPeer(status, peer);
  return p != nullptr && p->state() == v1::PEER_STATE_UP;
}

double LatencyProbes(int metrics_port, const std::string& peer,
                     const std::string& node = "node-a") {
  auto body = HttpGet(metrics_port, "/metrics");
  if (!body.ok()) return -1;
  return FindMetric(ParseMetrics(*body), "gloowatch_peer_probes_total",
                    {{"node", node}, {"peer", peer}, {"kind", "latency"}})
      .value_or(-1);
}

class DaemonReloadTest : public ::testing::Test {
 protected:
  DaemonReloadTest() : cluster_(4, FastLoopbackYaml()) {}
  void WriteConfigA(const std::vector<int>& peers, const std::string& schedule) {
    std::vector<NodeSpec> specs = {cluster_.node(0)};
    for (int i : peers) specs.push_back(cluster_.node(i));
    std::ofstream(cluster_.config_path(0)) << LoopbackConfig(cluster_.node(0), specs, schedule);
  }
  v1::NodeStatus StatusA() {
    auto s = GetStatus(cluster_.grpc(0));
    return s.ok() ? *s : v1::NodeStatus();
  }
  LoopbackCluster cluster_;
};

TEST_F(DaemonReloadTest, PeersAndSchedulesChangeWithoutDroppingHealthyPairs) {
  WriteConfigA({1, 2}, FastLoopbackYaml());
  for (int i = 0; i < 4; ++i) cluster_.Start(i);
  ASSERT_TRUE(WaitFor(
      [&] {
        const v1::NodeStatus s = StatusA();
        return Up(s, "node-b") && Up(s, "node-c");
      },
      absl::Seconds(20)))
      << cluster_.process(0)->Log();
  const v1::NodeStatus before = StatusA();
  const std::string b_up_since = FindPeer(before, "node-b")->up_since().ShortDebugString();
  const uint64_t b_failures = FindPeer(before, "node-b")->probes_failed();
  auto metrics_before = HttpGet(cluster_.node(0).metrics_port, "/metrics");
  ASSERT_TRUE(metrics_before.ok());
  EXPECT_EQ(FindMetric(ParseMetrics(*metrics_before), "gloowatch_threshold_latency_seconds",
                       {{"node", "node-a"}}),
            0.002);
  EXPECT_TRUE(before.labels().empty());
  EXPECT_TRUE(FindPeer(before, "node-b")->labels().empty());
  // Drop node-c, add node-d, probe latency faster.
  std::string faster = FastLoopbackYaml();
  faster.replace(faster.find("latency_interval: 500ms"), 23, "latency_interval: 100ms");
  faster += "thresholds:\n  latency: 5ms\ngroup: rack-x\nlabels:\n  rack: r7\n  zone: z1\n";
  {
    // Topology labels for this node and for its entry of node-b.
    std::string yaml =
        LoopbackConfig(cluster_.node(0), {cluster_.node(1), cluster_.node(3)}, faster);
    const std::string b_entry = "  - name: node-b\n";
    yaml.insert(yaml.find(b_entry) + b_entry.size(), "    labels: {rack: r3}\n");
    std::ofstream(cluster_.config_path(0)) << yaml;
  }
  cluster_.process(0)->Signal(SIGHUP);
  ASSERT_TRUE(WaitFor(
      [&] {
        const v1::NodeStatus s = StatusA();
        return PeerNames(s) == std::vector<std::string>{"node-b", "node-d"} && Up(s, "node-d");
      },
      absl::Seconds(20)))
      << cluster_.process(0)->Log();
  const v1::NodeStatus after = StatusA();
  // The pair to node-b was never dropped.
  EXPECT_TRUE(Up(after, "node-b"));
  EXPECT_EQ(FindPeer(after, "node-b")->up_since().ShortDebugString(), b_up_since);
  EXPECT_EQ(FindPeer(after, "node-b")->probes_failed(), b_failures);
  // node-c's series are gone from node-a's metrics.
  auto body = HttpGet(cluster_.node(0).metrics_port, "/metrics");
  ASSERT_TRUE(body.ok());
  EXPECT_EQ(body->find("peer=\"node-c\""), std::string::npos);
  // The exported thresholds follow the reload (health --prometheus judges by them).
  EXPECT_EQ(
      FindMetric(ParseMetrics(*body), "gloowatch_threshold_latency_seconds", {{"node", "node-a"}}),
      0.005);
  // So does the group on gloowatch_build_info (health --prometheus places the
  // node in its rack by it): one series, the new group's.
  EXPECT_EQ(FindMetric(ParseMetrics(*body), "gloowatch_build_info",
                       {{"node", "node-a"}, {"group", "rack-x"}}),
            1);
  size_t infos = 0;
  for (size_t at = body->find("\ngloowatch_build_info{"); at != std::string::npos;
       at = body->find("\ngloowatch_build_info{", at + 1)) {
    ++infos;
  }
  EXPECT_EQ(infos, 1u) << *body;
  EXPECT_EQ(after.topology().group(), "rack-x");
  // The topology labels follow the reload too: on gloowatch_build_info (the
  // one series), in GetStatus for the node and for the peer's entry.
  EXPECT_EQ(FindMetric(ParseMetrics(*body), "gloowatch_build_info",
                       {{"node", "node-a"}, {"group", "rack-x"}, {"rack", "r7"}, {"zone", "z1"}}),
            1)
      << *body;
  EXPECT_NE(body->find("gloowatch_build_info{gloo_version="), std::string::npos) << *body;
  EXPECT_EQ(after.labels().size(), 2u);
  EXPECT_EQ(after.labels().at("rack"), "r7");
  EXPECT_EQ(after.labels().at("zone"), "z1");
  ASSERT_NE(FindPeer(after, "node-b"), nullptr);
  EXPECT_EQ(FindPeer(after, "node-b")->labels().size(), 1u);
  EXPECT_EQ(FindPeer(after, "node-b")->labels().at("rack"), "r3");
  EXPECT_TRUE(FindPeer(after, "node-d")->labels().empty());
  // Not on the per-peer series (one series per link would multiply).
  EXPECT_EQ(body->find("rack=\"r7\",peer"), std::string::npos);
  EXPECT_EQ(body->find("peer=\"node-b\",rack"), std::string::npos);
  // 100 ms instead of 500 ms reached the transport: over the same stretch
  // node-a now probes node-b about 5 times as often as node-b, still at
  // 500 ms, probes node-a (at the old interval, as often). Counted, not
  // timed; the prober's side of this is checked exactly, on simulated time,
  // by peer_prober_inprocess_test.
  const int a_port = cluster_.node(0).metrics_port, b_port = cluster_.node(1).metrics_port;
  const double a_start = LatencyProbes(a_port, "node-b");
  const double b_start = LatencyProbes(b_port, "node-a", "node-b");
  double a_probes = 0;
  ASSERT_TRUE(WaitFor(
      [&] {
        a_probes = LatencyProbes(a_port, "node-b") - a_start;
        return a_probes >= 30;
      },
      absl::Seconds(60)));
  const double b_probes = LatencyProbes(b_port, "node-a", "node-b") - b_start;
  std::cout << "latency probes over the same stretch: node-a -> node-b " << a_probes
            << ", node-b -> node-a " << b_probes << "\n";
  EXPECT_GT(b_probes, 0);
  EXPECT_GE(a_probes, 2.5 * b_probes) << "node-a's new 100 ms latency interval not in force";
  // Jitter (p99 - p50 of the window) is exported with the percentiles, in
  // GetStatus and as a series; no latency probe of a healthy loopback link
  // is lost, and the counter exists at 0.
  const v1::NodeStatus latest = StatusA();
  const v1::LatencyFigures& b_latency = FindPeer(latest, "node-b")->latency();
  ASSERT_TRUE(b_latency.has_jitter_seconds());
  EXPECT_GE(b_latency.jitter_seconds(), 0);
  EXPECT_LE(b_latency.jitter_seconds(), b_latency.p99_seconds());
  EXPECT_EQ(b_latency.lost_probes(), 0u);
  auto metrics_latest = HttpGet(cluster_.node(0).metrics_port, "/metrics");
  ASSERT_TRUE(metrics_latest.ok());
  const auto jitter = FindMetric(ParseMetrics(*metrics_latest), "gloowatch_peer_rtt_jitter_seconds",
                                 {{"node", "node-a"}, {"peer", "node-b"}});
  ASSERT_TRUE(jitter.has_value()) << *metrics_latest;
  EXPECT_GE(*jitter, 0);
  EXPECT_EQ(FindMetric(ParseMetrics(*metrics_latest), "gloowatch_peer_latency_probes_lost_total",
                       {{"node", "node-a"}, {"peer", "node-b"}}),
            0);
}

TEST_F(DaemonReloadTest, InvalidOrRestartOnlyChangesAreRefusedAndTheOldConfigKept) {
  WriteConfigA({1}, FastLoopbackYaml());
  cluster_.Start(0);
  cluster_.Start(1);
  ASSERT_TRUE(WaitFor([&] { return Up(StatusA(), "node-b"); }, absl::Seconds(20)));

  std::ofstream(cluster_.config_path(0)) << "node: node-a\nlantency: 1\n";
  cluster_.process(0)->Signal(SIGHUP);
  ASSERT_TRUE(WaitFor(
      [&] { return cluster_.process(0)->Log().find("reload refused") != std::string::npos; },
      absl::Seconds(5)));
  EXPECT_NE(cluster_.process(0)->Log().find("lantency"), std::string::npos);

  NodeSpec moved = cluster_.node(0);
  moved.grpc_port = FreePort();
  std::ofstream(cluster_.config_path(0))
      << LoopbackConfig(moved, {cluster_.node(1)}, FastLoopbackYaml());
  cluster_.process(0)->Signal(SIGHUP);
  ASSERT_TRUE(WaitFor(
      [&] { return cluster_.process(0)->Log().find("needs a restart") != std::string::npos; },
      absl::Seconds(5)));
  EXPECT_NE(cluster_.process(0)->Log().find("grpc_listen"), std::string::npos);

  // Still serving on the old port, still probing node-b.
  EXPECT_TRUE(cluster_.process(0)->running());
  const v1::NodeStatus s = StatusA();
  EXPECT_EQ(PeerNames(s), std::vector<std::string>{"node-b"});
  EXPECT_TRUE(Up(s, "node-b"));
}

}  // namespace
}  // namespace gloowatch::testing
