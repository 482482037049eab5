#include "tests/support/cpu_hog.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace gloowatch::testing {
namespace {

bool Write(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text << std::flush;
  return static_cast<bool>(out);
}

}  // namespace

absl::StatusOr<std::unique_ptr<CpuHog>> CpuHog::Start(pid_t pid, int quota_percent, int loops) {
  auto hog = std::unique_ptr<CpuHog>(new CpuHog());
  static int hogs = 0;
  const std::string name = absl::StrCat("gwhog", getpid(), "-", hogs++);
  if (std::filesystem::exists("/sys/fs/cgroup/cpu/cpu.cfs_quota_us")) {
    hog->parent_ = "/sys/fs/cgroup/cpu";
    hog->dir_ = absl::StrCat(hog->parent_, "/", name);
    if (mkdir(hog->dir_.c_str(), 0755) != 0) return absl::InternalError(hog->dir_);
    if (!Write(hog->dir_ + "/cpu.cfs_period_us", "100000") ||
        !Write(hog->dir_ + "/cpu.cfs_quota_us", absl::StrCat(1000 * quota_percent))) {
      return absl::InternalError("cannot set cpu.cfs_quota_us");
    }
  } else if (std::filesystem::exists("/sys/fs/cgroup/cgroup.controllers")) {
    hog->parent_ = "/sys/fs/cgroup";
    hog->dir_ = absl::StrCat(hog->parent_, "/", name);
    Write(hog->parent_ + "/cgroup.subtree_control", "+cpu");
    if (mkdir(hog->dir_.c_str(), 0755) != 0) return absl::InternalError(hog->dir_);
    if (!Write(hog->dir_ + "/cpu.max", absl::StrCat(1000 * quota_percent, " 100000"))) {
      return absl::InternalError("cannot set cpu.max");
    }
  } else {
    return absl::UnavailableError("no cgroup cpu controller mounted");
  }
  // Its children, whichever of its threads forked them (the supervisor's).
  std::vector<pid_t> pids = {pid};
  for (const auto& task :
       std::filesystem::directory_iterator(absl::StrCat("/proc/", pid, "/task"))) {
    std::ifstream children(task.path() / "children");
    for (pid_t child; children >> child;) pids.push_back(child);
  }
  if (pids.size() < 2) return absl::FailedPreconditionError("the daemon has no transport child");
  for (pid_t p : pids) {
    if (!Write(hog->dir_ + "/cgroup.procs", absl::StrCat(p))) {
      return absl::InternalError(absl::StrCat("cannot move ", p, " into ", hog->dir_));
    }
  }
  // The shell moves itself in, then spins (only exec after fork: this
  // process has threads).
  const std::string spin =
      absl::StrCat("echo $$ > ", hog->dir_, "/cgroup.procs && while :; do :; done");
  for (int i = 0; i < loops; ++i) {
    const pid_t loop = fork();
    if (loop == 0) {
      execl("/bin/sh", "sh", "-c", spin.c_str(), nullptr);
      _exit(127);
    }
    if (loop > 0) hog->loops_.push_back(loop);
  }
  return hog;
}

CpuHog::~CpuHog() {
  for (pid_t loop : loops_) {
    kill(loop, SIGKILL);
    waitpid(loop, nullptr, 0);
  }
  // Whatever is left (the daemon, its transport) back to the parent.
  std::ifstream procs(dir_ + "/cgroup.procs");
  for (pid_t p; procs >> p;) Write(parent_ + "/cgroup.procs", absl::StrCat(p));
  rmdir(dir_.c_str());
}

}  // namespace gloowatch::testing
