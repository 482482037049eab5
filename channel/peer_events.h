// The prober events carried from the transport process to the daemon: a
// ProbeObserver that sends them, and the decoder that replays them on the
// daemon's observer (the peer's tracker).
#pragma once

#include <string>

#include "channel/message_channel.h"
#include "channel/probe_observer.h"
#include "proto/transport.pb.h"

namespace gloowatch {

// Reports a prober's observations to the daemon.
class ChannelObserver final : public ProbeObserver {
 public:
  ChannelObserver(std::string peer, MessageChannel* channel)
      : peer_(std::move(peer)), channel_(channel) {}

  void SetConnecting() override;
  void SetUp(const std::string& gloo_address, const std::string& peer_version) override;
  void RecordFailure(v1::FailureReason reason, const std::string& message) override;
  void RecordRtts(const std::vector<absl::Duration>& rtts) override;
  void RecordOffset(const OffsetEstimate& e) override;
  void RecordBandwidth(BandwidthDirection direction, const BandwidthSample& sample) override;
  void RecordTcp(const TcpSample& sample) override;
  void RecordLatencyProbeLost() override;
  void RecordBandwidthDue(absl::Time at) override;

 private:
  transport::v1::FromTransport Event() const;

  const std::string peer_;
  MessageChannel* const channel_;
};

// Replays `event` on `observer`.
void ApplyPeerEvent(const transport::v1::PeerEvent& event, ProbeObserver& observer);

}  // namespace gloowatch