// Three real gloowatchd processes on loopback, probing each other over real
// Gloo pairs; checked through gRPC and /metrics.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/support/daemon_process.h"
#include "tests/support/metrics_text.h"

namespace gloowatch::testing {
namespace {

class DaemonClusterTest : public ::testing::Test {
 protected:
  DaemonClusterTest() : cluster_(3, FastLoopbackYaml()) {}
  void SetUp() override {
    for (int i = 0; i < 3; ++i) cluster_.Start(i);
  }
  void Dump() {
    for (int i = 0; i < 3; ++i) {
      if (cluster_.process(i)) {
        ADD_FAILURE() << cluster_.node(i).name << " log:\n" << cluster_.process(i)->Log();
      }
    }
  }
  std::vector<std::string> PeersOf(int node) const {
    std::vector<std::string> peers;
    for (int i = 0; i < 3; ++i) {
      if (i != node) peers.push_back(cluster_.node(i).name);
    }
    return peers;
  }
  LoopbackCluster cluster_;
};

TEST_F(DaemonClusterTest, EveryDaemonMeasuresEveryPeerAndMetricsAgree) {
  if (absl::Status up = cluster_.WaitAllUp(absl::Seconds(60), FullyMeasured); !up.ok()) {
    Dump();
    FAIL() << up;
  }
  for (int i = 0; i < 3; ++i) {
    // Read the status twice around one scrape: whatever did not change in
    // between must match the scrape exactly.
    auto before = GetStatus(cluster_.grpc(i));
    auto body = HttpGet(cluster_.node(i).metrics_port, "/metrics");
    auto after = GetStatus(cluster_.grpc(i));
    ASSERT_TRUE(before.ok() && body.ok() && after.ok());
    const auto metrics = ParseMetrics(*body);
    EXPECT_EQ(FindMetric(metrics, "gloowatch_build_info", {{"node", cluster_.node(i).name}}), 1);
    for (const std::string& peer : PeersOf(i)) {
      SCOPED_TRACE(absl::StrCat(cluster_.node(i).name, " -> ", peer));
      const v1::PeerStatus& p = *FindPeer(*after, peer);
      const v1::PeerStatus& p0 = *FindPeer(*before, peer);
      const std::map<std::string, std::string> labels = {{"node", cluster_.node(i).name},
                                                         {"peer", peer}};
      EXPECT_GT(p.latency().p50_seconds(), 0);
      EXPECT_LT(p.latency().p50_seconds(), 0.05);
      EXPECT_GE(p.latency().p99_seconds(), p.latency().p50_seconds());
      EXPECT_GT(p.bandwidth().tx_bytes_per_second(), 1e6);
      EXPECT_GT(p.bandwidth().rx_bytes_per_second(), 1e6);
      EXPECT_LT(std::abs(p.clock().offset_seconds()), 0.005);
      EXPECT_GT(p.clock().error_seconds(), 0);
      EXPECT_EQ(p.failures_in_window(), 0u);
      EXPECT_FALSE(p.gloo_address().empty());

      EXPECT_EQ(FindMetric(metrics, "gloowatch_peer_up", labels), 1);
      auto metric = [&](const char* name, std::map<std::string, std::string> extra = {}) {
        extra.insert(labels.begin(), labels.end());
        return FindMetric(metrics, name, extra).value_or(-1);
      };
      if (p0.bandwidth().tx_bytes_per_second() == p.bandwidth().tx_bytes_per_second()) {
        EXPECT_DOUBLE_EQ(metric("gloowatch_peer_bandwidth_bytes_per_second", {{"direction", "tx"}}),
                         p.bandwidth().tx_bytes_per_second());
        EXPECT_DOUBLE_EQ(metric("gloowatch_peer_bandwidth_bytes_per_second", {{"direction", "rx"}}),
                         p.bandwidth().rx_bytes_per_second());
      }
      if (p0.clock().offset_seconds() == p.clock().offset_seconds()) {
        EXPECT_DOUBLE_EQ(metric("gloowatch_peer_clock_offset_seconds"), p.clock().offset_seconds());
        EXPECT_DOUBLE_EQ(metric("gloowatch_peer_clock_offset_error_seconds"),
                         p.clock().error_seconds());
      }
      if (p0.latency().p50_seconds() == p.latency().p50_seconds()) {
        EXPECT_DOUBLE_EQ(metric("gloowatch_peer_rtt_p50_seconds"), p.latency().p50_seconds());
      }
      EXPECT_GT(metric("gloowatch_peer_rtt_seconds_count"), 0);
      EXPECT_EQ(metric("gloowatch_peer_probe_failures_total", {{"reason", "timeout"}}), 0);
      // Loopback has no link speed: no ratio rather than a made-up one.
      EXPECT_FALSE(after->gloo().has_link_speed_bytes_per_second());
      EXPECT_EQ(metric("gloowatch_peer_bandwidth_link_ratio", {{"direction", "tx"}}), -1);
    }
    EXPECT_EQ(after->gloo().address(), "127.0.0.1");
    EXPECT_TRUE(after->gloo().is_loopback());
    EXPECT_EQ(after->gloo().source(), "config:address");
    EXPECT_GT(after->ephemeral_port_high(), after->ephemeral_port_low());
  }
}

TEST_F(DaemonClusterTest, KilledPeerIsReportedDownAndComesBackAfterRestart) {
  absl::Status up = cluster_.WaitAllUp(absl::Seconds(60), FullyMeasured);
  ASSERT_TRUE(up.ok()) << up;
  cluster_.Kill(2, SIGKILL);
  const absl::Time killed = absl::Now();
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE(cluster_.node(i).name);
    // Within the Gloo timeout (2 s) plus a probe interval and slack.
    ASSERT_TRUE(WaitFor(
        [&] {
          auto s = GetStatus(cluster_.grpc(i));
          return s.ok() && FindPeer(*s, "node-c")->state() == v1::PEER_STATE_DOWN;
        },
        absl::Seconds(6)))
        << "node-c not reported down";
    auto status = GetStatus(cluster_.grpc(i));
    ASSERT_TRUE(status.ok());
    const v1::PeerStatus& c = *FindPeer(*status, "node-c");
    const v1::FailureReason reason = c.last_failure().reason();
    EXPECT_TRUE(reason == v1::FAILURE_REASON_RESET || reason == v1::FAILURE_REASON_REFUSED ||
                reason == v1::FAILURE_REASON_TIMEOUT)
        << c.last_failure().ShortDebugString();
    EXPECT_GT(c.failures_in_window(), 0u);
    auto body = HttpGet(cluster_.node(i).metrics_port, "/metrics");
    ASSERT_TRUE(body.ok());
    const auto metrics = ParseMetrics(*body);
    EXPECT_EQ(FindMetric(metrics, "gloowatch_peer_up",
                         {{"node", cluster_.node(i).name}, {"peer", "node-c"}}),
              0);
  }
  EXPECT_LT(absl::Now() - killed, absl::Seconds(8));

  // The survivors keep probing each other.
  auto a_before = GetStatus(cluster_.grpc(0));
  ASSERT_TRUE(a_before.ok());
  const uint64_t ok_before = FindPeer(*a_before, "node-b")->probes_ok();
  EXPECT_TRUE(WaitFor(
      [&] {
        auto a_after = GetStatus(cluster_.grpc(0));
        return a_after.ok() && FindPeer(*a_after, "node-b")->state() == v1::PEER_STATE_UP &&
               FindPeer(*a_after, "node-b")->probes_ok() > ok_before + 2;
      },
      absl::Seconds(20)))
      << "node-a stopped probing node-b after node-c died";
  // Eventually refused: nothing listens on node-c's port.
  ASSERT_TRUE(WaitFor(
      [&] {
        auto s = GetStatus(cluster_.grpc(0));
        return s.ok() &&
               FindPeer(*s, "node-c")->last_failure().reason() == v1::FAILURE_REASON_REFUSED;
      },
      absl::Seconds(10)));

  cluster_.Start(2);
  if (absl::Status up = cluster_.WaitAllUp(absl::Seconds(60), FullyMeasured); !up.ok()) {
    Dump();
    FAIL() << "after the restart: " << up;
  }
}

// The standard gRPC health service answers SERVING for the whole server.
TEST_F(DaemonClusterTest, GrpcHealthServiceReportsServing) {
  auto channel = grpc::CreateChannel(cluster_.grpc(0), grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::ByteBuffer response;
  grpc::Status status = grpc::Status::CANCELLED;
  ASSERT_TRUE(WaitFor(
      [&] {
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
        grpc::Slice empty;  // HealthCheckRequest{service: ""} encodes to no bytes
        grpc::ByteBuffer request(&empty, 1);
        absl::Notification done;
        stub.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request,
                       &response, [&](grpc::Status s) {
                         status = s;
                         done.Notify();
                       });
        done.WaitForNotification();
        return status.ok();
      },
      absl::Seconds(10)))
      << status.error_message();
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(response.Dump(&slices).ok());
  std::string bytes;
  for (const auto& slice : slices)
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  EXPECT_EQ(bytes, std::string("\x08\x01", 2));  // status: SERVING
}

// No privilege is needed to probe: two daemons running as nobody measure
// each other.
// A ping nobody answers: the peer's transport is frozen (SIGSTOP), so its
// Gloo pairs stay connected and the kernel takes our command, but no echo
// comes. The latency probe's read times out after gloo.timeout, which breaks
// the pair: one lost latency probe, and a failure with reason timeout.
TEST(LostLatencyProbeTest, AnUnansweredPingIsALostLatencyProbeAndATimeoutFailure) {
  // Skew and bandwidth probes an hour apart, so the probe that times out is
  // a latency probe (keepalives only send).
  LoopbackCluster cluster(2,
                          "gloo:\n  address: 127.0.0.1\n  timeout: 1s\n"
                          "schedule:\n  latency_interval: 200ms\n  skew_interval: 1h\n"
                          "  bandwidth_interval: 1h\n"
                          "probe:\n  backoff_initial: 200ms\n  backoff_max: 1s\n");
  cluster.Start(0);
  cluster.Start(1);
  auto b_view = [&]() -> std::optional<v1::PeerStatus> {
    auto status = GetStatus(cluster.grpc(0));
    if (!status.ok()) return std::nullopt;
    const v1::PeerStatus* p = FindPeer(*status, "node-b");
    return p == nullptr ? std::nullopt : std::optional<v1::PeerStatus>(*p);
  };
  ASSERT_TRUE(WaitFor(
      [&] {
        const auto b = b_view();
        return b && b->state() == v1::PEER_STATE_UP && b->latency().samples_in_window() >= 20;
      },
      absl::Seconds(20)))
      << cluster.process(0)->Log();
  ASSERT_EQ(b_view()->latency().lost_probes(), 0u);

  const pid_t transport = ChildPid(cluster.process(1)->pid());
  ASSERT_GT(transport, 0);
  ASSERT_EQ(kill(transport, SIGSTOP), 0);
  const bool lost = WaitFor(
      [&] {
        const auto b = b_view();
        // The lost probe and the failure are two events: wait for both.
        return b && b->latency().lost_probes() >= 1 && b->failures_by_reason().count("timeout");
      },
      absl::Seconds(10));
  // node-b's daemon kills its silent transport after 5 s; continue it in case.
  kill(transport, SIGCONT);
  ASSERT_TRUE(lost) << cluster.process(0)->Log();
  const v1::PeerStatus b = *b_view();
  EXPECT_GE(b.latency().lost_probes_in_window(), 1u);
  ASSERT_EQ(b.failures_by_reason().count("timeout"), 1u) << b.ShortDebugString();
  EXPECT_GE(b.failures_by_reason().at("timeout"), b.latency().lost_probes());
  auto body = HttpGet(cluster.node(0).metrics_port, "/metrics");
  ASSERT_TRUE(body.ok());
  EXPECT_GE(FindMetric(ParseMetrics(*body), "gloowatch_peer_latency_probes_lost_total",
                       {{"node", "node-a"}, {"peer", "node-b"}})
                .value_or(0),
            1);
}

// Only node-b's daemon process is stopped (SIGSTOP), not its transport: the
// transport keeps answering pings, so every link to node-b stays up, yet its
// API, metrics, reloads and new pairs are dead. Its peers see it: the
// transport's replies say how long the daemon has been silent. At the default
// schedule (a latency probe every 5 s) the silence shows within one probe
// interval of reaching 4 s; after SIGCONT it is back to 0-1 s, without a
// transport restart (the daemon's watchdog does not blame its transport for
// its own pause) or a link failure.
TEST(FrozenDaemonTest, PeersSeeADaemonFrozenWhileItsTransportAnswers) {
  LoopbackCluster cluster(3, "gloo:\n  address: 127.0.0.1\n");  // default schedules
  for (int i = 0; i < 3; ++i) cluster.Start(i);
  ASSERT_TRUE(cluster.WaitAllUp(absl::Seconds(60)).ok());
  auto b_seen_by = [&](int i) -> std::optional<v1::PeerStatus> {
    auto status = GetStatus(cluster.grpc(i));
    if (!status.ok()) return std::nullopt;
    const v1::PeerStatus* p = FindPeer(*status, "node-b");
    return p == nullptr ? std::nullopt : std::optional<v1::PeerStatus>(*p);
  };
  auto silence = [&](int i) -> std::optional<double> {
    const std::optional<v1::PeerStatus> b = b_seen_by(i);
    if (!b || !b->peer_daemon().has_silent_seconds()) return std::nullopt;
    return b->peer_daemon().silent_seconds();
  };
  // Healthy: node-b's daemon ticks every second.
  for (int i : {0, 2}) {
    ASSERT_TRUE(WaitFor([&] { return silence(i).has_value(); }, absl::Seconds(20)))
        << cluster.node(i).name << " never heard of node-b's daemon";
    EXPECT_LE(*silence(i), 1.0) << cluster.node(i).name;
  }
  const pid_t b_daemon = cluster.process(1)->pid();
  const pid_t b_transport = ChildPid(b_daemon);
  ASSERT_GT(b_transport, 0);
  const uint64_t a_failures = b_seen_by(0)->probes_failed();

  ASSERT_EQ(kill(b_daemon, SIGSTOP), 0);
  const absl::Time stopped = absl::Now();
  bool seen[3] = {false, false, false};
  const bool both = WaitFor(
      [&] {
        for (int i : {0, 2}) {
          if (seen[i]) continue;
          const std::optional<double> s = silence(i);
          if (!s || *s <= 3.0) continue;
          seen[i] = true;
          std::printf("%s sees node-b's daemon silent (%.0f s) %.1f s after SIGSTOP\n",
                      cluster.node(i).name.c_str(), *s,
                      absl::ToDoubleSeconds(absl::Now() - stopped));
        }
        return seen[0] && seen[2];
      },
      absl::Seconds(30));
  // What a frozen daemon looks like from outside: its links up, its API dead.
  const std::optional<v1::PeerStatus> b = b_seen_by(0);
  const bool api_dead = !GetStatus(cluster.grpc(1), absl::Milliseconds(500)).ok();
  // Stopped well past its own heartbeat deadline for the transport (5 s),
  // which its watchdog must not hold against the transport once continued.
  absl::SleepFor(std::max(stopped + absl::Seconds(9) - absl::Now(), absl::ZeroDuration()));
  kill(b_daemon, SIGCONT);
  ASSERT_TRUE(both) << "node-a " << (seen[0] ? "saw" : "did not see") << ", node-c "
                    << (seen[2] ? "saw" : "did not see") << " node-b's daemon silent";
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->state(), v1::PEER_STATE_UP) << b->ShortDebugString();
  EXPECT_TRUE(api_dead) << "node-b's API answered while its daemon was stopped";
  auto body = HttpGet(cluster.node(0).metrics_port, "/metrics");
  ASSERT_TRUE(body.ok());
  EXPECT_GT(FindMetric(ParseMetrics(*body), "gloowatch_peer_daemon_silent_seconds",
                       {{"node", "node-a"}, {"peer", "node-b"}})
                .value_or(0),
            3);

  // Continued: 0-1 s again at the peers' next probes.
  for (int i : {0, 2}) {
    EXPECT_TRUE(WaitFor(
        [&] {
          const std::optional<double> s = silence(i);
          return s && *s <= 1.0;
        },
        absl::Seconds(20)))
        << cluster.node(i).name
        << " still sees node-b's daemon silent: " << silence(i).value_or(-1);
  }
  // Its transport ran on: not restarted, no link to it failed.
  EXPECT_EQ(ChildPid(b_daemon), b_transport);
  auto b_metrics = HttpGet(cluster.node(1).metrics_port, "/metrics");
  ASSERT_TRUE(b_metrics.ok());
  EXPECT_EQ(FindMetric(ParseMetrics(*b_metrics), "gloowatch_transport_restarts_total",
                       {{"node", "node-b"}}),
            0)
      << cluster.process(1)->Log();
  EXPECT_EQ(b_seen_by(0)->probes_failed(), a_failures);
  EXPECT_EQ(b_seen_by(0)->state(), v1::PEER_STATE_UP);
}

TEST(UnprivilegedDaemonTest, ProbesAsNobody) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to switch to the nobody user";
  LoopbackCluster cluster(2, FastLoopbackYaml());
  chmod(cluster.dir().path().c_str(), 0755);
  for (int i = 0; i < 2; ++i) chmod(cluster.config_path(i).c_str(), 0644);
  std::vector<std::unique_ptr<Process>> daemons;
  for (int i = 0; i < 2; ++i) {
    daemons.push_back(std::make_unique<Process>(
        std::vector<std::string>{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                 BinaryPath("gloowatchd"), "--config", cluster.config_path(i)},
        absl::StrCat(cluster.dir().path(), "/nobody-", i, ".log")));
  }
  auto measured = [&](int node, const std::string& peer) {
    auto s = GetStatus(cluster.grpc(node));
    return s.ok() && FullyMeasured(*FindPeer(*s, peer));
  };
  EXPECT_TRUE(
      WaitFor([&] { return measured(0, "node-b") && measured(1, "node-a"); }, absl::Seconds(30)))
      << daemons[0]->Log();
  // Really running as nobody.
  std::ifstream status(absl::StrCat("/proc/", daemons[0]->pid(), "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Uid:", 0) == 0) {
      EXPECT_NE(line.find("65534"), std::string::npos) << line;
    }
  }
}

}  // namespace
}  // namespace gloowatch::testing
