// How busy this host is, as gloowatch's own threads feel it, so that a host
// too busy to answer probes in time is not taken for a bad network (its
// links all look slow or lossy while the network is fine).
//
// - Scheduling delay: the mean wait of the daemon's and the transport's
//   threads from runnable to running, per time they ran
//   (/proc/<pid>/task/*/schedstat: run_delay, pcount), over the window. It
//   covers every reason not to get a CPU: busy cores, the CPU quota of the
//   service's cgroup, a hypervisor's steal.
// - Recent scheduling delay: the same for the two main threads alone (the
//   daemon's tick loop and the transport's), read every second over the
//   last kRecentWindow. Peers feel an overload within their next probe,
//   while the mean over every thread takes most of its window to move (the
//   runs from before the overload outnumber the starved ones). Few runs,
//   so the client only holds off naming the host's links on it.
// - Starved until: the last read at which either delay was at or above
//   thresholds.scheduling_delay. A transfer a peer measured by then crawled
//   for this host's reason, not its link's.
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
  static constexpr absl::Duration kRecentWindow = absl::Seconds(3);

  // `proc_root` is "/proc" outside tests; `self` the daemon's pid. Reading
  // every thread's schedstat costs about as much CPU as the daemon's own
  // work, so /proc is read at most once per `interval`.
  HostLoad(std::string proc_root, pid_t self, const Clock* clock,
           absl::Duration window = absl::Seconds(10), absl::Duration interval = absl::Seconds(5));

  // The transport child's pid, or -1 while none runs.
  void SetTransportPid(pid_t pid) { transport_pid_.store(pid); }

  // thresholds.scheduling_delay: HostLoad.starved_until is the last read
  // at which either figure was at or above it.
  void SetStarvedThreshold(absl::Duration d) {
    starved_threshold_ns_.store(absl::ToInt64Nanoseconds(d));
  }

  // Reads the main threads, and every thread unless it did less than
  // `interval` ago; call about once a second. Files it cannot read (a
  // thread that just ended, no PSI) leave their figure out.
  void Sample();

  // The figures over the window (unset until two samples span it).
  v1::HostLoad Figures() const;

 private:
  // Delay and runs summed over the threads sampled so far.
  struct Sum {
    uint64_t delay_ns = 0, runs = 0;
  };
  struct Point {
    absl::Time at;
    Sum sum;  // every thread's
    std::optional<CpuTimes> cpu;
  };
  static std::optional<double> MeanDelay(const Sum& first, const Sum& last);
  std::optional<double> RecentDelay() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::optional<double> WindowDelay() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What the threads' schedstat files say since their last read: adds the
  // delay and runs to `sum`, and each thread's figures to `now`.
  void SampleThread(pid_t pid, pid_t tid, const std::map<pid_t, ThreadSchedStat>& last,
                    std::map<pid_t, ThreadSchedStat>& now, Sum& sum) const;
  void SampleThreads(pid_t pid, std::map<pid_t, ThreadSchedStat>& now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SampleMainThreads(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string proc_root_;
  const pid_t self_;
  const Clock* const clock_;
  const absl::Duration window_;
  const absl::Duration interval_;
  std::atomic<pid_t> transport_pid_{-1};
  std::atomic<int64_t> starved_threshold_ns_{10'000'000};

  mutable absl::Mutex mu_;
  std::map<pid_t, ThreadSchedStat> last_ ABSL_GUARDED_BY(mu_);  // by thread id
  Sum all_ ABSL_GUARDED_BY(mu_);
  std::deque<Point> points_ ABSL_GUARDED_BY(mu_);
  // The main threads', every second, over kRecentWindow.
  struct RecentPoint {
    absl::Time at;
    Sum sum;
  };
  std::map<pid_t, ThreadSchedStat> last_main_ ABSL_GUARDED_BY(mu_);
  Sum main_ ABSL_GUARDED_BY(mu_);
  std::deque<RecentPoint> recent_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::Time> starved_until_ ABSL_GUARDED_BY(mu_);
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
