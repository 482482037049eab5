#include "transport/gloo_boundary.h"

#include <sys/prctl.h>

#include "gloo/transport/tcp/device.h"

namespace gloowatch {

absl::StatusOr<std::shared_ptr<gloo::transport::Device>> CreateGlooDevice(
    const std::string& address, std::optional<absl::Duration> loop_timer_slack) {
  const int previous_slack = loop_timer_slack ? prctl(PR_GET_TIMERSLACK) : 0;
  if (loop_timer_slack) {
    prctl(PR_SET_TIMERSLACK,
          static_cast<unsigned long>(absl::ToInt64Nanoseconds(*loop_timer_slack)));
  }
  absl::StatusOr<std::shared_ptr<gloo::transport::Device>> device;
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = address;
    device = gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    device = absl::FailedPreconditionError(
        absl::StrCat("cannot create a Gloo device on ", address, ": ", e.what()));
  }
  if (previous_slack > 0) prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(previous_slack));
  return device;
}

}  // namespace gloowatch
