#include "daemon/system/systemd_notify.h"

#include <systemd/sd-daemon.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/log.h"

namespace gloowatch {

SystemdNotifier::SystemdNotifier() {
  uint64_t usec = 0;
  // > 0 only when WATCHDOG_USEC is set and WATCHDOG_PID is unset or ours.
  if (sd_watchdog_enabled(/*unset_environment=*/0, &usec) > 0 && usec > 0) {
    watchdog_ = absl::Microseconds(static_cast<int64_t>(usec));
  }
}

void SystemdNotifier::Send(const std::string& state) {
  const int r = sd_notify(/*unset_environment=*/0, state.c_str());
  if (r < 0 && !warned_) {
    warned_ = true;
    GW_LOG(kWarning, "sd_notify to $NOTIFY_SOCKET failed: %s", std::strerror(-r));
  }
}

void SystemdNotifier::Ready(const std::string& status) {
  Send(absl::StrCat("READY=1\nSTATUS=", status));
}

void SystemdNotifier::Reloading() { Send("RELOADING=1\nSTATUS=reloading the config"); }

void SystemdNotifier::Stopping() { Send("STOPPING=1\nSTATUS=shutting down"); }

void SystemdNotifier::Status(const std::string& status) { Send(absl::StrCat("STATUS=", status)); }

void SystemdNotifier::WatchdogPing() { Send("WATCHDOG=1"); }

}  // namespace gloowatch
