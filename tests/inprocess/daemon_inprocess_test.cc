// Whole daemons and their transports as threads of this test process
// (InProcessDaemons, ThreadLauncher): they probe each other over real Gloo
// pairs on loopback and report it, and a stopped daemon leaves no transport
// thread and no file descriptor behind.
#include <dirent.h>

#include <algorithm>
#include <optional>
#include <string>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/inprocess/inprocess_cluster.h"
#include "tests/support/daemon_process.h"
#include "tests/support/metrics_text.h"

namespace gloowatch::inprocess {
namespace {

// Every configured peer is up and has answered latency probes.
bool AllPeersMeasured(const v1::NodeStatus& status) {
  if (status.peers_size() == 0) return false;
  for (const v1::PeerStatus& peer : status.peers()) {
    if (peer.state() != v1::PEER_STATE_UP || peer.latency().samples_in_window() == 0) return false;
  }
  return true;
}

int OpenFds() {
  int n = 0;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') ++n;
  }
  closedir(dir);
  return n - 1;  // the directory's own
}

TEST(DaemonInProcessTest, DaemonsWithThreadTransportsProbeEachOther) {
  absl::StatusOr<std::unique_ptr<InProcessDaemons>> cluster = InProcessDaemons::Spawn(3);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  EXPECT_EQ((*cluster)->transports_alive(), 3);
  for (int i = 0; i < 3; ++i) {
    const v1::NodeStatus status = (*cluster)->AwaitStatus(i, AllPeersMeasured);
    ASSERT_TRUE(AllPeersMeasured(status)) << "node-" << i << ": " << status.DebugString();
    ASSERT_EQ(status.peers_size(), 2);
    for (const v1::PeerStatus& peer : status.peers()) {
      EXPECT_GT(peer.probes_ok(), 0u) << peer.name();
      EXPECT_EQ(peer.gloo_address().rfind("127.0.0.1:", 0), 0u) << peer.gloo_address();
    }
    EXPECT_TRUE((*cluster)->daemon(i).Healthy());
  }

  // The same figures on /metrics; a transport thread has no process series
  // of its own (its threads are the test process's).
  absl::StatusOr<std::string> text = testing::HttpGet((*cluster)->metrics_port(0), "/metrics");
  ASSERT_TRUE(text.ok()) << text.status();
  const std::map<std::string, double> metrics = testing::ParseMetrics(*text);
  EXPECT_EQ(testing::FindMetric(metrics, "gloowatch_peer_up", {{"peer", "node-1"}}), 1.0);
  EXPECT_EQ(testing::FindMetric(metrics, "gloowatch_peer_up", {{"peer", "node-2"}}), 1.0);
  EXPECT_EQ(text->find("process=\"transport\""), std::string::npos);
}

// The daemon's liveness, end to end on simulated time: Daemon::Tick ->
// DaemonTick through the supervisor's writer -> the transport's responders'
// replies -> node-0's prober -> its tracker. Nobody ticks node-1's daemon at
// first (as if frozen): node-0 sees it silent while its transport answers.
// Then it ticks every simulated second: 0-1 s again.
TEST(DaemonInProcessTest, APeerSeesADaemonThatDoesNotTickAndAgainOnceItDoes) {
  absl::StatusOr<std::unique_ptr<InProcessDaemons>> cluster = InProcessDaemons::Spawn(2);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  InProcessDaemons& c = **cluster;
  auto node1 = [](const v1::NodeStatus& s) -> const v1::PeerStatus* {
    for (const v1::PeerStatus& p : s.peers()) {
      if (p.name() == "node-1") return &p;
    }
    return nullptr;
  };
  auto silence = [&](const v1::NodeStatus& s) -> std::optional<double> {
    const v1::PeerStatus* p = node1(s);
    if (p == nullptr || !p->peer_daemon().has_silent_seconds()) return std::nullopt;
    return p->peer_daemon().silent_seconds();
  };
  v1::NodeStatus status = c.AwaitStatus(0, [&](const v1::NodeStatus& s) {
    const std::optional<double> silent = silence(s);
    return silent && *silent > 3;
  });
  // (Whether the link is up is the loopback FrozenDaemonTest's to check: on
  // simulated time a bandwidth probe gives no figure.)
  ASSERT_TRUE(silence(status).has_value()) << status.DebugString();
  EXPECT_GT(*silence(status), 3) << status.DebugString();

  // Ticking again, once every simulated second at most.
  bool back = false;
  for (int step = 0; step < 200 && !back; ++step) {
    c.daemon(1).Tick();
    // The tick travels through two threads in real time before time moves on.
    absl::SleepFor(absl::Milliseconds(50));
    status = c.daemon(0).Status();
    const std::optional<double> silent = silence(status);
    back = silent && *silent <= 1;
    const std::optional<absl::Duration> wake = c.clock().AwaitPendingDeadline(kRealTimeout);
    ASSERT_TRUE(wake.has_value());
    c.clock().AdvanceTo(std::min(*wake, c.clock().Monotonic() + absl::Seconds(1)));
  }
  EXPECT_TRUE(back) << status.DebugString();
}

TEST(DaemonInProcessTest, StoppingADaemonEndsItsTransportThreadAndFreesIt) {
  // gRPC and Gloo keep some process-wide descriptors once used: a first
  // cluster sets them up, then the count is taken.
  {
    absl::StatusOr<std::unique_ptr<InProcessDaemons>> warm = InProcessDaemons::Spawn(2);
    ASSERT_TRUE(warm.ok()) << warm.status();
    (*warm)->AwaitStatus(0, AllPeersMeasured);
  }
  const int fds_before = OpenFds();

  absl::StatusOr<std::unique_ptr<InProcessDaemons>> cluster = InProcessDaemons::Spawn(2);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(AllPeersMeasured((*cluster)->AwaitStatus(i, AllPeersMeasured)));
  }
  ASSERT_EQ((*cluster)->transports_alive(), 2);

  // Stopped mid-session: its prober waits for the next probe, its responder
  // serves node-1's pair. Both end, bounded by the Gloo timeout (2 s).
  const absl::Time start = absl::Now();
  (*cluster)->daemon(0).Shutdown(absl::Seconds(1));
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  EXPECT_EQ((*cluster)->transports_alive(), 1);

  (*cluster)->daemon(1).Shutdown(absl::Seconds(1));
  EXPECT_EQ((*cluster)->transports_alive(), 0);
  cluster->reset();
  EXPECT_EQ(OpenFds(), fds_before);
}

}  // namespace
}  // namespace gloowatch::inprocess
