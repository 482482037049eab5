// Where our code calls into Gloo. Gloo reports errors by throwing
// (IoException, EnforceNotMet, ...), our modules by absl::Status, so every
// call that can throw runs inside GuardGloo; and every Gloo device is made by
// CreateGlooDevice (the probes' one and each preflight mesh's).
#pragma once

#include <exception>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "gloo/transport/device.h"

namespace gloowatch {

// Runs `fn` (which returns an absl::Status), turning any exception into
// UNAVAILABLE "<what>: <exception text>": the probe's (or the mesh's)
// boundary, where a Gloo failure becomes a failure we classify.
template <typename Fn>
absl::Status GuardGloo(absl::string_view what, Fn&& fn) {
  try {
    return fn();
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat(what, ": ", e.what()));
  }
}

// Gloo's TCP event loop thread wakes every 10 ms to look for shutdown
// (tcp::Loop::run), 6,000 times a minute when idle: on the development VM that
// was 40% of the probing CPU with 31 peers. The thread inherits the timer
// slack of the thread that creates the device, so the device is created under
// this slack and the kernel may defer those idle wake-ups by up to as much.
// Socket events still wake the loop at once; only waits for an idle tick
// (taking a pair out of the loop when it closes or enters sync mode, the
// device's destruction) take up to this long.
inline constexpr absl::Duration kGlooLoopTimerSlack = absl::Milliseconds(100);

// A Gloo TCP device bound to `address`, a numeric IPv4 or IPv6 address, its
// event loop thread under `loop_timer_slack` (none: the creating thread's own
// slack); the creating thread's slack is left as it was. FAILED_PRECONDITION
// naming the address when it is not numeric or Gloo refuses it.
absl::StatusOr<std::shared_ptr<gloo::transport::Device>> CreateGlooDevice(
    const std::string& address,
    std::optional<absl::Duration> loop_timer_slack = kGlooLoopTimerSlack);

}  // namespace gloowatch
