// What we know about one peer: state, latest and windowed figures, failures,
// and the cumulative counts its Prometheus series need. Written by the peer's
// prober, read as one snapshot by the status API and by the /metrics
// collector (peer_series), so both show the same figures.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "channel/probe_observer.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/estimators.h"
#include "proto/gloowatch.pb.h"

namespace gloowatch {

// Upper bounds of the RTT histogram buckets, in seconds (10 us .. 2 s).
const std::vector<double>& RttBucketBounds();

// One consistent reading of a peer.
struct PeerSnapshot {
  // What GetStatus serves; failures by reason and the TCP totals are read
  // from here by the metrics too.
  v1::PeerStatus status;
  // gloowatch_peer_up: set by SetUp, cleared only by a failure (a prober
  // that restarts without one leaves it set while the state says connecting).
  bool up = false;
  // Times the peer went from up to down, since the tracker was made
  // (gloowatch_peer_drops_total); status.drops_in_window counts the recent ones.
  uint64_t drops = 0;
  // Completed probes by kind; status.probes_ok is their sum.
  uint64_t latency_probes = 0;
  uint64_t skew_probes = 0;
  uint64_t bandwidth_probes = 0;
  // RTT samples per bucket of RttBucketBounds() (not cumulative), plus one
  // for +Inf; and their sum.
  std::vector<uint64_t> rtt_buckets;
  double rtt_sum_seconds = 0;
  // What the bandwidth is compared to (link ratio), when known.
  std::optional<double> link_speed_bytes_per_second;
  // Each direction's better of its last two transfers: what the link ratio
  // judges, so that one transfer slowed by a busy host is no slow link
  // while a capped link (every transfer slow) still is.
  std::optional<double> tx_judged_bytes_per_second, rx_judged_bytes_per_second;
};

class PeerTracker final : public ProbeObserver {
 public:
  PeerTracker(PeerConfig peer, absl::Duration latency_window, absl::Duration failure_window,
              std::optional<double> link_speed_bytes_per_second, const Clock* clock);

  const PeerConfig& peer() const { return peer_; }

  void SetConnecting() override;
  void SetUp(const std::string& gloo_address, const std::string& peer_version) override;
  void RecordFailure(v1::FailureReason reason, const std::string& message) override;
  void RecordRtts(const std::vector<absl::Duration>& rtts) override;
  void RecordOffset(const OffsetEstimate& estimate) override;
  void RecordBandwidth(BandwidthDirection direction, const BandwidthSample& sample) override;
  void RecordTcp(const TcpSample& sample) override;
  void RecordLatencyProbeLost() override;
  void RecordFlowFailure(uint32_t flow) override;
  void RecordBandwidthDue(absl::Time at) override;
  void RecordPeerDaemon(std::optional<double> silent_seconds) override;
  void RecordUnacknowledged(uint32_t retransmissions, absl::Duration at_least) override;

  // Everything above under the one mutex: GetStatus and /metrics read the
  // same figures.
  PeerSnapshot Snapshot() const;

 private:
  void TrimFailures(absl::Time now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // TcpFigures' window fields (loss ratio, segments, the recent part) as of
  // `now`, from tcp_window_.
  void TcpWindowFigures(absl::Time now, v1::TcpFigures* tcp) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // PeerStatus.flows as of `now`, from flows_.
  void FlowFigures(absl::Time now, v1::PeerStatus* status) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const PeerConfig peer_;
  const absl::Duration failure_window_;
  const std::optional<double> link_speed_;
  const Clock* const clock_;

  mutable absl::Mutex mu_;
  // Snapshot() fills in status.failures_in_window.
  PeerSnapshot figures_ ABSL_GUARDED_BY(mu_);
  PercentileWindow rtt_window_ ABSL_GUARDED_BY(mu_);
  // The last minute of it, for LatencyFigures.recent_p50_seconds; expired
  // when read, so a link with no round trips for a minute has none.
  mutable PercentileWindow recent_rtt_window_ ABSL_GUARDED_BY(mu_);
  mutable std::deque<absl::Time> failure_times_ ABSL_GUARDED_BY(mu_);
  // When the peer went from up to down, within the failure window.
  mutable std::deque<absl::Time> drop_times_ ABSL_GUARDED_BY(mu_);
  // When latency probes were lost, within the failure window.
  mutable std::deque<absl::Time> lost_probe_times_ ABSL_GUARDED_BY(mu_);
  struct TcpWindowEntry {
    absl::Time at;
    uint64_t lost, sent;
  };
  // Expired when read, like the recent RTTs: a peer that stopped reporting
  // (down) stops showing an old loss after a minute.
  mutable std::deque<TcpWindowEntry> tcp_window_ ABSL_GUARDED_BY(mu_);
  // Per flow (probe.flows, at most kMaxProbeFlows): totals, the loss window
  // (expired when read, like tcp_window_) and the failures in the window.
  struct FlowState {
    uint64_t sent = 0, lost = 0, failures = 0;
    std::deque<TcpWindowEntry> window;
    std::deque<absl::Time> failure_times;
  };
  mutable std::map<uint32_t, FlowState> flows_ ABSL_GUARDED_BY(mu_);
  // The transfer before the latest, per direction (PeerSnapshot's judged
  // rates).
  std::optional<double> previous_tx_ ABSL_GUARDED_BY(mu_), previous_rx_ ABSL_GUARDED_BY(mu_);
  // PeerStatus.unacknowledged as last reported, and when.
  std::optional<absl::Time> unacknowledged_at_ ABSL_GUARDED_BY(mu_);
  // Acknowledged again within the session: the next TCP read carries the
  // cut's retransmissions (RecordTcp).
  bool cut_losses_pending_ ABSL_GUARDED_BY(mu_) = false;
  bool ever_up_ ABSL_GUARDED_BY(mu_) = false;

  // A new session, or a state change: no cut stands.
  void ForgetUnacknowledged() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
};

}  // namespace gloowatch
