// The transport as a thread of the test process: a TransportLauncher that
// runs a Transport (transport/transport.h) on a std::thread over its end of
// the socketpair, on the clock the test injects. With it, whole daemons and
// their transports run in one process (InProcessDaemons). Test-only: the
// daemon binary keeps its transport in a process of its own.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "common/clock.h"
#include "daemon/supervisor/transport_launcher.h"

namespace gloowatch::inprocess {

class ThreadLauncher final : public TransportLauncher {
 public:
  explicit ThreadLauncher(const Clock* clock);

  // A LaunchedTransport with no pid (-1) and the name "thread": Kill stops
  // the Transport, Wait joins its thread and destroys it (which joins every
  // thread it started).
  absl::StatusOr<std::unique_ptr<LaunchedTransport>> Launch(
      int fd, const std::string& gloo_address) override;

  // Transports launched and not yet ended and destroyed.
  int alive() const { return alive_->load(); }

 private:
  const Clock* const clock_;
  // Shared with each launched transport, which may outlive the launcher.
  const std::shared_ptr<std::atomic<int>> alive_;
};

}  // namespace gloowatch::inprocess
