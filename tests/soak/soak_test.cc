// Endurance: four daemons on loopback probing each other on short intervals
// for GLOOWATCH_SOAK_SECONDS (default 600). Once every link is up, no probe may
// fail on these healthy links, and memory, threads and file descriptors must
// stay flat. (Before that a probe may rightly be refused: the daemons start
// one after another and a peer's port may not be listening yet.)
#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/support/daemon_process.h"
#include "tests/support/metrics_text.h"

namespace gloowatch::testing {
namespace {

constexpr char kSchedule[] = R"(gloo:
  address: 127.0.0.1
  timeout: 5s
schedule:
  latency_interval: 200ms
  skew_interval: 1s
  bandwidth_interval: 5s
  bandwidth_budget: 1
probe:
  bandwidth_bytes: 16MiB
  bandwidth_message_bytes: 4MiB
)";

// The daemon plus its transport process.
ProcessUsage Measure(pid_t daemon) {
  ProcessUsage u = UsageOf(daemon);
  if (const pid_t transport = ChildPid(daemon); transport > 0) {
    const ProcessUsage t = UsageOf(transport);
    u.rss_mib += t.rss_mib;
    u.fds += t.fds;
    u.threads += t.threads;
  }
  return u;
}

std::map<std::string, double> FailureSeries(int metrics_port) {
  std::map<std::string, double> failures;
  auto body = HttpGet(metrics_port, "/metrics");
  EXPECT_TRUE(body.ok()) << body.status();
  if (!body.ok()) return failures;
  for (const auto& [series, value] : ParseMetrics(*body)) {
    if (series.rfind("gloowatch_peer_probe_failures_total", 0) == 0) failures[series] = value;
  }
  return failures;
}

TEST(SoakTest, HealthyLinksNeverFailAndResourcesStayFlat) {
  int seconds = 600;
  if (const char* env = std::getenv("GLOOWATCH_SOAK_SECONDS"))
    (void)absl::SimpleAtoi(env, &seconds);
  LoopbackCluster cluster(4, kSchedule);
  for (int i = 0; i < 4; ++i) cluster.Start(i);
  absl::Status up = cluster.WaitAllUp(absl::Seconds(30), [](const v1::PeerStatus& p) {
    return PeerUp(p) && p.bandwidth().has_rx_bytes_per_second();
  });
  ASSERT_TRUE(up.ok()) << up;
  // Failures so far, per node: peer -> probes_failed, and the failure series.
  std::vector<std::map<std::string, uint64_t>> failed_at_start(4);
  std::vector<std::map<std::string, double>> failure_series_at_start(4);
  for (int i = 0; i < 4; ++i) {
    auto s = GetStatus(cluster.grpc(i));
    ASSERT_TRUE(s.ok());
    for (const auto& p : s->peers()) failed_at_start[i][p.name()] = p.probes_failed();
    failure_series_at_start[i] = FailureSeries(cluster.node(i).metrics_port);
  }
  // Warm-up: allocator pools, gRPC and the first transfers settle.
  absl::SleepFor(absl::Seconds(std::min(60, seconds / 5)));
  std::vector<ProcessUsage> start;
  for (int i = 0; i < 4; ++i) start.push_back(Measure(cluster.process(i)->pid()));
  const absl::Time end = absl::Now() + absl::Seconds(seconds);
  while (absl::Now() < end) {
    absl::SleepFor(std::min(absl::Seconds(10), end - absl::Now()));
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(cluster.process(i)->running());
  }
  std::cout << "soak: " << seconds << " s after warm-up, 4 daemons, 3 peers each\n";
  for (int i = 0; i < 4; ++i) {
    SCOPED_TRACE(cluster.node(i).name);
    const ProcessUsage now = Measure(cluster.process(i)->pid());
    auto status = GetStatus(cluster.grpc(i));
    ASSERT_TRUE(status.ok());
    uint64_t probes = 0;
    for (const auto& p : status->peers()) {
      EXPECT_EQ(p.state(), v1::PEER_STATE_UP) << p.name();
      EXPECT_EQ(p.probes_failed(), failed_at_start[i][p.name()])
          << p.name() << ": " << p.last_failure().ShortDebugString();
      probes += p.probes_ok();
    }
    std::cout << absl::StrCat("  ", cluster.node(i).name, ": probes ", probes, ", RSS ",
                              start[i].rss_mib, " -> ", now.rss_mib, " MiB, fds ", start[i].fds,
                              " -> ", now.fds, ", threads ", start[i].threads, " -> ", now.threads,
                              "\n");
    EXPECT_GT(probes, static_cast<uint64_t>(seconds) * 3);
    EXPECT_LT(now.rss_mib, start[i].rss_mib * 1.15 + 4) << "memory grew";
    EXPECT_LE(now.fds, start[i].fds + 4) << "file descriptors grew";
    EXPECT_LE(now.threads, start[i].threads + 4) << "threads grew";
    for (const auto& [series, value] : FailureSeries(cluster.node(i).metrics_port)) {
      EXPECT_EQ(value, failure_series_at_start[i][series]) << series;
    }
  }
}

}  // namespace
}  // namespace gloowatch::testing
