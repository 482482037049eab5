// Leveled log lines on stderr. Under systemd (JOURNAL_STREAM set) lines carry
// no timestamp of ours and use the <N> syslog priority prefix journald reads.
#pragma once

#include <string>

#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

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

}  // namespace gloowatch
