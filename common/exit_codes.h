// Exit codes of gloowatchd and its transport process (sysexits.h values, so
// systemd's RestartPreventExitStatus= and scripts can tell them apart).
#pragma once

namespace gloowatch {

inline constexpr int kExitOk = 0;
inline constexpr int kExitUsage = 64;        // EX_USAGE: a bad flag or argument
inline constexpr int kExitUnavailable = 69;  // EX_UNAVAILABLE: a port or the Gloo interface
inline constexpr int kExitConfig = 78;       // EX_CONFIG: invalid config, restarting won't help

}  // namespace gloowatch
