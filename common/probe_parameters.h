// The probe protocol's version and the parameters a requester proposes in
// OpenProbePair: checked by the daemon before it asks its transport, and by
// the transport before it creates pairs.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "proto/gloowatch.pb.h"

namespace gloowatch {

inline constexpr uint32_t kProbeProtocolVersion = 1;

// Validates probe parameters received from a peer (sizes we can serve
// without unbounded memory or time).
absl::Status ValidateProbeParameters(const v1::ProbeParameters& p);

// The command pairs (flows) the parameters ask for: an older requester
// sends 0, which is one.
uint32_t ProbeFlows(const v1::ProbeParameters& p);

}  // namespace gloowatch
