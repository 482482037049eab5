// The prober events carried from the transport process to the daemon: a
// ProbeObserver that sends them, and the decoder that replays them on the
// daemon's observer (the peer's tracker).
#pragma once

#include <optional>
#include <string>

#include "channel/message_channel.h"
#include "channel/probe_observer.h"
#include "proto/transport.pb.h"

namespace gloowatch {

// Reports a prober's observations to the daemon, batched: measurements wait
// for Flush() (the prober's next sleep), so one probe's results cost the
// daemon one message instead of one per kind; a state change (connecting, up,
// failure, a lost probe) goes out at once with whatever waited before it. A
// bandwidth due time alone is not worth a message: it waits for company, and
// a newer one replaces it. Used by one prober thread only.
class ChannelObserver final : public ProbeObserver {
 public:
  ChannelObserver(std::string peer, MessageChannel* channel);

  void SetConnecting() override;
  void SetUp(const std::string& gloo_address, const std::string& peer_version) override;
  void RecordFailure(v1::FailureReason reason, const std::string& message) override;
  void RecordRtts(const std::vector<absl::Duration>& rtts) override;
  void RecordOffset(const OffsetEstimate& e) override;
  void RecordBandwidth(BandwidthDirection direction, const BandwidthSample& sample) override;
  void RecordTcp(const TcpSample& sample) override;
  void RecordLatencyProbeLost() override;
  void RecordFlowFailure(uint32_t flow) override;
  void RecordBandwidthDue(absl::Time at) override;
  void RecordPeerDaemon(std::optional<double> silent_seconds) override;
  void Flush() override;

 private:
  // A new event at the end of the batch.
  transport::v1::PeerEvent* Add();
  void Send();

  const std::string peer_;
  MessageChannel* const channel_;
  transport::v1::FromTransport batch_;
  std::optional<absl::Time> bandwidth_due_;
};

// A message of one event from outside the prober's thread: what the
// transport's watch over the pairs' sockets saw (PeerEvent.unacknowledged).
transport::v1::FromTransport UnacknowledgedMessage(const std::string& peer,
                                                   uint32_t retransmissions,
                                                   absl::Duration at_least);

// Replays `event` on `observer`.
void ApplyPeerEvent(const transport::v1::PeerEvent& event, ProbeObserver& observer);
// Replays a batch, in order.
void ApplyPeerEvents(const transport::v1::PeerEvents& events, ProbeObserver& observer);

}  // namespace gloowatch