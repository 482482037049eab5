// Where a peer prober reports what it sees: the peer's tracker in the daemon,
// or the channel to it from the transport process.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/estimators.h"
#include "proto/gloowatch.pb.h"

namespace gloowatch {

enum class BandwidthDirection { kTx, kRx };

struct BandwidthSample {
  double bytes_per_second;
  uint64_t bytes;
  absl::Duration elapsed;
};

class ProbeObserver {
 public:
  virtual ~ProbeObserver() = default;
  virtual void SetConnecting() = 0;
  virtual void SetUp(const std::string& gloo_address, const std::string& peer_version) = 0;
  // Marks the peer down with a classified reason.
  virtual void RecordFailure(v1::FailureReason reason, const std::string& message) = 0;
  virtual void RecordRtts(const std::vector<absl::Duration>& rtts) = 0;
  virtual void RecordOffset(const OffsetEstimate& estimate) = 0;
  virtual void RecordBandwidth(BandwidthDirection direction, const BandwidthSample& sample) = 0;
};

}  // namespace gloowatch
