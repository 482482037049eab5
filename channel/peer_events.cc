#include "channel/peer_events.h"

namespace gloowatch {

using transport::v1::FromTransport;

void ChannelObserver::SetConnecting() {
  FromTransport m = Event();
  m.mutable_peer()->mutable_connecting();
  channel_->Send(m);
}

void ChannelObserver::SetUp(const std::string& gloo_address, const std::string& peer_version) {
  FromTransport m = Event();
  auto* up = m.mutable_peer()->mutable_up();
  up->set_gloo_address(gloo_address);
  up->set_peer_version(peer_version);
  channel_->Send(m);
}

void ChannelObserver::RecordFailure(v1::FailureReason reason, const std::string& message) {
  FromTransport m = Event();
  auto* failure = m.mutable_peer()->mutable_failure();
  failure->set_reason(reason);
  failure->set_message(message);
  channel_->Send(m);
}

void ChannelObserver::RecordRtts(const std::vector<absl::Duration>& rtts) {
  FromTransport m = Event();
  auto* out = m.mutable_peer()->mutable_rtts();
  for (absl::Duration rtt : rtts) out->add_nanos(absl::ToInt64Nanoseconds(rtt));
  channel_->Send(m);
}

void ChannelObserver::RecordOffset(const OffsetEstimate& e) {
  FromTransport m = Event();
  auto* out = m.mutable_peer()->mutable_offset();
  out->set_offset_nanos(absl::ToInt64Nanoseconds(e.offset));
  out->set_delay_nanos(absl::ToInt64Nanoseconds(e.delay));
  out->set_error_nanos(absl::ToInt64Nanoseconds(e.error));
  channel_->Send(m);
}

void ChannelObserver::RecordBandwidth(BandwidthDirection direction, const BandwidthSample& sample) {
  FromTransport m = Event();
  auto* out = m.mutable_peer()->mutable_bandwidth();
  out->set_tx(direction == BandwidthDirection::kTx);
  out->set_bytes_per_second(sample.bytes_per_second);
  out->set_bytes(sample.bytes);
  out->set_elapsed_nanos(absl::ToInt64Nanoseconds(sample.elapsed));
  channel_->Send(m);
}

void ChannelObserver::RecordTcp(const TcpSample& sample) {
  FromTransport m = Event();
  auto* out = m.mutable_peer()->mutable_tcp();
  out->set_retransmitted_segments(sample.retransmitted_segments);
  out->set_sent_segments(sample.sent_segments);
  out->set_spurious_retransmitted_segments(sample.spurious_retransmitted_segments);
  if (sample.rtt) out->set_rtt_nanos(absl::ToInt64Nanoseconds(*sample.rtt));
  if (sample.rtt_variation) {
    out->set_rtt_variation_nanos(absl::ToInt64Nanoseconds(*sample.rtt_variation));
  }
  channel_->Send(m);
}

void ChannelObserver::RecordLatencyProbeLost() {
  FromTransport m = Event();
  m.mutable_peer()->mutable_latency_probe_lost();
  channel_->Send(m);
}

void ChannelObserver::RecordBandwidthDue(absl::Time at) {
  FromTransport m = Event();
  m.mutable_peer()->mutable_bandwidth_due()->set_unix_nanos(absl::ToUnixNanos(at));
  channel_->Send(m);
}

FromTransport ChannelObserver::Event() const {
  FromTransport m;
  m.mutable_peer()->set_peer(peer_);
  return m;
}

void ApplyPeerEvent(const transport::v1::PeerEvent& e, ProbeObserver& observer) {
  switch (e.event_case()) {
    case transport::v1::PeerEvent::kConnecting:
      observer.SetConnecting();
      break;
    case transport::v1::PeerEvent::kUp:
      observer.SetUp(e.up().gloo_address(), e.up().peer_version());
      break;
    case transport::v1::PeerEvent::kFailure:
      observer.RecordFailure(e.failure().reason(), e.failure().message());
      break;
    case transport::v1::PeerEvent::kRtts: {
      std::vector<absl::Duration> rtts;
      for (int64_t ns : e.rtts().nanos()) rtts.push_back(absl::Nanoseconds(ns));
      observer.RecordRtts(rtts);
      break;
    }
    case transport::v1::PeerEvent::kOffset:
      observer.RecordOffset({absl::Nanoseconds(e.offset().offset_nanos()),
                             absl::Nanoseconds(e.offset().delay_nanos()),
                             absl::Nanoseconds(e.offset().error_nanos())});
      break;
    case transport::v1::PeerEvent::kBandwidth:
      observer.RecordBandwidth(
          e.bandwidth().tx() ? BandwidthDirection::kTx : BandwidthDirection::kRx,
          {e.bandwidth().bytes_per_second(), e.bandwidth().bytes(),
           absl::Nanoseconds(e.bandwidth().elapsed_nanos())});
      break;
    case transport::v1::PeerEvent::kTcp: {
      TcpSample sample;
      sample.retransmitted_segments = e.tcp().retransmitted_segments();
      sample.sent_segments = e.tcp().sent_segments();
      sample.spurious_retransmitted_segments = e.tcp().spurious_retransmitted_segments();
      if (e.tcp().has_rtt_nanos()) sample.rtt = absl::Nanoseconds(e.tcp().rtt_nanos());
      if (e.tcp().has_rtt_variation_nanos()) {
        sample.rtt_variation = absl::Nanoseconds(e.tcp().rtt_variation_nanos());
      }
      observer.RecordTcp(sample);
      break;
    }
    case transport::v1::PeerEvent::kBandwidthDue:
      observer.RecordBandwidthDue(absl::FromUnixNanos(e.bandwidth_due().unix_nanos()));
      break;
    case transport::v1::PeerEvent::kLatencyProbeLost:
      observer.RecordLatencyProbeLost();
      break;
    case transport::v1::PeerEvent::EVENT_NOT_SET:
      break;
  }
}

}  // namespace gloowatch
