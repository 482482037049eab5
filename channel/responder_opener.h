// How a request for probe pairs reaches whoever serves them: in the daemon
// the transport's supervisor, in tests a registry in the same process.
#pragma once

#include <functional>

#include "absl/status/statusor.h"
#include "proto/gloowatch.pb.h"

namespace gloowatch {

// Creates and starts the serving side of a probe pair for a request the
// PeerService accepted.
class ResponderOpener {
 public:
  using Done = std::function<void(absl::StatusOr<v1::OpenProbePairResponse>)>;
  virtual ~ResponderOpener() = default;
  // Calls `done` exactly once, on any thread, perhaps before returning.
  virtual void StartOpen(const v1::OpenProbePairRequest& request, Done done) = 0;
};

}  // namespace gloowatch
