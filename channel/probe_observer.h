// Where a peer prober reports what it sees: the peer's tracker in the daemon,
// or the channel to it from the transport process.
#pragma once

#include <cstdint>
#include <optional>
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

// What one flow's command pair (probe.flows) sent and retransmitted since it
// was last read.
struct FlowTcpSample {
  uint32_t flow = 0;
  uint64_t retransmitted_segments = 0;
  uint64_t sent_segments = 0;
  uint64_t spurious_retransmitted_segments = 0;
};

// What the kernel's TCP statistics of the probe pairs' sockets (ours, the
// sending side) added since the previous sample.
struct TcpSample {
  uint64_t retransmitted_segments = 0;
  uint64_t sent_segments = 0;
  // Retransmissions the peer had already received (not losses).
  uint64_t spurious_retransmitted_segments = 0;
  // The command pair's smoothed RTT and its variation, when it was read.
  std::optional<absl::Duration> rtt, rtt_variation;
  // The same per flow, for the flows read (their sum is part of the totals
  // above, which also hold the bulk pair's).
  std::vector<FlowTcpSample> flows = {};
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
  virtual void RecordTcp(const TcpSample& /*sample*/) {}
  // A latency probe timed out: its ping was lost. A Gloo read that times out
  // breaks the pair, so RecordFailure(timeout) follows and the session ends.
  virtual void RecordLatencyProbeLost() {}
  // A probe over flow `flow` failed; RecordFailure with the session's
  // failure follows.
  virtual void RecordFlowFailure(uint32_t /*flow*/) {}
  // What the command pair sent the peer has gone unacknowledged for at
  // least `at_least` while our kernel retransmitted it `retransmissions`
  // times in a row; 0: acknowledged again (transport/peer_prober.h,
  // WatchUnacknowledged).
  virtual void RecordUnacknowledged(uint32_t /*retransmissions*/, absl::Duration /*at_least*/) {}
  // When the next bandwidth probe is due (wall clock), whenever that changes.
  virtual void RecordBandwidthDue(absl::Time /*at*/) {}
  // What a probe's replies said of the peer's daemon: how long it had been
  // silent, or nullopt when the peer's transport does not say (an older one).
  virtual void RecordPeerDaemon(std::optional<double> /*silent_seconds*/) {}
  // The prober is about to wait: what it recorded may be held until now, no
  // longer (an observer that sends its records elsewhere batches them).
  virtual void Flush() {}
};

}  // namespace gloowatch
