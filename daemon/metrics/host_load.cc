#include "daemon/metrics/host_load.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/proto_time.h"
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

void HostLoad::SampleThread(pid_t pid, pid_t tid, const std::map<pid_t, ThreadSchedStat>& last,
                            std::map<pid_t, ThreadSchedStat>& now, Sum& sum) const {
  absl::StatusOr<std::string> text =
      ReadProcFile(absl::StrCat(proc_root_, "/", pid, "/task/", tid, "/schedstat"));
  if (!text.ok()) return;
  std::optional<ThreadSchedStat> s = ParseSchedStat(*text);
  if (!s) return;
  now[tid] = *s;
  // Only what a thread did since we last saw it counts: a new thread's
  // history (or a reused id's) is its baseline.
  auto before = last.find(tid);
  if (before == last.end() || s->runs < before->second.runs ||
      s->run_delay_ns < before->second.run_delay_ns) {
    return;
  }
  sum.delay_ns += s->run_delay_ns - before->second.run_delay_ns;
  sum.runs += s->runs - before->second.runs;
}

void HostLoad::SampleThreads(pid_t pid, std::map<pid_t, ThreadSchedStat>& now) {
  absl::StatusOr<std::vector<std::string>> tids =
      ListProcDir(absl::StrCat(proc_root_, "/", pid, "/task"));
  if (!tids.ok()) return;  // e.g. the transport just exited
  for (const std::string& name : *tids) {
    pid_t tid = 0;
    if (absl::SimpleAtoi(name, &tid)) SampleThread(pid, tid, last_, now, all_);
  }
}

void HostLoad::SampleMainThreads(absl::Time now) {
  std::map<pid_t, ThreadSchedStat> threads;
  SampleThread(self_, self_, last_main_, threads, main_);
  if (const pid_t transport = transport_pid_.load(); transport > 0) {
    SampleThread(transport, transport, last_main_, threads, main_);
  }
  last_main_ = std::move(threads);
  recent_.push_back({now, main_});
  while (recent_.size() > 2 && recent_[1].at <= now - kRecentWindow) recent_.pop_front();
}

void HostLoad::Sample() {
  absl::MutexLock lock(&mu_);
  const absl::Time now = clock_->Now();
  SampleMainThreads(now);
  // Either figure at the threshold: what peers measure to us now is slowed
  // by this host.
  const double threshold = static_cast<double>(starved_threshold_ns_.load()) / 1e9;
  for (const std::optional<double>& delay : {RecentDelay(), WindowDelay()}) {
    if (delay && *delay >= threshold) starved_until_ = now;
  }
  if (!points_.empty() && now - points_.back().at < interval_) return;
  std::map<pid_t, ThreadSchedStat> threads;
  SampleThreads(self_, threads);
  if (const pid_t transport = transport_pid_.load(); transport > 0) {
    SampleThreads(transport, threads);
  }
  last_ = std::move(threads);

  Point p{now, all_, std::nullopt};
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

std::optional<double> HostLoad::MeanDelay(const Sum& first, const Sum& last) {
  if (last.runs <= first.runs) return std::nullopt;
  return static_cast<double>(last.delay_ns - first.delay_ns) / 1e9 /
         static_cast<double>(last.runs - first.runs);
}

std::optional<double> HostLoad::RecentDelay() const {
  if (recent_.size() < 2) return std::nullopt;
  return MeanDelay(recent_.front().sum, recent_.back().sum);
}

std::optional<double> HostLoad::WindowDelay() const {
  if (points_.size() < 2) return std::nullopt;
  return MeanDelay(points_.front().sum, points_.back().sum);
}

v1::HostLoad HostLoad::Figures() const {
  absl::MutexLock lock(&mu_);
  v1::HostLoad out;
  if (pressure_) out.set_cpu_pressure_ratio(*pressure_);
  if (std::optional<double> recent = RecentDelay()) {
    out.set_recent_scheduling_delay_seconds(*recent);
    out.set_recent_window_seconds(absl::ToDoubleSeconds(recent_.back().at - recent_.front().at));
  }
  if (starved_until_) *out.mutable_starved_until() = ToProtoTimestamp(*starved_until_);
  if (points_.size() < 2) return out;
  const Point &first = points_.front(), &last = points_.back();
  out.set_window_seconds(absl::ToDoubleSeconds(last.at - first.at));
  if (std::optional<double> delay = WindowDelay()) out.set_scheduling_delay_seconds(*delay);
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
  gauge(metric::kHostRecentSchedulingDelay, f.has_recent_scheduling_delay_seconds(),
        f.recent_scheduling_delay_seconds());
  gauge(metric::kHostCpuSteal, f.has_cpu_steal_ratio(), f.cpu_steal_ratio());
  gauge(metric::kHostCpuPressure, f.has_cpu_pressure_ratio(), f.cpu_pressure_ratio());
  return out;
}

}  // namespace gloowatch
