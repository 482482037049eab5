// The outcome of one check (diagnose, and any command that lists checks).
#pragma once

namespace gloowatch::client {

// Worst last (a check's status is the max of what it found). SKIP: the check
// had nothing to look at (no daemon answered, a variable unset), which is
// not a pass.
enum class Severity { kSkip, kPass, kWarn, kFail };

inline const char* SeverityName(Severity s) {  // SKIP, PASS, WARN, FAIL
  switch (s) {
    case Severity::kSkip:
      return "SKIP";
    case Severity::kPass:
      return "PASS";
    case Severity::kWarn:
      return "WARN";
    case Severity::kFail:
      return "FAIL";
  }
  return "FAIL";
}

}  // namespace gloowatch::client
