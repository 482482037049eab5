// How busy this host is, as gloowatch's own threads feel it, so that a host
// too busy to answer probes in time is not taken for a bad network (its
// links all look slow or lossy while the network is fine).
//
// - Scheduling delay: the mean wait of the daemon's and the transport's
//   threads from runnable to running, per time they ran
//   (/proc/<pid>/task/*/schedstat: run_delay, pcount), over the window. It
//   covers every reason not to get a CPU: busy cores, the CPU quota of the
//   service's cgroup, a hypervisor's steal.
// - CPU steal: the hypervisor's share of all CPU time (/proc/stat), over
//   the window.
// - CPU pressure: PSI's "some avg10" (/proc/pressure/cpu), where the kernel
//   has it: the share of time some task waited for a CPU, host-wide.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"
#include "proto/gloowatch.pb.h"

namespace gloowatch {

// Parsers of the /proc files, exposed for tests. nullopt on malformed text.
struct ThreadSchedStat {
  uint64_t run_delay_ns = 0;  // time spent runnable, waiting for a CPU
  uint64_t runs = 0;          // times it was put on a CPU
};
std::optional<ThreadSchedStat> ParseSchedStat(const std::string& text);
struct CpuTimes {
  uint64_t total = 0;  // user .. steal, in clock ticks
  uint64_t steal = 0;
};
std::optional<CpuTimes> ParseProcStatCpu(const std::string& text);
std::optional<double> ParseCpuPressureSome10(const std::string& text);  // 0..1

class HostLoad {
 public:
  // `proc_root` is "/proc" outside tests; `self` the daemon's pid. Reading
  // every thread's schedstat costs about as much CPU as the daemon's own
  // work, so /proc is read at most once per `interval`.
  HostLoad(std::string proc_root, pid_t self, const Clock* clock,
           absl::Duration window = absl::Seconds(10), absl::Duration interval = absl::Seconds(5));

  // The transport child's pid, or -1 while none runs.
  void SetTransportPid(pid_t pid) { transport_pid_.store(pid); }

  // Reads /proc unless it did less than `interval` ago; call about once a
  // second. Files it cannot read (a thread that just ended, no PSI) leave
  // their figure out.
  void Sample();

  // The figures over the window (unset until two samples span it).
  v1::HostLoad Figures() const;

 private:
  struct Point {
    absl::Time at;
    uint64_t delay_ns, runs;  // summed over every thread sampled so far
    std::optional<CpuTimes> cpu;
  };
  void SampleThreads(pid_t pid, std::map<pid_t, ThreadSchedStat>& now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string proc_root_;
  const pid_t self_;
  const Clock* const clock_;
  const absl::Duration window_;
  const absl::Duration interval_;
  std::atomic<pid_t> transport_pid_{-1};

  mutable absl::Mutex mu_;
  std::map<pid_t, ThreadSchedStat> last_ ABSL_GUARDED_BY(mu_);  // by thread id
  uint64_t delay_ns_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t runs_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<Point> points_ ABSL_GUARDED_BY(mu_);
  std::optional<double> pressure_ ABSL_GUARDED_BY(mu_);
};

// gloowatch_host_* gauges, read from HostLoad::Figures() at scrape time.
class HostLoadCollector : public prometheus::Collectable {
 public:
  HostLoadCollector(std::shared_ptr<const HostLoad> load, std::string node)
      : load_(std::move(load)), node_(std::move(node)) {}
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const std::shared_ptr<const HostLoad> load_;
  const std::string node_;
};

}  // namespace gloowatch
