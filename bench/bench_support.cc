#include "bench/bench_support.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace gloowatch::bench {
namespace {

// The pids of this process's children (every thread's).
std::vector<pid_t> Children() {
  std::vector<pid_t> pids;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream in(task.path() / "children");
    pid_t pid;
    while (in >> pid) pids.push_back(pid);
  }
  return pids;
}

// The fields of /proc/PID/stat after "pid (comm) ": [0] is the state (field
// 3 of proc(5)), so field k is [k - 3]. The name may hold spaces and ')'.
std::vector<std::string> StatFields(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string line;
  std::getline(in, line);
  const size_t end = line.rfind(") ");
  if (end == std::string::npos) return {};
  return absl::StrSplit(line.substr(end + 2), ' ', absl::SkipEmpty());
}

}  // namespace

std::string UseBuildDir(const std::string& flag) {
  std::error_code ec;
  const std::string dir =
      flag.empty() ? std::filesystem::read_symlink("/proc/self/exe", ec).parent_path().parent_path()
                   : std::filesystem::absolute(flag, ec);
  setenv("GLOOWATCH_BIN_DIR", dir.c_str(), 1);
  return dir;
}

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

int EnvOr(const char* name, int fallback) {
  int value = 0;
  return absl::SimpleAtoi(EnvOr(name, ""), &value) ? value : fallback;
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return absl::StrCat(one, " ", five, " ", fifteen);
}

std::string UtcNow() {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone());
}

void StartWatchdog(absl::Duration budget, const std::string& name) {
  std::thread([budget, name] {
    absl::SleepFor(budget);
    std::fprintf(stderr, "%s: over the %s budget, stopping\n", name.c_str(),
                 absl::FormatDuration(budget).c_str());
    for (pid_t pid : Children()) kill(pid, SIGTERM);
    absl::SleepFor(absl::Seconds(1));
    for (pid_t pid : Children()) kill(pid, SIGKILL);
    _exit(3);
  }).detach();
}

absl::Status StartOneByOne(testing::LoopbackCluster& cluster, absl::Duration each) {
  for (int i = 0; i < cluster.size(); ++i) {
    for (int attempt = 1;; ++attempt) {
      cluster.Start(i);  // the earlier attempt's process, if any, is killed
      bool exited = false;
      const bool answered = testing::WaitFor(
          [&] {
            exited = !cluster.process(i)->running();
            return exited || testing::GetStatus(cluster.grpc(i), absl::Seconds(1)).ok();
          },
          each);
      if (answered && !exited) break;
      const std::string why =
          exited ? "exited" : absl::StrCat("did not answer within ", absl::FormatDuration(each));
      if (attempt == 2) {
        return absl::UnavailableError(absl::StrCat(
            cluster.node(i).name, " ", why, " twice; its log:\n", cluster.process(i)->Log()));
      }
      std::fprintf(stderr, "%s %s; starting it again\n", cluster.node(i).name.c_str(), why.c_str());
    }
  }
  return absl::OkStatus();
}

void StopCluster(testing::LoopbackCluster& cluster, absl::Duration grace) {
  for (int i = 0; i < cluster.size(); ++i) {
    if (cluster.process(i) != nullptr) cluster.process(i)->Signal(SIGTERM);
  }
  const absl::Time deadline = absl::Now() + grace;
  for (int i = 0; i < cluster.size(); ++i) {
    if (cluster.process(i) != nullptr) {
      cluster.process(i)->Wait(std::max(deadline - absl::Now(), absl::ZeroDuration()));
    }
  }
}

double CpuSeconds(pid_t pid) {
  const std::vector<std::string> f = StatFields(pid);
  double utime = 0, stime = 0;  // fields 14 and 15, in clock ticks
  if (f.size() < 13 || !absl::SimpleAtod(f[11], &utime) || !absl::SimpleAtod(f[12], &stime)) {
    return -1;
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double AgeSeconds(pid_t pid) {
  const std::vector<std::string> f = StatFields(pid);
  double start = 0, uptime = 0;  // field 22, in clock ticks since boot
  std::ifstream in("/proc/uptime");
  if (f.size() < 20 || !absl::SimpleAtod(f[19], &start) || !(in >> uptime)) return -1;
  return uptime - start / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double StatusMiB(pid_t pid, const std::string& key) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f = absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    double kib = 0;
    if (f.size() >= 2 && f[0] == key + ":" && absl::SimpleAtod(f[1], &kib)) return kib / 1024;
  }
  return 0;
}

}  // namespace gloowatch::bench
