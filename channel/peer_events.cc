#include "channel/peer_events.h"

namespace gloowatch {

ChannelObserver::ChannelObserver(std::string peer, MessageChannel* channel)
    : peer_(std::move(peer)), channel_(channel) {
  batch_.mutable_peer()->set_peer(peer_);
}

void ChannelObserver::SetConnecting() {
  Add()->mutable_connecting();
  Send();
}

void ChannelObserver::SetUp(const std::string& gloo_address, const std::string& peer_version) {
  auto* up = Add()->mutable_up();
  up->set_gloo_address(gloo_address);
  up->set_peer_version(peer_version);
  Send();
}

void ChannelObserver::RecordFailure(v1::FailureReason reason, const std::string& message) {
  auto* failure = Add()->mutable_failure();
  failure->set_reason(reason);
  failure->set_message(message);
  Send();
}

void ChannelObserver::RecordRtts(const std::vector<absl::Duration>& rtts) {
  auto* out = Add()->mutable_rtts();
  for (absl::Duration rtt : rtts) out->add_nanos(absl::ToInt64Nanoseconds(rtt));
}

void ChannelObserver::RecordOffset(const OffsetEstimate& e) {
  auto* out = Add()->mutable_offset();
  out->set_offset_nanos(absl::ToInt64Nanoseconds(e.offset));
  out->set_error_nanos(absl::ToInt64Nanoseconds(e.error));
}

void ChannelObserver::RecordBandwidth(BandwidthDirection direction, const BandwidthSample& sample) {
  auto* out = Add()->mutable_bandwidth();
  out->set_tx(direction == BandwidthDirection::kTx);
  out->set_bytes_per_second(sample.bytes_per_second);
  out->set_bytes(sample.bytes);
  out->set_elapsed_nanos(absl::ToInt64Nanoseconds(sample.elapsed));
}

void ChannelObserver::RecordTcp(const TcpSample& sample) {
  auto* out = Add()->mutable_tcp();
  out->set_retransmitted_segments(sample.retransmitted_segments);
  out->set_sent_segments(sample.sent_segments);
  out->set_spurious_retransmitted_segments(sample.spurious_retransmitted_segments);
  if (sample.rtt) out->set_rtt_nanos(absl::ToInt64Nanoseconds(*sample.rtt));
  if (sample.rtt_variation) {
    out->set_rtt_variation_nanos(absl::ToInt64Nanoseconds(*sample.rtt_variation));
  }
  for (const FlowTcpSample& f : sample.flows) {
    transport::v1::FlowTcpStats* flow = out->add_flows();
    flow->set_flow(f.flow);
    flow->set_retransmitted_segments(f.retransmitted_segments);
    flow->set_sent_segments(f.sent_segments);
    flow->set_spurious_retransmitted_segments(f.spurious_retransmitted_segments);
  }
}

void ChannelObserver::RecordFlowFailure(uint32_t flow) {
  Add()->mutable_flow_failure()->set_flow(flow);
}

void ChannelObserver::RecordLatencyProbeLost() {
  Add()->mutable_latency_probe_lost();
  Send();
}

void ChannelObserver::RecordBandwidthDue(absl::Time at) { bandwidth_due_ = at; }

void ChannelObserver::RecordPeerDaemon(std::optional<double> silent_seconds) {
  v1::PeerDaemon* out = Add()->mutable_peer_daemon();
  if (silent_seconds) out->set_silent_seconds(*silent_seconds);
}

void ChannelObserver::Flush() {
  if (batch_.peer().events_size() > 0) Send();
}

transport::v1::PeerEvent* ChannelObserver::Add() { return batch_.mutable_peer()->add_events(); }

void ChannelObserver::Send() {
  if (bandwidth_due_) {
    Add()->mutable_bandwidth_due()->set_unix_nanos(absl::ToUnixNanos(*bandwidth_due_));
    bandwidth_due_.reset();
  }
  // A failed send means the daemon is gone or stopping us; its supervisor
  // restarts a transport with fresh state, so nothing is kept for a retry.
  channel_->Send(batch_);
  batch_.mutable_peer()->clear_events();
}

transport::v1::FromTransport UnacknowledgedMessage(const std::string& peer,
                                                   uint32_t retransmissions,
                                                   absl::Duration at_least) {
  transport::v1::FromTransport m;
  m.mutable_peer()->set_peer(peer);
  transport::v1::Unacknowledged* u = m.mutable_peer()->add_events()->mutable_unacknowledged();
  u->set_retransmissions(retransmissions);
  u->set_nanos(absl::ToInt64Nanoseconds(at_least));
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
                             2 * absl::Nanoseconds(e.offset().error_nanos()),
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
      for (const transport::v1::FlowTcpStats& f : e.tcp().flows()) {
        sample.flows.push_back({f.flow(), f.retransmitted_segments(), f.sent_segments(),
                                f.spurious_retransmitted_segments()});
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
    case transport::v1::PeerEvent::kPeerDaemon:
      observer.RecordPeerDaemon(e.peer_daemon().has_silent_seconds()
                                    ? std::optional<double>(e.peer_daemon().silent_seconds())
                                    : std::nullopt);
      break;
    case transport::v1::PeerEvent::kUnacknowledged:
      observer.RecordUnacknowledged(e.unacknowledged().retransmissions(),
                                    absl::Nanoseconds(e.unacknowledged().nanos()));
      break;
    case transport::v1::PeerEvent::kFlowFailure:
      observer.RecordFlowFailure(e.flow_failure().flow());
      break;
    case transport::v1::PeerEvent::EVENT_NOT_SET:
      break;
  }
}

void ApplyPeerEvents(const transport::v1::PeerEvents& events, ProbeObserver& observer) {
  for (const transport::v1::PeerEvent& e : events.events()) ApplyPeerEvent(e, observer);
}

}  // namespace gloowatch
