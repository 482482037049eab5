// process_* metrics: parsed from /proc (a real one and a crafted one), and
// the collector's families for the daemon and a real child process.
#include "daemon/metrics/process_metrics.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace gloowatch {
namespace {

void WriteFile(const std::string& path, const std::string& content) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << content;
}

class FakeProc {
 public:
  FakeProc() {
    char pattern[] = "/tmp/gw-proc-XXXXXX";
    root_ = mkdtemp(pattern);
    WriteFile(root_ + "/stat", "cpu  1 2 3 4\nbtime 1700000000\nprocesses 5\n");
  }
  ~FakeProc() { std::filesystem::remove_all(root_); }
  const std::string& root() const { return root_; }

 private:
  std::string root_;
};

TEST(ProcessMetricsTest, ReadsACraftedProcExactly) {
  FakeProc proc;
  const long ticks = sysconf(_SC_CLK_TCK);
  const long page = sysconf(_SC_PAGESIZE);
  // A command name with spaces and a ')' must not shift the fields:
  // utime 3 s, stime 1 s, starttime 10 s after boot, vsize 1 MiB, rss 256 pages.
  WriteFile(proc.root() + "/42/stat",
            absl::StrCat("42 (gloo watch) x) S 1 42 42 0 -1 4194560 100 0 0 0 ", 3 * ticks, " ",
                         1 * ticks, " 0 0 20 0 4 0 ", 10 * ticks,
                         " 1048576 256 18446744073709551615"
                         " 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"));
  WriteFile(proc.root() + "/42/limits",
            "Limit                     Soft Limit           Hard Limit           Units\n"
            "Max open files            1024                 524288               files\n");
  for (const char* fd : {"0", "1", "2", "7"}) WriteFile(proc.root() + "/42/fd/" + fd, "");

  absl::StatusOr<ProcessStats> stats = ReadProcessStats(proc.root(), 42);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_DOUBLE_EQ(stats->cpu_seconds, 4.0);
  EXPECT_DOUBLE_EQ(stats->virtual_memory_bytes, 1048576.0);
  EXPECT_DOUBLE_EQ(stats->resident_memory_bytes, 256.0 * static_cast<double>(page));
  EXPECT_DOUBLE_EQ(stats->start_time_seconds, 1700000010.0);
  EXPECT_DOUBLE_EQ(stats->open_fds, 4.0);
  EXPECT_DOUBLE_EQ(stats->max_fds, 1024.0);
}

TEST(ProcessMetricsTest, MalformedOrMissingProcIsAnErrorNamingTheFile) {
  FakeProc proc;
  WriteFile(proc.root() + "/7/stat", "7 (short) S 1 2\n");
  absl::StatusOr<ProcessStats> stats = ReadProcessStats(proc.root(), 7);
  ASSERT_FALSE(stats.ok());
  EXPECT_NE(stats.status().message().find("/7/stat"), std::string::npos) << stats.status();
  EXPECT_FALSE(ReadProcessStats(proc.root(), 8).ok());
}

TEST(ProcessMetricsTest, ReadsThisProcessPlausibly) {
  absl::StatusOr<ProcessStats> stats = ReadProcessStats("/proc", getpid());
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_GT(stats->resident_memory_bytes, 1 << 20);
  EXPECT_GE(stats->virtual_memory_bytes, stats->resident_memory_bytes);
  EXPECT_GE(stats->open_fds, 3);
  EXPECT_GT(stats->max_fds, stats->open_fds);
  const double now = static_cast<double>(time(nullptr));
  EXPECT_LE(stats->start_time_seconds, now + 1);
  EXPECT_GT(stats->start_time_seconds, now - 3600);
}

const prometheus::MetricFamily* Find(const std::vector<prometheus::MetricFamily>& families,
                                     const std::string& name) {
  for (const auto& f : families) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

TEST(ProcessMetricsTest, CollectsTheDaemonUnlabelledAndTheTransportLabelled) {
  ProcessCollector collector;
  std::vector<prometheus::MetricFamily> families = collector.Collect();
  ASSERT_EQ(families.size(), 6u);
  for (const auto& f : families) {
    ASSERT_EQ(f.metric.size(), 1u) << f.name;
    EXPECT_TRUE(f.metric[0].label.empty()) << f.name;
  }
  EXPECT_EQ(Find(families, "process_cpu_seconds_total")->type, prometheus::MetricType::Counter);

  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pause();
    _exit(0);
  }
  collector.SetTransportPid(child);
  families = collector.Collect();
  const prometheus::MetricFamily* rss = Find(families, "process_resident_memory_bytes");
  ASSERT_NE(rss, nullptr);
  ASSERT_EQ(rss->metric.size(), 2u);
  ASSERT_EQ(rss->metric[1].label.size(), 1u);
  EXPECT_EQ(rss->metric[1].label[0].name, "process");
  EXPECT_EQ(rss->metric[1].label[0].value, "transport");
  EXPECT_GT(rss->metric[1].gauge.value, 0);

  // A transport that is gone skips the scrape instead of failing it.
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  families = collector.Collect();
  EXPECT_EQ(Find(families, "process_open_fds")->metric.size(), 1u);
}

}  // namespace
}  // namespace gloowatch
