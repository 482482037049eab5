#include "daemon/metrics/process_metrics.h"

#include <unistd.h>

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "daemon/metrics/metric_catalogue.h"
#include "daemon/metrics/metric_families.h"
#include "daemon/system/proc_fs.h"

namespace gloowatch {
namespace {

// /proc/stat's btime: the boot time, in seconds since the epoch.
absl::StatusOr<double> BootTime(const std::string& proc_root) {
  absl::StatusOr<std::string> stat = ReadProcFile(proc_root + "/stat");
  if (!stat.ok()) return stat.status();
  for (absl::string_view line : absl::StrSplit(*stat, '\n')) {
    double btime = 0;
    if (absl::ConsumePrefix(&line, "btime ") && absl::SimpleAtod(line, &btime)) return btime;
  }
  return absl::DataLossError(absl::StrCat("no btime in ", proc_root, "/stat"));
}

// The soft limit from /proc/<pid>/limits: "Max open files  1024  4096  files".
double MaxOpenFiles(const std::string& limits) {
  for (absl::string_view line : absl::StrSplit(limits, '\n')) {
    if (!absl::ConsumePrefix(&line, "Max open files")) continue;
    std::vector<absl::string_view> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
    double soft = 0;
    if (!fields.empty() && absl::SimpleAtod(fields[0], &soft)) return soft;
  }
  return 0;
}

}  // namespace

absl::StatusOr<ProcessStats> ReadProcessStats(const std::string& proc_root, pid_t pid) {
  const std::string dir = absl::StrCat(proc_root, "/", pid);
  absl::StatusOr<std::string> stat = ReadProcFile(dir + "/stat");
  if (!stat.ok()) return stat.status();
  // The command name is in parentheses and may hold spaces; the fields after
  // the last ')' start with field 3 (state).
  const size_t paren = stat->rfind(')');
  if (paren == std::string::npos)
    return absl::DataLossError(absl::StrCat("malformed ", dir, "/stat"));
  std::vector<absl::string_view> fields =
      absl::StrSplit(absl::string_view(*stat).substr(paren + 1), ' ', absl::SkipEmpty());
  // fields[i] is stat field i + 3: utime 14, stime 15, starttime 22, vsize 23, rss 24.
  constexpr size_t kUtime = 11, kStime = 12, kStartTime = 19, kVsize = 20, kRss = 21;
  double utime = 0, stime = 0, start_ticks = 0, vsize = 0, rss_pages = 0;
  if (fields.size() <= kRss || !absl::SimpleAtod(fields[kUtime], &utime) ||
      !absl::SimpleAtod(fields[kStime], &stime) ||
      !absl::SimpleAtod(fields[kStartTime], &start_ticks) ||
      !absl::SimpleAtod(fields[kVsize], &vsize) || !absl::SimpleAtod(fields[kRss], &rss_pages)) {
    return absl::DataLossError(absl::StrCat("malformed ", dir, "/stat"));
  }
  absl::StatusOr<double> boot = BootTime(proc_root);
  if (!boot.ok()) return boot.status();
  absl::StatusOr<std::vector<std::string>> fds = ListProcDir(dir + "/fd");
  if (!fds.ok()) return fds.status();
  absl::StatusOr<std::string> limits = ReadProcFile(dir + "/limits");
  if (!limits.ok()) return limits.status();

  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  ProcessStats out;
  out.cpu_seconds = (utime + stime) / ticks;
  out.resident_memory_bytes = rss_pages * static_cast<double>(sysconf(_SC_PAGESIZE));
  out.virtual_memory_bytes = vsize;
  out.start_time_seconds = *boot + start_ticks / ticks;
  out.open_fds = static_cast<double>(fds->size());
  out.max_fds = MaxOpenFiles(*limits);
  return out;
}

ProcessCollector::ProcessCollector(std::string proc_root)
    : proc_root_(std::move(proc_root)), self_(getpid()) {}

std::vector<prometheus::MetricFamily> ProcessCollector::Collect() const {
  const MetricSpec* const specs[] = {
      &metric::kProcessCpuSeconds, &metric::kProcessResidentMemory, &metric::kProcessVirtualMemory,
      &metric::kProcessStartTime,  &metric::kProcessOpenFds,        &metric::kProcessMaxFds,
  };
  std::vector<prometheus::MetricFamily> families;
  for (const MetricSpec* spec : specs) families.push_back(Family(*spec));
  // `process`: "" for the daemon itself, whose series carry no label.
  auto add = [&](pid_t pid, const std::string& process) {
    absl::StatusOr<ProcessStats> stats = ReadProcessStats(proc_root_, pid);
    if (!stats.ok()) return;  // e.g. the transport just exited: its series skip a scrape
    const double values[] = {stats->cpu_seconds,
                             stats->resident_memory_bytes,
                             stats->virtual_memory_bytes,
                             stats->start_time_seconds,
                             stats->open_fds,
                             stats->max_fds};
    for (size_t i = 0; i < families.size(); ++i) {
      Add(families[i], process.empty() ? prometheus::Labels{} : MetricLabels(*specs[i], {process}),
          values[i]);
    }
  };
  // The daemon's own series carry no label, as every exporter's do, so the
  // usual process_* dashboards and rules work unchanged.
  add(self_, "");
  if (const pid_t transport = transport_pid_.load(); transport > 0) add(transport, "transport");
  return families;
}

}  // namespace gloowatch
