// Test support: a saturated host, as a container's CPU limit or systemd's
// CPUQuota= makes one. A process (a daemon) and its children (its transport)
// go into one CPU cgroup (v1 `cpu`, else v2) under a quota, with busy loops
// beside them that eat the quota.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gloowatch::testing {

class CpuHog {
 public:
  // `quota_percent` of one core for the cgroup; `loops` busy shells in it.
  // UnavailableError when no CPU controller is mounted (the caller skips).
  static absl::StatusOr<std::unique_ptr<CpuHog>> Start(pid_t pid, int quota_percent, int loops);
  // Kills the loops, moves what is left (the daemon, its transport) back to
  // the parent cgroup and removes the cgroup.
  ~CpuHog();
  CpuHog(const CpuHog&) = delete;
  CpuHog& operator=(const CpuHog&) = delete;

 private:
  CpuHog() = default;
  std::string parent_, dir_;
  std::vector<pid_t> loops_;
};

}  // namespace gloowatch::testing
