#include "daemon/metrics/host_load.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "daemon/metrics/metric_catalogue.h"
#include "daemon/metrics/metric_families.h"
#include "daemon/system/proc_fs.h"

namespace gloowatch {

std::optional<ThreadSchedStat> ParseSchedStat(const std::string& text) {
  // "run_time_ns run_delay_ns runs"
  std::vector<absl::string_view> f =
      absl::StrSplit(text, absl::ByAnyChar(" \n"), absl::SkipEmpty());
  ThreadSchedStat s;
  if (f.size() < 3 || !absl::SimpleAtoi(f[1], &s.run_delay_ns) ||
      !absl::SimpleAtoi(f[2], &s.runs)) {
    return std::nullopt;
  }
  return s;
}

std::optional<CpuTimes> ParseProcStatCpu(const std::string& text) {
  // "cpu  user nice system idle iowait irq softirq steal guest guest_nice":
  // guest time is counted in user already.
  absl::string_view line = absl::string_view(text).substr(0, text.find('\n'));
  if (!absl::ConsumePrefix(&line, "cpu ")) return std::nullopt;
  std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
  constexpr size_t kSteal = 7;
  if (f.size() <= kSteal) return std::nullopt;
  CpuTimes t;
  for (size_t i = 0; i <= kSteal; ++i) {
    uint64_t v = 0;
    if (!absl::SimpleAtoi(f[i], &v)) return std::nullopt;
    t.total += v;
    if (i == kSteal) t.steal = v;
  }
  return t;
}

std::optional<double> ParseCpuPressureSome10(const std::string& text) {
  // "some avg10=2.13 avg60=2.42 avg300=4.52 total=51405269"
  absl::string_view line = absl::string_view(text).substr(0, text.find('\n'));
  if (!absl::ConsumePrefix(&line, "some ")) return std::nullopt;
  for (absl::string_view field : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
    double percent = 0;
    if (absl::ConsumePrefix(&field, "avg10=") && absl::SimpleAtod(field, &percent) &&
        percent >= 0 && percent <= 100) {
      return percent / 100;
    }
  }
  return std::nullopt;
}

HostLoad::HostLoad(std::string proc_root, pid_t self, const Clock* clock, absl::Duration window,
                   absl::Duration interval)
    : proc_root_(std::move(proc_root)),
      self_(self),
      clock_(clock),
      window_(window),
      interval_(interval) {}

void HostLoad::SampleThreads(pid_t pid, std::map<pid_t, ThreadSchedStat>& now) {
  const std::string tasks = absl::StrCat(proc_root_, "/", pid, "/task");
  absl::StatusOr<std::vector<std::string>> tids = ListProcDir(tasks);
  if (!tids.ok()) return;  // e.g. the transport just exited
  for (const std::string& name : *tids) {
    pid_t tid = 0;
    if (!absl::SimpleAtoi(name, &tid)) continue;
    absl::StatusOr<std::string> text = ReadProcFile(absl::StrCat(tasks, "/", name, "/schedstat"));
    if (!text.ok()) continue;
    std::optional<ThreadSchedStat> s = ParseSchedStat(*text);
    if (!s) continue;
    now[tid] = *s;
    // Only what a thread did since we last saw it counts: a new thread's
    // history (or a reused id's) is its baseline.
    auto last = last_.find(tid);
    if (last == last_.end() || s->runs < last->second.runs ||
        s->run_delay_ns < last->second.run_delay_ns) {
      continue;
    }
    delay_ns_ += s->run_delay_ns - last->second.run_delay_ns;
    runs_ += s->runs - last->second.runs;
  }
}

void HostLoad::Sample() {
  absl::MutexLock lock(&mu_);
  const absl::Time now = clock_->Now();
  if (!points_.empty() && now - points_.back().at < interval_) return;
  std::map<pid_t, ThreadSchedStat> threads;
  SampleThreads(self_, threads);
  if (const pid_t transport = transport_pid_.load(); transport > 0) {
    SampleThreads(transport, threads);
  }
  last_ = std::move(threads);

  Point p{now, delay_ns_, runs_, std::nullopt};
  if (absl::StatusOr<std::string> stat = ReadProcFile(proc_root_ + "/stat"); stat.ok()) {
    p.cpu = ParseProcStatCpu(*stat);
  }
  points_.push_back(p);
  while (points_.size() > 2 && points_[1].at <= p.at - window_) points_.pop_front();

  pressure_.reset();
  if (absl::StatusOr<std::string> psi = ReadProcFile(proc_root_ + "/pressure/cpu"); psi.ok()) {
    pressure_ = ParseCpuPressureSome10(*psi);
  }
}

v1::HostLoad HostLoad::Figures() const {
  absl::MutexLock lock(&mu_);
  v1::HostLoad out;
  if (pressure_) out.set_cpu_pressure_ratio(*pressure_);
  if (points_.size() < 2) return out;
  const Point &first = points_.front(), &last = points_.back();
  out.set_window_seconds(absl::ToDoubleSeconds(last.at - first.at));
  if (last.runs > first.runs) {
    out.set_scheduling_delay_seconds(static_cast<double>(last.delay_ns - first.delay_ns) / 1e9 /
                                     static_cast<double>(last.runs - first.runs));
  }
  if (first.cpu && last.cpu && last.cpu->total > first.cpu->total &&
      last.cpu->steal >= first.cpu->steal) {
    out.set_cpu_steal_ratio(static_cast<double>(last.cpu->steal - first.cpu->steal) /
                            static_cast<double>(last.cpu->total - first.cpu->total));
  }
  return out;
}

std::vector<prometheus::MetricFamily> HostLoadCollector::Collect() const {
  const v1::HostLoad f = load_->Figures();
  std::vector<prometheus::MetricFamily> out;
  auto gauge = [&](const MetricSpec& spec, bool has, double value) {
    if (!has) return;  // no figure yet: no series, rather than a healthy-looking 0
    out.push_back(Family(spec));
    Add(out.back(), MetricLabels(spec, {node_}), value);
  };
  gauge(metric::kHostSchedulingDelay, f.has_scheduling_delay_seconds(),
        f.scheduling_delay_seconds());
  gauge(metric::kHostCpuSteal, f.has_cpu_steal_ratio(), f.cpu_steal_ratio());
  gauge(metric::kHostCpuPressure, f.has_cpu_pressure_ratio(), f.cpu_pressure_ratio());
  return out;
}

}  // namespace gloowatch
