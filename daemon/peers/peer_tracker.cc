#include "daemon/peers/peer_tracker.h"

#include <algorithm>
#include <limits>
#include <optional>

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

// TcpFigures.recent_*: the window's last half. Enough segments to tell a
// loss of 1% from none once loss made the transport send more (transport/
// peer_prober.cc, the loss follow-up), and short enough that a repaired
// fault reads repaired well within the minute.
constexpr absl::Duration kTcpRecentWindow = absl::Seconds(30);
// TcpFigures.latest_*: two or three reads of a peer, what a loss starting
// shows first.
constexpr absl::Duration kTcpLatestWindow = absl::Seconds(10);

// LatencyFigures.recent_p50_seconds: a dozen latency probes at the default
// schedule, short enough that a repaired link reads repaired within a minute.
constexpr absl::Duration kRecentLatencyWindow = absl::Seconds(60);

void TrimBefore(std::deque<absl::Time>& times, absl::Time cutoff) {
  while (!times.empty() && times.front() < cutoff) times.pop_front();
}

}  // namespace

const std::vector<double>& RttBucketBounds() {
  static const std::vector<double>* const bounds =
      new std::vector<double>{10e-6, 20e-6, 50e-6, 100e-6, 200e-6, 500e-6, 1e-3, 2e-3, 5e-3,
                              10e-3, 20e-3, 50e-3, 100e-3, 200e-3, 500e-3, 1.0,  2.0};
  return *bounds;
}

PeerTracker::PeerTracker(PeerConfig peer, absl::Duration latency_window,
                         absl::Duration failure_window, std::optional<double> link_speed,
                         const Clock* clock)
    : peer_(std::move(peer)),
      failure_window_(failure_window),
      link_speed_(link_speed),
      clock_(clock),
      rtt_window_(latency_window),
      recent_rtt_window_(kRecentLatencyWindow) {
  v1::PeerStatus& status = figures_.status;
  status.set_name(peer_.name);
  status.set_grpc_address(peer_.grpc.ToString());
  status.set_state(v1::PEER_STATE_CONNECTING);
  status.mutable_latency()->set_window_seconds(absl::ToDoubleSeconds(latency_window));
  figures_.rtt_buckets.assign(RttBucketBounds().size() + 1, 0);
  figures_.link_speed_bytes_per_second = link_speed_;
}

void PeerTracker::SetConnecting() {
  absl::MutexLock lock(&mu_);
  v1::PeerStatus& status = figures_.status;
  if (status.state() != v1::PEER_STATE_DOWN) status.set_state(v1::PEER_STATE_CONNECTING);
  status.clear_next_bandwidth_probe();  // a new session schedules anew
  ForgetUnacknowledged();
}

void PeerTracker::ForgetUnacknowledged() {
  figures_.status.clear_unacknowledged();
  unacknowledged_at_.reset();
  cut_losses_pending_ = false;
}

void PeerTracker::RecordBandwidthDue(absl::Time at) {
  absl::MutexLock lock(&mu_);
  *figures_.status.mutable_next_bandwidth_probe() = ToProtoTimestamp(at);
}

void PeerTracker::SetUp(const std::string& gloo_address, const std::string& peer_version) {
  absl::MutexLock lock(&mu_);
  v1::PeerStatus& status = figures_.status;
  if (status.state() != v1::PEER_STATE_UP) {
    *status.mutable_up_since() = ToProtoTimestamp(clock_->Now());
    status.clear_acknowledged_again_at();
  }
  status.set_state(v1::PEER_STATE_UP);
  status.clear_down_since();
  ForgetUnacknowledged();
  ever_up_ = true;
  figures_.up = true;
  status.set_gloo_address(gloo_address);
  status.set_peer_version(peer_version);
}

void PeerTracker::RecordFailure(v1::FailureReason reason, const std::string& message) {
  const absl::Time now = clock_->Now();
  absl::MutexLock lock(&mu_);
  v1::PeerStatus& status = figures_.status;
  // A drop is the step from up to down: the failed reconnects after it (the
  // peer still down, a backoff running) are failures, not further drops.
  if (figures_.up) {
    ++figures_.drops;
    drop_times_.push_back(now);
    if (drop_times_.size() > kMaxFailureTimes) drop_times_.pop_front();
    *status.mutable_down_since() = ToProtoTimestamp(now);
  }
  status.set_state(v1::PEER_STATE_DOWN);
  status.clear_up_since();
  status.clear_acknowledged_again_at();
  ForgetUnacknowledged();
  status.clear_next_bandwidth_probe();
  v1::Failure* failure = status.mutable_last_failure();
  failure->set_reason(reason);
  failure->set_message(message);
  *failure->mutable_time() = ToProtoTimestamp(now);
  (*status.mutable_failures_by_reason())[std::string(ReasonName(reason))]++;
  status.set_probes_failed(status.probes_failed() + 1);
  figures_.up = false;
  // Until a peer has been up once, failures mean "not started yet" (the state
  // says so); counting them would keep a fresh cluster degraded for a window.
  if (ever_up_) {
    failure_times_.push_back(now);
    if (failure_times_.size() > kMaxFailureTimes) failure_times_.pop_front();
  }
}

void PeerTracker::RecordRtts(const std::vector<absl::Duration>& rtts) {
  if (rtts.empty()) return;
  const absl::Time now = clock_->Now();
  const std::vector<double>& bounds = RttBucketBounds();
  absl::MutexLock lock(&mu_);
  for (absl::Duration rtt : rtts) {
    const double seconds = absl::ToDoubleSeconds(rtt);
    rtt_window_.Add(now, seconds);
    recent_rtt_window_.Add(now, seconds);
    // The first bucket whose bound is >= the sample, as prometheus-cpp's
    // Histogram::Observe picks it.
    const size_t bucket =
        std::find_if(bounds.begin(), bounds.end(), [&](double bound) { return bound >= seconds; }) -
        bounds.begin();
    ++figures_.rtt_buckets[bucket];
    figures_.rtt_sum_seconds += seconds;
  }
  rtt_window_.Expire(now);
  v1::PeerStatus& status = figures_.status;
  v1::LatencyFigures* latency = status.mutable_latency();
  latency->set_last_seconds(absl::ToDoubleSeconds(rtts.back()));
  latency->set_p50_seconds(rtt_window_.Percentile(0.5).value_or(0));
  latency->set_p99_seconds(rtt_window_.Percentile(0.99).value_or(0));
  latency->set_jitter_seconds(std::max(latency->p99_seconds() - latency->p50_seconds(), 0.0));
  latency->set_samples_in_window(rtt_window_.size());
  ++figures_.latency_probes;
  status.set_probes_ok(status.probes_ok() + 1);
}

void PeerTracker::RecordOffset(const OffsetEstimate& estimate) {
  absl::MutexLock lock(&mu_);
  v1::PeerStatus& status = figures_.status;
  v1::ClockFigures* clock = status.mutable_clock();
  clock->set_offset_seconds(absl::ToDoubleSeconds(estimate.offset));
  clock->set_error_seconds(absl::ToDoubleSeconds(estimate.error));
  *clock->mutable_measured_at() = ToProtoTimestamp(clock_->Now());
  ++figures_.skew_probes;
  status.set_probes_ok(status.probes_ok() + 1);
}

void PeerTracker::RecordBandwidth(BandwidthDirection direction, const BandwidthSample& sample) {
  absl::MutexLock lock(&mu_);
  v1::PeerStatus& status = figures_.status;
  v1::BandwidthFigures* bw = status.mutable_bandwidth();
  const bool tx = direction == BandwidthDirection::kTx;
  std::optional<double>& previous = tx ? previous_tx_ : previous_rx_;
  if (tx ? bw->has_tx_bytes_per_second() : bw->has_rx_bytes_per_second()) {
    previous = tx ? bw->tx_bytes_per_second() : bw->rx_bytes_per_second();
  }
  if (tx) {
    bw->set_tx_bytes_per_second(sample.bytes_per_second);
  } else {
    bw->set_rx_bytes_per_second(sample.bytes_per_second);
  }
  (tx ? figures_.tx_judged_bytes_per_second : figures_.rx_judged_bytes_per_second) =
      std::max(sample.bytes_per_second, previous.value_or(0));
  if (link_speed_ && *link_speed_ > 0) {
    // The slower direction, each judged on the better of its last two.
    double slowest = std::numeric_limits<double>::infinity();
    for (const auto& judged :
         {figures_.tx_judged_bytes_per_second, figures_.rx_judged_bytes_per_second}) {
      if (judged) slowest = std::min(slowest, *judged);
    }
    bw->set_link_ratio(slowest / *link_speed_);
  }
  *bw->mutable_measured_at() = ToProtoTimestamp(clock_->Now());
  ++figures_.bandwidth_probes;
  status.set_probes_ok(status.probes_ok() + 1);
}

void PeerTracker::RecordPeerDaemon(std::optional<double> silent_seconds) {
  absl::MutexLock lock(&mu_);
  if (silent_seconds) {
    figures_.status.mutable_peer_daemon()->set_silent_seconds(*silent_seconds);
  } else {
    figures_.status.clear_peer_daemon();  // the peer's transport does not say
  }
}

void PeerTracker::RecordUnacknowledged(uint32_t retransmissions, absl::Duration at_least) {
  absl::MutexLock lock(&mu_);
  v1::PeerStatus& status = figures_.status;
  // Only an up peer's pair can be waiting; a report that crossed a state
  // change is stale.
  if (retransmissions == 0 || status.state() != v1::PEER_STATE_UP) {
    // Acknowledged again within the session: the path is back.
    const bool again = status.has_unacknowledged() && status.state() == v1::PEER_STATE_UP;
    if (again) *status.mutable_acknowledged_again_at() = ToProtoTimestamp(clock_->Now());
    ForgetUnacknowledged();
    cut_losses_pending_ = again;
    return;
  }
  status.mutable_unacknowledged()->set_retransmissions(retransmissions);
  status.mutable_unacknowledged()->set_seconds(absl::ToDoubleSeconds(at_least));
  unacknowledged_at_ = clock_->Now();
}

void PeerTracker::RecordLatencyProbeLost() {
  const absl::Time now = clock_->Now();
  absl::MutexLock lock(&mu_);
  v1::LatencyFigures* latency = figures_.status.mutable_latency();
  latency->set_lost_probes(latency->lost_probes() + 1);
  lost_probe_times_.push_back(now);
  if (lost_probe_times_.size() > kMaxFailureTimes) lost_probe_times_.pop_front();
}

void PeerTracker::RecordTcp(const TcpSample& sample) {
  const absl::Time now = clock_->Now();
  absl::MutexLock lock(&mu_);
  // What was retransmitted while nothing got through (data unacknowledged,
  // then acknowledged again within the session, which the next read
  // reports) is the cut's, judged as a cut: no loss in the windows. The
  // totals keep it.
  const bool cut = figures_.status.has_unacknowledged() || cut_losses_pending_;
  cut_losses_pending_ = false;
  // A retransmission is a loss unless the peer said it had the original.
  const uint64_t lost =
      sample.retransmitted_segments -
      std::min(sample.spurious_retransmitted_segments, sample.retransmitted_segments);
  tcp_window_.push_back({now, cut ? 0 : lost, sample.sent_segments});
  if (tcp_window_.size() > kMaxTcpWindowEntries) tcp_window_.pop_front();
  v1::TcpFigures* tcp = figures_.status.mutable_tcp();
  tcp->set_retransmitted_segments(tcp->retransmitted_segments() + sample.retransmitted_segments);
  tcp->set_sent_segments(tcp->sent_segments() + sample.sent_segments);
  tcp->set_spurious_retransmitted_segments(tcp->spurious_retransmitted_segments() +
                                           sample.spurious_retransmitted_segments);
  if (sample.rtt) tcp->set_rtt_seconds(absl::ToDoubleSeconds(*sample.rtt));
  if (sample.rtt_variation) {
    tcp->set_rtt_variation_seconds(absl::ToDoubleSeconds(*sample.rtt_variation));
  }
  for (const FlowTcpSample& f : sample.flows) {
    if (f.flow >= kMaxProbeFlows) continue;  // bounded: the flow label's values
    FlowState& flow = flows_[f.flow];
    const uint64_t flow_lost =
        f.retransmitted_segments -
        std::min(f.spurious_retransmitted_segments, f.retransmitted_segments);
    flow.sent += f.sent_segments;
    flow.lost += flow_lost;
    flow.window.push_back({now, cut ? 0 : flow_lost, f.sent_segments});
    if (flow.window.size() > kMaxTcpWindowEntries) flow.window.pop_front();
  }
}

void PeerTracker::RecordFlowFailure(uint32_t flow) {
  if (flow >= kMaxProbeFlows) return;
  const absl::Time now = clock_->Now();
  absl::MutexLock lock(&mu_);
  FlowState& f = flows_[flow];
  ++f.failures;
  f.failure_times.push_back(now);
  if (f.failure_times.size() > kMaxFailureTimes) f.failure_times.pop_front();
}

void PeerTracker::FlowFigures(absl::Time now, v1::PeerStatus* status) const {
  // When the peer's loss began and when it was last seen, as far as the
  // window holds: its earliest and latest lost segments on any flow.
  std::optional<absl::Time> loss_began, loss_seen;
  for (auto& [index, flow] : flows_) {
    while (!flow.window.empty() && flow.window.front().at < now - kTcpLossWindow) {
      flow.window.pop_front();
    }
    for (const TcpWindowEntry& e : flow.window) {
      if (e.lost == 0) continue;
      if (!loss_began || e.at < *loss_began) loss_began = e.at;
      if (!loss_seen || e.at > *loss_seen) loss_seen = e.at;
    }
  }
  for (auto& [index, flow] : flows_) {
    TrimBefore(flow.failure_times, now - kTcpLossWindow);
    v1::FlowFigures* out = status->add_flows();
    out->set_flow(index);
    out->set_sent_segments(flow.sent);
    out->set_lost_segments(flow.lost);
    uint64_t lost = 0, sent = 0, lost_while_losing = 0, sent_while_losing = 0;
    std::optional<uint64_t> sent_since_last_loss;
    for (const TcpWindowEntry& e : flow.window) {
      lost += e.lost;
      sent += e.sent;
      // A read's segments are not ordered within it: those of the read that
      // saw the loss begin, or a flow's last loss, count as before it; those
      // of the read that saw the peer's last loss, as within it.
      if (loss_began && e.at > *loss_began && e.at <= *loss_seen) {
        lost_while_losing += e.lost;
        sent_while_losing += e.sent;
      }
      if (e.lost > 0) {
        sent_since_last_loss = 0;
      } else if (sent_since_last_loss) {
        *sent_since_last_loss += e.sent;
      }
    }
    if (loss_began) {
      out->set_sent_while_losing(sent_while_losing);
      out->set_lost_while_losing(lost_while_losing);
    }
    if (sent_since_last_loss) out->set_sent_since_last_loss(*sent_since_last_loss);
    out->set_window_seconds(absl::ToDoubleSeconds(kTcpLossWindow));
    out->set_window_sent_segments(sent);
    out->set_window_lost_segments(lost);
    if (sent > 0) out->set_loss_ratio(static_cast<double>(lost) / static_cast<double>(sent));
    out->set_failures(flow.failures);
    out->set_failures_in_window(flow.failure_times.size());
  }
}

void PeerTracker::TcpWindowFigures(absl::Time now, v1::TcpFigures* tcp) const {
  while (!tcp_window_.empty() && tcp_window_.front().at < now - kTcpLossWindow) {
    tcp_window_.pop_front();
  }
  if (!tcp->has_rtt_seconds() && tcp->sent_segments() == 0 && tcp_window_.empty()) return;
  uint64_t lost = 0, sent = 0, recent_lost = 0, recent_sent = 0, latest_lost = 0, latest_sent = 0;
  std::optional<uint64_t> sent_since_last_loss;
  for (const TcpWindowEntry& e : tcp_window_) {
    lost += e.lost;
    sent += e.sent;
    if (e.lost > 0) {
      sent_since_last_loss = 0;
    } else if (sent_since_last_loss) {
      *sent_since_last_loss += e.sent;
    }
    if (e.at >= now - kTcpRecentWindow) {
      recent_lost += e.lost;
      recent_sent += e.sent;
    }
    if (e.at >= now - kTcpLatestWindow) {
      latest_lost += e.lost;
      latest_sent += e.sent;
    }
  }
  tcp->set_window_seconds(absl::ToDoubleSeconds(kTcpLossWindow));
  tcp->set_window_sent_segments(sent);
  if (sent > 0) {
    tcp->set_loss_ratio(static_cast<double>(lost) / static_cast<double>(sent));
  } else {
    tcp->clear_loss_ratio();
  }
  tcp->set_recent_window_seconds(absl::ToDoubleSeconds(kTcpRecentWindow));
  tcp->set_recent_sent_segments(recent_sent);
  tcp->set_recent_lost_segments(recent_lost);
  tcp->set_latest_window_seconds(absl::ToDoubleSeconds(kTcpLatestWindow));
  tcp->set_latest_sent_segments(latest_sent);
  tcp->set_latest_lost_segments(latest_lost);
  if (sent_since_last_loss) {
    tcp->set_sent_since_last_loss(*sent_since_last_loss);
  } else {
    tcp->clear_sent_since_last_loss();
  }
}

void PeerTracker::TrimFailures(absl::Time now) const {
  TrimBefore(failure_times_, now - failure_window_);
  TrimBefore(lost_probe_times_, now - failure_window_);
  TrimBefore(drop_times_, now - failure_window_);
}

PeerSnapshot PeerTracker::Snapshot() const {
  const absl::Time now = clock_->Now();
  absl::MutexLock lock(&mu_);
  TrimFailures(now);
  PeerSnapshot copy = figures_;
  copy.status.set_failures_in_window(failure_times_.size());
  copy.status.set_drops_in_window(drop_times_.size());
  copy.status.mutable_latency()->set_lost_probes_in_window(lost_probe_times_.size());
  recent_rtt_window_.Expire(now);
  if (std::optional<double> recent = recent_rtt_window_.Percentile(0.5)) {
    copy.status.mutable_latency()->set_recent_p50_seconds(*recent);
  }
  TcpWindowFigures(now, copy.status.mutable_tcp());
  FlowFigures(now, &copy.status);
  if (unacknowledged_at_) {
    v1::PeerUnacknowledged* u = copy.status.mutable_unacknowledged();
    u->set_seconds(u->seconds() + absl::ToDoubleSeconds(now - *unacknowledged_at_));
  }
  return copy;
}

}  // namespace gloowatch
