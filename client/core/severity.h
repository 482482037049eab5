// The outcome of one check (diagnose, and any command that lists checks).
#pragma once

namespace gloowatch::client {

enum class Severity { kPass, kWarn, kFail };

inline const char* SeverityName(Severity s) {  // PASS, WARN, FAIL
  switch (s) {
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
