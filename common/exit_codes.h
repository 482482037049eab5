// Exit codes of every gloowatch program (sysexits.h values for the errors, so
// systemd's RestartPreventExitStatus= and scripts can tell "cluster bad" from
// "call bad"). Only the programs' mains turn a status into one of these.
#pragma once

namespace gloowatch {

inline constexpr int kExitOk = 0;            // healthy / all checks pass / a clean stop
inline constexpr int kExitDegraded = 1;      // gloowatch: degraded / warnings
inline constexpr int kExitFailed = 2;        // gloowatch: failed / unreachable / check failures
inline constexpr int kExitUsage = 64;        // EX_USAGE: a bad flag or argument
inline constexpr int kExitDataErr = 65;      // EX_DATAERR: malformed input
inline constexpr int kExitNoInput = 66;      // EX_NOINPUT: an input file is missing
inline constexpr int kExitUnavailable = 69;  // EX_UNAVAILABLE: a port, the Gloo interface, a daemon
inline constexpr int kExitSoftware = 70;     // EX_SOFTWARE: internal error
inline constexpr int kExitCantCreate = 73;   // EX_CANTCREAT: cannot write the output
inline constexpr int kExitConfig = 78;       // EX_CONFIG: invalid config, restarting won't help

}  // namespace gloowatch
