// HostLoad on a stand-in /proc (written by the test) and a SimulatedClock: the
// windowed scheduling delay, steal and pressure, threads that come and go.
#include "daemon/metrics/host_load.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/proto_time.h"
#include "gtest/gtest.h"
#include "tests/support/simulated_clock.h"
#include "tests/support/temp_dir.h"

namespace gloowatch {
namespace {

constexpr pid_t kDaemon = 100, kTransport = 200;

class FakeProc {
 public:
  void Write(const std::string& rel, const std::string& text) const {
    const std::filesystem::path p = std::filesystem::path(dir_.path()) / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  // A thread's /proc/<pid>/task/<tid>/schedstat.
  void Thread(pid_t pid, pid_t tid, uint64_t delay_ns, uint64_t runs) const {
    Write(absl::StrCat(pid, "/task/", tid, "/schedstat"),
          absl::StrCat("123456 ", delay_ns, " ", runs, "\n"));
  }
  void Remove(const std::string& rel) const {
    std::filesystem::remove_all(std::filesystem::path(dir_.path()) / rel);
  }
  void Cpu(uint64_t busy, uint64_t steal) const {
    // user nice system idle iowait irq softirq steal guest guest_nice
    Write("stat", absl::StrCat("cpu  ", busy, " 0 0 1000 0 0 0 ", steal,
                               " 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\nbtime 1700000000\n"));
  }
  const std::string& root() const { return dir_.path(); }

 private:
  testing::TempDir dir_;
};

TEST(HostLoadParseTest, ReadsTheKernelsFormats) {
  std::optional<ThreadSchedStat> s = ParseSchedStat("5000 2500000 12\n");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->run_delay_ns, 2500000u);
  EXPECT_EQ(s->runs, 12u);
  EXPECT_FALSE(ParseSchedStat("5000 x 12").has_value());
  EXPECT_FALSE(ParseSchedStat("").has_value());

  std::optional<CpuTimes> c = ParseProcStatCpu("cpu  10 1 2 80 3 0 1 3 7 0\ncpu0 1\n");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->total, 100u);  // user .. steal; guest is inside user
  EXPECT_EQ(c->steal, 3u);
  EXPECT_FALSE(ParseProcStatCpu("cpu0 1 2 3 4 5 6 7 8\n").has_value());
  EXPECT_FALSE(ParseProcStatCpu("cpu  1 2 3\n").has_value());

  std::optional<double> p = ParseCpuPressureSome10(
      "some avg10=12.50 avg60=2.42 avg300=4.52 total=514\nfull avg10=0.00\n");
  ASSERT_TRUE(p.has_value());
  EXPECT_DOUBLE_EQ(*p, 0.125);
  EXPECT_FALSE(ParseCpuPressureSome10("some avg10=250 avg60=1").has_value());
  EXPECT_FALSE(ParseCpuPressureSome10("full avg10=1.00").has_value());
}

TEST(HostLoadTest, MeanSchedulingDelayOfBothProcessesOverTheWindow) {
  FakeProc proc;
  SimulatedClock clock;
  HostLoad load(proc.root(), kDaemon, &clock, absl::Seconds(10), absl::Seconds(1));
  load.SetTransportPid(kTransport);
  proc.Thread(kDaemon, kDaemon, 1000000, 10);
  proc.Thread(kTransport, kTransport, 0, 0);
  proc.Cpu(100, 0);
  load.Sample();
  EXPECT_FALSE(load.Figures().has_scheduling_delay_seconds()) << "one sample spans nothing";

  // 1 s later: the daemon's thread ran 10 more times, waiting 20 ms in all;
  // the transport's 30 times, waiting 100 ms: 120 ms over 40 runs.
  clock.Advance(absl::Seconds(1));
  proc.Thread(kDaemon, kDaemon, 21000000, 20);
  proc.Thread(kTransport, kTransport, 100000000, 30);
  proc.Cpu(190, 10);
  load.Sample();
  v1::HostLoad f = load.Figures();
  ASSERT_TRUE(f.has_scheduling_delay_seconds());
  EXPECT_NEAR(f.scheduling_delay_seconds(), 0.003, 1e-12);
  ASSERT_TRUE(f.has_cpu_steal_ratio());
  EXPECT_NEAR(f.cpu_steal_ratio(), 0.1, 1e-12);  // 10 of 100 ticks
  EXPECT_DOUBLE_EQ(f.window_seconds(), 1);
  EXPECT_FALSE(f.has_cpu_pressure_ratio()) << "no /proc/pressure/cpu here";

  // A thread that starts brings its history as a baseline, not as delay; one
  // that ended just stops counting.
  clock.Advance(absl::Seconds(1));
  proc.Remove(absl::StrCat(kTransport, "/task/", kTransport));
  proc.Thread(kTransport, kTransport + 1, 999000000000, 5);
  proc.Thread(kDaemon, kDaemon, 21000000 + 40000000, 40);  // 40 ms over 20 runs
  proc.Write("pressure/cpu", "some avg10=40.00 avg60=1 avg300=1 total=1\n");
  load.Sample();
  f = load.Figures();
  EXPECT_NEAR(f.scheduling_delay_seconds(), 0.160 / 60, 1e-12);
  EXPECT_NEAR(f.cpu_pressure_ratio(), 0.4, 1e-12);

  // Ten quiet seconds later the busy ones have left the window.
  for (int i = 0; i < 11; ++i) {
    clock.Advance(absl::Seconds(1));
    proc.Thread(kDaemon, kDaemon, 61000000 + 10000 * (i + 1), 40 + 10 * (i + 1));
    load.Sample();
  }
  f = load.Figures();
  EXPECT_NEAR(f.scheduling_delay_seconds(), 1e-6, 1e-12);  // 10 us over 10 runs
  EXPECT_DOUBLE_EQ(f.window_seconds(), 10);
}

// The main threads every second, over the last 3 s: a starved host shows
// there at once, while its many healthy runs before keep the window's mean
// low.
TEST(HostLoadTest, RecentDelayOfTheMainThreadsSeesAnOverloadStart) {
  FakeProc proc;
  SimulatedClock clock;
  HostLoad load(proc.root(), kDaemon, &clock, absl::Seconds(10), absl::Seconds(5));
  load.SetTransportPid(kTransport);
  uint64_t main_delay = 0, main_runs = 0, other_runs = 0;
  auto second = [&](uint64_t delay_per_run_ns, uint64_t runs, uint64_t other) {
    clock.Advance(absl::Seconds(1));
    main_delay += delay_per_run_ns * runs;
    main_runs += runs;
    other_runs += other;
    proc.Thread(kDaemon, kDaemon, main_delay, main_runs);
    proc.Thread(kTransport, kTransport, 0, 0);
    proc.Thread(kTransport, kTransport + 1, 10000 * other_runs, other_runs);  // 10 us a run
    load.Sample();
  };
  for (int i = 0; i < 6; ++i) second(20000, 2, 500);  // healthy: 20 us a run
  v1::HostLoad f = load.Figures();
  ASSERT_TRUE(f.has_recent_scheduling_delay_seconds());
  EXPECT_NEAR(f.recent_scheduling_delay_seconds(), 20e-6, 1e-12);
  EXPECT_DOUBLE_EQ(f.recent_window_seconds(), 3);
  // Starved: 90 ms a run, few runs.
  second(90000000, 1, 20);
  second(90000000, 1, 20);
  f = load.Figures();
  // 2 runs at 20 us and 2 at 90 ms over the last 3 s.
  EXPECT_NEAR(f.recent_scheduling_delay_seconds(), (2 * 20e-6 + 2 * 0.09) / 4, 1e-12);
  EXPECT_LT(f.scheduling_delay_seconds(), 0.001) << "every thread's mean has not moved yet";
  // The threshold's default (10 ms) was crossed at the last read: what
  // peers measure until then was slowed by this host.
  ASSERT_TRUE(f.has_starved_until());
  EXPECT_EQ(FromProtoTimestamp(f.starved_until()), clock.Now());
  const absl::Time starved = clock.Now();
  // Then fine again: gone from the recent figure within its window; the
  // last starved read stays.
  for (int i = 0; i < 3; ++i) second(20000, 2, 500);
  f = load.Figures();
  EXPECT_NEAR(f.recent_scheduling_delay_seconds(), 20e-6, 1e-12);
  EXPECT_EQ(FromProtoTimestamp(f.starved_until()), starved + absl::Seconds(2))
      << "the two reads after still held starved runs in their 3 s";
  // A higher threshold (a reload): not starved at 90 ms.
  load.SetStarvedThreshold(absl::Milliseconds(100));
  second(90000000, 1, 20);
  EXPECT_EQ(FromProtoTimestamp(load.Figures().starved_until()), starved + absl::Seconds(2));
}

TEST(HostLoadTest, ReadsProcAtMostOncePerInterval) {
  FakeProc proc;
  SimulatedClock clock;
  HostLoad load(proc.root(), kDaemon, &clock, absl::Seconds(10), absl::Seconds(2));
  proc.Thread(kDaemon, kDaemon, 0, 0);
  load.Sample();
  clock.Advance(absl::Seconds(1));
  proc.Thread(kDaemon, kDaemon, 5000000, 5);
  load.Sample();  // too soon: not read
  EXPECT_FALSE(load.Figures().has_scheduling_delay_seconds());
  clock.Advance(absl::Seconds(1));
  load.Sample();
  EXPECT_NEAR(load.Figures().scheduling_delay_seconds(), 0.001, 1e-12);
  EXPECT_DOUBLE_EQ(load.Figures().window_seconds(), 2);
}

TEST(HostLoadTest, NoTransportAndNoFilesLeaveFiguresOut) {
  FakeProc proc;  // empty: nothing to read
  SimulatedClock clock;
  HostLoad load(proc.root(), kDaemon, &clock);
  load.Sample();
  clock.Advance(absl::Seconds(2));
  load.Sample();
  const v1::HostLoad f = load.Figures();
  EXPECT_FALSE(f.has_scheduling_delay_seconds());
  EXPECT_FALSE(f.has_cpu_steal_ratio());
  EXPECT_FALSE(f.has_cpu_pressure_ratio());
  EXPECT_TRUE(HostLoadCollector(std::make_shared<HostLoad>(proc.root(), kDaemon, &clock), "n")
                  .Collect()
                  .empty())
      << "no figure, no series";
}

TEST(HostLoadTest, TheRealProcOfThisProcess) {
  RealClock clock;
  auto load = std::make_shared<HostLoad>("/proc", getpid(), &clock, absl::Seconds(10),
                                         absl::ZeroDuration());
  load->Sample();
  // Wake a thread a few times so something ran.
  for (int i = 0; i < 50; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  load->Sample();
  const v1::HostLoad f = load->Figures();
  ASSERT_TRUE(f.has_scheduling_delay_seconds());
  EXPECT_GE(f.scheduling_delay_seconds(), 0);
  EXPECT_LT(f.scheduling_delay_seconds(), 1);
  ASSERT_TRUE(f.has_cpu_steal_ratio());
  EXPECT_GE(f.cpu_steal_ratio(), 0);
  EXPECT_LE(f.cpu_steal_ratio(), 1);
  bool named = false;
  for (const auto& family : HostLoadCollector(load, "node-a").Collect()) {
    ASSERT_EQ(family.metric.size(), 1u);
    EXPECT_EQ(family.metric[0].label[0].value, "node-a");
    named |= family.name == "gloowatch_host_scheduling_delay_seconds";
  }
  EXPECT_TRUE(named);
}

}  // namespace
}  // namespace gloowatch
