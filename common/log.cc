#include "common/log.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace gloowatch {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};

bool UnderJournal() {
  static const bool journal = std::getenv("JOURNAL_STREAM") != nullptr;
  return journal;
}

}  // namespace

void SetLogLevel(LogLevel level) { g_level.store(static_cast<int>(level)); }

bool LogEnabled(LogLevel level) { return static_cast<int>(level) >= g_level.load(); }

void LogLine(LogLevel level, absl::string_view message) {
  static constexpr const char* kNames[] = {"DEBUG", "INFO", "WARN", "ERROR"};
  static constexpr int kSyslog[] = {7, 6, 4, 3};
  const int i = static_cast<int>(level);
  std::string line;
  if (UnderJournal()) {
    line = absl::StrFormat("<%d>%s %s\n", kSyslog[i], kNames[i], message);
  } else {
    line = absl::StrFormat(
        "%s %s %s\n", absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone()),
        kNames[i], message);
  }
  // One write per line keeps lines from different threads whole.
  std::fwrite(line.data(), 1, line.size(), stderr);
}

LogRateLimiter::LogRateLimiter(absl::Duration interval, const Clock* clock)
    : interval_(interval), clock_(clock) {}

bool LogRateLimiter::Allow(absl::string_view key, uint64_t* suppressed) {
  const absl::Duration now = clock_->Monotonic();
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = entries_.try_emplace(key);
  Entry& e = it->second;
  if (!inserted && now - e.last_written < interval_) {
    ++e.suppressed;
    return false;
  }
  *suppressed = e.suppressed;
  e.suppressed = 0;
  e.last_written = now;
  return true;
}

uint64_t LogRateLimiter::Reset() {
  absl::MutexLock lock(&mu_);
  uint64_t total = 0;
  for (const auto& [key, e] : entries_) total += e.suppressed;
  entries_.clear();
  return total;
}

std::string SuppressedSuffix(uint64_t suppressed) {
  if (suppressed == 0) return "";
  return absl::StrFormat(" (%d similar suppressed)", suppressed);
}

}  // namespace gloowatch
