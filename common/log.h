// Leveled log lines on stderr. Under systemd (JOURNAL_STREAM set) lines carry
// no timestamp of ours and use the <N> syslog priority prefix journald reads.
#pragma once

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace gloowatch {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

void SetLogLevel(LogLevel level);
bool LogEnabled(LogLevel level);
void LogLine(LogLevel level, absl::string_view message);

template <typename... Args>
void Log(LogLevel level, const absl::FormatSpec<Args...>& format, const Args&... args) {
  if (LogEnabled(level)) LogLine(level, absl::StrFormat(format, args...));
}

#define GW_LOG(level, ...) ::gloowatch::Log(::gloowatch::LogLevel::level, __VA_ARGS__)

// Lets a repeating log line through at most once per `interval` per key and
// counts the ones it holds back, so a dead peer retried every few hundred
// milliseconds does not flood the journal. Thread-safe.
class LogRateLimiter {
 public:
  LogRateLimiter(absl::Duration interval, const Clock* clock);

  // True when the line for `key` should be written now; then `*suppressed` is
  // the number of lines for `key` held back since the last one written.
  bool Allow(absl::string_view key, uint64_t* suppressed);
  // Forgets every key (the next line for any key is let through at once) and
  // returns how many lines were held back and never reported.
  uint64_t Reset();

 private:
  struct Entry {
    absl::Duration last_written;
    uint64_t suppressed = 0;
  };
  const absl::Duration interval_;
  const Clock* const clock_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
};

// " (3 similar suppressed)", or "" for 0.
std::string SuppressedSuffix(uint64_t suppressed);

}  // namespace gloowatch
