// The systemd service protocol (sd_notify(3)): readiness, stopping and
// watchdog keep-alives. Every call is a no-op when the daemon does not run
// under a service manager (NOTIFY_SOCKET unset), so callers need no checks.
#pragma once

#include <string>

#include "absl/time/time.h"

namespace gloowatch {

class SystemdNotifier {
 public:
  // Reads WATCHDOG_USEC / WATCHDOG_PID once (sd_watchdog_enabled(3)); the
  // environment is left as it is.
  SystemdNotifier();

  // READY=1 plus a STATUS= line: the ports listen, probing has started.
  void Ready(const std::string& status);
  // RELOADING=1 with a STATUS= line: a reload (SIGHUP) has begun; Ready()
  // ends it.
  void Reloading();
  // STOPPING=1: shutdown has begun.
  void Stopping();
  // STATUS=: free text shown by `systemctl status`.
  void Status(const std::string& status);
  // WATCHDOG=1. Call at least every watchdog_interval() / 2.
  void WatchdogPing();

  // Whether the manager expects watchdog pings, and how often it wants
  // them at the latest (WATCHDOG_USEC); ZeroDuration() when not enabled.
  bool watchdog_enabled() const { return watchdog_ > absl::ZeroDuration(); }
  absl::Duration watchdog_interval() const { return watchdog_; }

 private:
  void Send(const std::string& state);

  absl::Duration watchdog_ = absl::ZeroDuration();
  bool warned_ = false;  // a failing socket is reported once, not every ping
};

}  // namespace gloowatch
