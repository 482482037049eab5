// The signature table: every log message explain-log knows, with its cause,
// stage and fix. Data only; the reading is in explain_log.cc.
#pragma once

#include <cstddef>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace gloowatch::client {

enum class LogSeverity { kInfo, kWarning, kError };
const char* LogSeverityName(LogSeverity s);

// How close a cause is to the root of a failure: a killed rank comes before
// the timeouts it causes elsewhere. The root cause of a log is its error of
// the lowest stage (the earliest line among equals).
enum class Stage {
  kProcess = 1,  // a rank was killed or crashed
  kSetup,        // configuration: interfaces, address families, ports, backends, mismatches
  kConnect,      // reaching a peer or the store
  kPeerGone,     // a peer's connection ended under us
  kWait,         // something never arrived: timeouts
  kExited,       // a rank exited with an error code (an exception named elsewhere)
  kAftermath,    // a consequence of an earlier failure
};

struct LogSignature {
  const char* id;
  const char* regex;  // RE2 syntax, matched case-insensitively anywhere in a line
  LogSeverity severity;
  Stage stage;
  const char* cause;
  const char* fix;
  // What the line says, from its groups (RE2 rewrite, \1 ...), or nullptr.
  const char* detail = nullptr;
  // A test on the values in a matching line that a regex cannot make (one
  // count above another), or nullptr; a line it rejects is left to the next
  // signature that matches.
  bool (*accept)(absl::string_view line) = nullptr;
  // Ids of errors, space-separated, that this signature's line explains when
  // it comes before them in one log (see explains_in_any_order), or nullptr:
  // a retry warning that names why the error at the end happened (the
  // store's host does not resolve, so its connect timed out) is that log's
  // root cause, raised to an error.
  const char* explains = nullptr;
  // Whether a line of it logged as a warning is a retry that may yet succeed
  // (and so only a warning); not for a signal, which no one retries.
  bool warning_is_retry = true;
  // Whether it explains those errors wherever it is in the log, not only
  // when it came before them: evidence of a state (a local firewall denying
  // connects, a rank bound to loopback) rather than the retry that led to
  // the error, which another connection's later retry would not be.
  bool explains_in_any_order = false;
};

// In priority order: a line counts for the first signature that matches it.
absl::Span<const LogSignature> LogSignatures();

}  // namespace gloowatch::client
