// Prometheus' standard process_* metrics (client_golang's names and units)
// for the daemon and, labelled process="transport", its transport child.
// A Collectable read from /proc at scrape time: nothing is copied into
// gauges, so a scrape always shows the processes as they are.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace gloowatch {

struct ProcessStats {
  double cpu_seconds = 0;  // user + system
  double resident_memory_bytes = 0;
  double virtual_memory_bytes = 0;
  double start_time_seconds = 0;  // since the unix epoch
  double open_fds = 0;
  double max_fds = 0;  // soft limit of open files
};

// Reads /proc/<pid> under `proc_root` ("/proc" outside tests).
absl::StatusOr<ProcessStats> ReadProcessStats(const std::string& proc_root, pid_t pid);

class ProcessCollector : public prometheus::Collectable {
 public:
  explicit ProcessCollector(std::string proc_root = "/proc");

  // The transport child's pid, or -1 while none runs.
  void SetTransportPid(pid_t pid) { transport_pid_.store(pid); }

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const std::string proc_root_;
  const pid_t self_;
  std::atomic<pid_t> transport_pid_{-1};
};

}  // namespace gloowatch
