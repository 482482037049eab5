// Process exit codes shared by every subcommand (sysexits.h numbering for
// usage and input errors so scripts can tell "cluster bad" from "call bad").
#pragma once

namespace gloowatch::client {

inline constexpr int kExitOk = 0;            // healthy / all checks pass
inline constexpr int kExitDegraded = 1;      // degraded / warnings
inline constexpr int kExitFailed = 2;        // failed / unreachable / check failures
inline constexpr int kExitUsage = 64;        // EX_USAGE: bad flag or argument
inline constexpr int kExitDataErr = 65;      // EX_DATAERR: malformed input file
inline constexpr int kExitNoInput = 66;      // EX_NOINPUT: input file missing
inline constexpr int kExitUnavailable = 69;  // EX_UNAVAILABLE: daemon rejected a call
inline constexpr int kExitCantCreate = 73;   // EX_CANTCREAT: cannot write the report
inline constexpr int kExitSoftware = 70;     // EX_SOFTWARE: internal error

}  // namespace gloowatch::client
