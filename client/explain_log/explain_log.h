// Maps log lines from PyTorch/Gloo jobs to known failure signatures with a
// cause and a fix (the table: signatures.h), after a reading stage that
// normalises them (log_lines.h); an error no signature knows is reported by
// the fallback (unrecognised.h).
#pragma once

#include <cstddef>
#include <istream>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "client/explain_log/log_input.h"
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
  // "N" of the "[rankN]:" prefix on that line, or "".
  std::string rank;
  // Whether this is the fallback (unrecognised.h): an error of the
  // distributed stack that no signature knows, with low confidence.
  bool unrecognised() const;
};

struct LogExplanation {
  std::string source;  // file name or "-"
  int lines = 0;       // physical lines
  uint64_t bytes = 0;  // bytes of text read
  // Binary: not a text log (`not_text` says why), or a text log that holds
  // NUL bytes (a crash leaves runs of them; they are skipped).
  bool binary = false;
  std::string not_text;            // why the input is no text log; nothing else is filled then
  std::string format = "text";     // "text", "gzip", "zstd" (from a LogStream)
  std::string input_warning;       // the input ended early: a truncated or corrupt stream
  std::vector<SignatureHit> hits;  // ordered by first_line
  int root_cause = -1;             // index into hits of the root cause, -1 without errors
  LogSeverity worst = LogSeverity::kInfo;
  // Whose log this is: "rank N" from the file name or the "[rankN]:" prefix
  // PyTorch puts on its lines (when all of them name one rank), else empty.
  std::string rank;
  // The host that wrote it, and its clock minus the reference clock as
  // gloowatch measured it (client/sources/clock_offsets.h): set by the
  // caller when logs of several hosts are put in one order; its times are
  // taken as time - offset then.
  std::string host;
  std::optional<double> clock_offset_seconds;
};

LogExplanation ExplainLog(std::istream& in, absl::string_view source);
// The same from an opened log, with what decoding it found: a stream that
// ended early is explained up to there, with `input_warning` set.
LogExplanation ExplainLog(LogStream& in, absl::string_view source);

// Why `e` cannot be explained at all (exit 65): its input is not a text log,
// or a compressed stream gave no text before it broke. OK otherwise (an
// empty log is explained as empty).
absl::Status InputError(const LogExplanation& e);

std::string RenderExplanationText(const LogExplanation& e);
nlohmann::json ExplanationToJson(const LogExplanation& e);
// 0 nothing found (or information only), 1 warnings only, 2 an error; a
// log whose input ended early is at least 1 (it cannot be called clean).
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
  // The host whose clock the logs' times were corrected to (empty: not
  // corrected), and where the offsets came from ("daemons", "prometheus").
  std::string clock_reference, clock_source;
  // Why the times were not corrected, when that was asked for.
  std::string clock_note;
};
// The dated time of a hit on the reference clock: its own, less its log's
// measured clock offset.
double CorrectedSeconds(const LogExplanation& log, const SignatureHit& hit);
JobExplanation ExplainJob(std::vector<LogExplanation> logs);
std::string RenderJobText(const JobExplanation& job);
nlohmann::json JobToJson(const JobExplanation& job);
int JobExitCode(const JobExplanation& job);

}  // namespace gloowatch::client
