// What the loopback benchmarks (overhead_bench, preflight_bench) share
// besides the test support they start their daemons with: the build
// directory, flag defaults from the environment, a time budget, and a
// graceful stop of a LoopbackCluster.
#pragma once

#include <sys/types.h>

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "tests/support/daemon_process.h"

namespace gloowatch::bench {

// The build directory: `flag`, or the one this binary (DIR/bench/) is in.
// Also sets GLOOWATCH_BIN_DIR to it, for testing::BinaryPath.
std::string UseBuildDir(const std::string& flag);

// The environment's value of `name`, or `fallback` (flag defaults, so the
// scripts' variables keep working).
std::string EnvOr(const char* name, const std::string& fallback);
int EnvOr(const char* name, int fallback);

// "0.52 0.61 0.70", from /proc/loadavg.
std::string LoadAverage();

// The time now, as 2026-12-05T13:05:00Z.
std::string UtcNow();

// Past `budget` stops every process this one started (SIGTERM, SIGKILL a
// second later) and exits with 3: the bound on the whole run, whatever hangs.
void StartWatchdog(absl::Duration budget, const std::string& name);

// Starts the cluster's daemons one at a time, each once the one before
// answers GetStatus (within `each`): started all at once on a small machine,
// a transport may miss its first heartbeats, which ends its daemon's
// start-up by design. A daemon that exits or does not answer is started once
// more; the error names it and gives its log. At most 2 * size * `each`.
inline constexpr absl::Duration kStartEach = absl::Seconds(30);
absl::Status StartOneByOne(testing::LoopbackCluster& cluster, absl::Duration each = kStartEach);

// SIGTERM to every started daemon at once, then waits for each (SIGKILL by
// the Process destructor if one is still running after `grace`).
void StopCluster(testing::LoopbackCluster& cluster, absl::Duration grace = absl::Seconds(10));

// CPU time (utime + stime) of process `pid` in seconds, from /proc/PID/stat;
// -1 once it is gone.
double CpuSeconds(pid_t pid);

// Seconds since process `pid` started (-1 once it is gone).
double AgeSeconds(pid_t pid);

// A "Key:  N kB" line of /proc/PID/status in MiB (VmRSS, VmHWM, RssAnon), 0
// when absent.
double StatusMiB(pid_t pid, const std::string& key);

}  // namespace gloowatch::bench
