// What we know about one peer: state, latest and windowed figures, failures.
// Written by the peer's prober, read by the status API; mirrors every change
// into the peer's Prometheus series so /metrics and the API agree.
#pragma once

#include <deque>
#include <memory>
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
#include "daemon/metrics.h"
#include "proto/gloowatch.pb.h"

namespace gloowatch {

class PeerTracker final : public ProbeObserver {
 public:
  PeerTracker(PeerConfig peer, absl::Duration latency_window, absl::Duration failure_window,
              std::optional<double> link_speed_bytes_per_second,
              std::unique_ptr<PeerMetrics> metrics, const Clock* clock);

  const PeerConfig& peer() const { return peer_; }

  void SetConnecting() override;
  void SetUp(const std::string& gloo_address, const std::string& peer_version) override;
  void RecordFailure(v1::FailureReason reason, const std::string& message) override;
  void RecordRtts(const std::vector<absl::Duration>& rtts) override;
  void RecordOffset(const OffsetEstimate& estimate) override;
  void RecordBandwidth(BandwidthDirection direction, const BandwidthSample& sample) override;
  void RecordTcp(const TcpSample& sample) override;
  void RecordBandwidthDue(absl::Time at) override;

  v1::PeerStatus Snapshot() const;

 private:
  void TrimFailures(absl::Time now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const PeerConfig peer_;
  const absl::Duration failure_window_;
  const std::optional<double> link_speed_;
  const std::unique_ptr<PeerMetrics> metrics_;
  const Clock* const clock_;

  mutable absl::Mutex mu_;
  v1::PeerStatus status_ ABSL_GUARDED_BY(mu_);
  PercentileWindow rtt_window_ ABSL_GUARDED_BY(mu_);
  mutable std::deque<absl::Time> failure_times_ ABSL_GUARDED_BY(mu_);
  struct TcpWindowEntry {
    absl::Time at;
    uint64_t lost, sent;
  };
  std::deque<TcpWindowEntry> tcp_window_ ABSL_GUARDED_BY(mu_);
  bool ever_up_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace gloowatch
