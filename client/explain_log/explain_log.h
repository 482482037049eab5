// Maps log lines from PyTorch/Gloo jobs to known failure signatures with a
// cause and a fix (the table: signatures.h).
#pragma once

#include <cstddef>
#include <istream>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "client/explain_log/signatures.h"
#include "nlohmann/json.hpp"

namespace gloowatch::client {

// Whether LogSignatures()[index].regex is a valid RE2 pattern.
bool SignatureCompiles(size_t index);

// The formats of a line's leading timestamp: ISO dates (Python logging,
// torch elastic), glog's and c10's "W0501 12:00:00.1" (no year), syslog's
// "May  1 12:00:00" (no year). Only times of one kind compare.
enum class LogTimeKind { kNone, kDated, kMonthDay, kSyslog };

struct SignatureHit {
  std::string id;
  const LogSignature* signature = nullptr;
  int count = 0;
  int first_line = 0;  // 1-based
  int last_line = 0;
  std::string example;      // first matching line, trimmed and truncated
  int line_of_example = 0;  // the line `example`, `detail` and `severity` come from
  std::string detail;       // the signature's detail, filled from that line
  // The first matching line's severity: the signature's, or lower when the
  // line itself was logged as a warning (a retry that may yet succeed).
  LogSeverity severity = LogSeverity::kInfo;
  // The timestamp that line starts with, if any: its text, and seconds on a
  // scale shared by lines of the same `time_kind`; for kDated, unix seconds
  // (read in the local time zone, TZ, as logs print it).
  std::string time;
  LogTimeKind time_kind = LogTimeKind::kNone;
  double time_seconds = 0;
};

struct LogExplanation {
  std::string source;  // file name or "-"
  int lines = 0;
  bool binary = false;             // NUL bytes seen; lines are still scanned
  std::vector<SignatureHit> hits;  // ordered by first_line
  int root_cause = -1;             // index into hits of the root cause, -1 without errors
  LogSeverity worst = LogSeverity::kInfo;
  // Whose log this is: "rank N" from the file name or the "[rankN]:" prefix
  // PyTorch puts on its lines, else empty.
  std::string rank;
};

LogExplanation ExplainLog(std::istream& in, absl::string_view source);

std::string RenderExplanationText(const LogExplanation& e);
nlohmann::json ExplanationToJson(const LogExplanation& e);
// 0 nothing found (or information only), 1 warnings only, 2 an error.
int ExplanationExitCode(const LogExplanation& e);

// Several logs of one job (one per rank or per host): the root cause across
// them is the error of the earliest stage, the earliest in time among equals
// where their timestamps compare; every other log's own root cause is listed
// after it, in time order, as its echo.
struct CauseRef {
  int log = -1;  // index into logs
  int hit = -1;  // index into logs[log].hits
};
struct JobExplanation {
  std::vector<LogExplanation> logs;
  CauseRef root;
  std::vector<CauseRef> echoes;
};
JobExplanation ExplainJob(std::vector<LogExplanation> logs);
std::string RenderJobText(const JobExplanation& job);
nlohmann::json JobToJson(const JobExplanation& job);
int JobExitCode(const JobExplanation& job);

}  // namespace gloowatch::client
