#include "transport/gloo_boundary.h"

#include <netdb.h>
#include <sys/prctl.h>
#include <sys/socket.h>

#include "gloo/transport/tcp/device.h"

namespace gloowatch {

absl::StatusOr<std::shared_ptr<gloo::transport::Device>> CreateGlooDevice(
    const std::string& address, std::optional<absl::Duration> loop_timer_slack) {
  // Gloo resolves `address` with getaddrinfo but takes only -1 for a failure
  // (the EAI_* codes are other negative numbers) and then walks a result list
  // that was never set: a name that does not resolve crashes the process now
  // and then. So Gloo gets only what resolves without a lookup, as the
  // numeric address the daemon chose does; a name is refused here.
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(address.c_str(), nullptr, &hints, &found); rc != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create a Gloo device on ", address, ": ", gai_strerror(rc)));
  }
  freeaddrinfo(found);
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
