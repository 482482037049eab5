#include "daemon/peer_tracker.h"

#include <algorithm>

#include "common/failure.h"
#include "common/proto_time.h"

namespace gloowatch {
namespace {

// Entries older than the window go; the deque never holds more than this so
// a flapping peer cannot grow memory.
constexpr size_t kMaxFailureTimes = 100000;

// The TCP loss ratio's window: a dozen reports of the transport (every 5 s),
// enough segments for a ratio of a few percent to mean something.
constexpr absl::Duration kTcpLossWindow = absl::Seconds(60);
constexpr size_t kMaxTcpWindowEntries = 1000;

}  // namespace

PeerTracker::PeerTracker(PeerConfig peer, absl::Duration latency_window,
                         absl::Duration failure_window, std::optional<double> link_speed,
                         std::unique_ptr<PeerMetrics> metrics, const Clock* clock)
    : peer_(std::move(peer)),
      failure_window_(failure_window),
      link_speed_(link_speed),
      metrics_(std::move(metrics)),
      clock_(clock),
      rtt_window_(latency_window) {
  status_.set_name(peer_.name);
  status_.set_grpc_address(peer_.grpc.ToString());
  status_.set_state(v1::PEER_STATE_CONNECTING);
  status_.mutable_latency()->set_window_seconds(absl::ToDoubleSeconds(latency_window));
}

void PeerTracker::SetConnecting() {
  absl::MutexLock lock(&mu_);
  if (status_.state() != v1::PEER_STATE_DOWN) status_.set_state(v1::PEER_STATE_CONNECTING);
  status_.clear_next_bandwidth_probe();  // a new session schedules anew
}

void PeerTracker::RecordBandwidthDue(absl::Time at) {
  absl::MutexLock lock(&mu_);
  *status_.mutable_next_bandwidth_probe() = ToProtoTimestamp(at);
}

void PeerTracker::SetUp(const std::string& gloo_address, const std::string& peer_version) {
  absl::MutexLock lock(&mu_);
  if (status_.state() != v1::PEER_STATE_UP)
    *status_.mutable_up_since() = ToProtoTimestamp(clock_->Now());
  status_.set_state(v1::PEER_STATE_UP);
  ever_up_ = true;
  status_.set_gloo_address(gloo_address);
  status_.set_peer_version(peer_version);
  metrics_->SetUp(true);
}

void PeerTracker::RecordFailure(v1::FailureReason reason, const std::string& message) {
  const absl::Time now = clock_->Now();
  absl::MutexLock lock(&mu_);
  status_.set_state(v1::PEER_STATE_DOWN);
  status_.clear_up_since();
  status_.clear_next_bandwidth_probe();
  v1::Failure* failure = status_.mutable_last_failure();
  failure->set_reason(reason);
  failure->set_message(message);
  *failure->mutable_time() = ToProtoTimestamp(now);
  (*status_.mutable_failures_by_reason())[std::string(ReasonName(reason))]++;
  status_.set_probes_failed(status_.probes_failed() + 1);
  // Until a peer has been up once, failures mean "not started yet" (the state
  // says so); counting them would keep a fresh cluster degraded for a window.
  if (ever_up_) {
    failure_times_.push_back(now);
    if (failure_times_.size() > kMaxFailureTimes) failure_times_.pop_front();
  }
  metrics_->SetUp(false);
  metrics_->CountFailure(reason);
}

void PeerTracker::RecordRtts(const std::vector<absl::Duration>& rtts) {
  if (rtts.empty()) return;
  const absl::Time now = clock_->Now();
  absl::MutexLock lock(&mu_);
  for (absl::Duration rtt : rtts) {
    const double seconds = absl::ToDoubleSeconds(rtt);
    rtt_window_.Add(now, seconds);
    metrics_->ObserveRtt(seconds);
  }
  rtt_window_.Expire(now);
  v1::LatencyFigures* latency = status_.mutable_latency();
  latency->set_last_seconds(absl::ToDoubleSeconds(rtts.back()));
  const double p50 = rtt_window_.Percentile(0.5).value_or(0);
  const double p99 = rtt_window_.Percentile(0.99).value_or(0);
  latency->set_p50_seconds(p50);
  latency->set_p99_seconds(p99);
  latency->set_samples_in_window(rtt_window_.size());
  metrics_->SetRttPercentiles(p50, p99);
  metrics_->CountProbe(PeerMetrics::Probe::kLatency);
  status_.set_probes_ok(status_.probes_ok() + 1);
}

void PeerTracker::RecordOffset(const OffsetEstimate& estimate) {
  absl::MutexLock lock(&mu_);
  v1::ClockFigures* clock = status_.mutable_clock();
  clock->set_offset_seconds(absl::ToDoubleSeconds(estimate.offset));
  clock->set_error_seconds(absl::ToDoubleSeconds(estimate.error));
  *clock->mutable_measured_at() = ToProtoTimestamp(clock_->Now());
  metrics_->SetClockOffset(clock->offset_seconds(), clock->error_seconds());
  metrics_->CountProbe(PeerMetrics::Probe::kSkew);
  status_.set_probes_ok(status_.probes_ok() + 1);
}

void PeerTracker::RecordBandwidth(BandwidthDirection direction, const BandwidthSample& sample) {
  std::optional<double> ratio;
  if (link_speed_ && *link_speed_ > 0) ratio = sample.bytes_per_second / *link_speed_;
  const bool tx = direction == BandwidthDirection::kTx;
  absl::MutexLock lock(&mu_);
  v1::BandwidthFigures* bw = status_.mutable_bandwidth();
  if (tx) {
    bw->set_tx_bytes_per_second(sample.bytes_per_second);
  } else {
    bw->set_rx_bytes_per_second(sample.bytes_per_second);
  }
  if (link_speed_ && *link_speed_ > 0) {
    double slowest = sample.bytes_per_second;
    if (bw->has_tx_bytes_per_second()) slowest = std::min(slowest, bw->tx_bytes_per_second());
    if (bw->has_rx_bytes_per_second()) slowest = std::min(slowest, bw->rx_bytes_per_second());
    bw->set_link_ratio(slowest / *link_speed_);
  }
  *bw->mutable_measured_at() = ToProtoTimestamp(clock_->Now());
  metrics_->SetBandwidth(tx, sample.bytes_per_second, ratio);
  metrics_->CountProbe(PeerMetrics::Probe::kBandwidth);
  status_.set_probes_ok(status_.probes_ok() + 1);
}

void PeerTracker::RecordTcp(const TcpSample& sample) {
  const absl::Time now = clock_->Now();
  absl::MutexLock lock(&mu_);
  // A retransmission is a loss unless the peer said it had the original.
  const uint64_t lost =
      sample.retransmitted_segments -
      std::min(sample.spurious_retransmitted_segments, sample.retransmitted_segments);
  tcp_window_.push_back({now, lost, sample.sent_segments});
  while (tcp_window_.size() > kMaxTcpWindowEntries ||
         tcp_window_.front().at < now - kTcpLossWindow) {
    tcp_window_.pop_front();
  }
  uint64_t lost_in_window = 0, sent = 0;
  for (const TcpWindowEntry& e : tcp_window_) {
    lost_in_window += e.lost;
    sent += e.sent;
  }
  v1::TcpFigures* tcp = status_.mutable_tcp();
  tcp->set_retransmitted_segments(tcp->retransmitted_segments() + sample.retransmitted_segments);
  tcp->set_sent_segments(tcp->sent_segments() + sample.sent_segments);
  tcp->set_spurious_retransmitted_segments(tcp->spurious_retransmitted_segments() +
                                           sample.spurious_retransmitted_segments);
  tcp->set_window_seconds(absl::ToDoubleSeconds(kTcpLossWindow));
  tcp->set_window_sent_segments(sent);
  std::optional<double> ratio;
  if (sent > 0) {
    ratio = static_cast<double>(lost_in_window) / static_cast<double>(sent);
    tcp->set_loss_ratio(*ratio);
  }
  std::optional<double> rtt, rtt_variation;
  if (sample.rtt) {
    rtt = absl::ToDoubleSeconds(*sample.rtt);
    tcp->set_rtt_seconds(*rtt);
  }
  if (sample.rtt_variation) {
    rtt_variation = absl::ToDoubleSeconds(*sample.rtt_variation);
    tcp->set_rtt_variation_seconds(*rtt_variation);
  }
  metrics_->AddTcp(sample.retransmitted_segments, sample.spurious_retransmitted_segments,
                   sample.sent_segments, ratio, rtt, rtt_variation);
}

void PeerTracker::TrimFailures(absl::Time now) const {
  while (!failure_times_.empty() && failure_times_.front() < now - failure_window_) {
    failure_times_.pop_front();
  }
}

v1::PeerStatus PeerTracker::Snapshot() const {
  const absl::Time now = clock_->Now();
  absl::MutexLock lock(&mu_);
  TrimFailures(now);
  v1::PeerStatus copy = status_;
  copy.set_failures_in_window(failure_times_.size());
  return copy;
}

}  // namespace gloowatch
