// TCP statistics of the probe pairs: sock_diag on real loopback sockets, the
// per-session deltas, the event carrying them and the tracker's loss window.
#include "transport/tcp_stats.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "channel/peer_events.h"
#include "common/simulated_clock.h"
#include "daemon/peers/peer_series.h"
#include "daemon/peers/peer_tracker.h"
#include "gtest/gtest.h"

namespace gloowatch {
namespace {

constexpr in_addr_t kPeer2 = 0x7f000002;  // 127.0.0.2
constexpr in_addr_t kPeer3 = 0x7f000003;  // 127.0.0.3

TcpEndpoint Loopback(uint16_t port, in_addr_t address = INADDR_LOOPBACK) {
  sockaddr_storage ss{};
  auto* in = reinterpret_cast<sockaddr_in*>(&ss);
  in->sin_family = AF_INET;
  in->sin_addr.s_addr = htonl(address);
  in->sin_port = htons(port);
  return *TcpEndpoint::FromSockaddr(ss);
}

uint16_t LocalPort(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

// A connected loopback TCP connection, as a Gloo pair makes one: one side
// listened on its advertised port, the other connected from an ephemeral one.
// The connector may come from another loopback address (another peer).
struct LoopbackConnection {
  explicit LoopbackConnection(in_addr_t connector_address = INADDR_LOOPBACK) {
    const int listener = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    EXPECT_EQ(listen(listener, 1), 0);
    listen_port = LocalPort(listener);
    connector = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in from{};
    from.sin_family = AF_INET;
    from.sin_addr.s_addr = htonl(connector_address);
    EXPECT_EQ(bind(connector, reinterpret_cast<sockaddr*>(&from), sizeof(from)), 0);
    a.sin_port = htons(listen_port);
    EXPECT_EQ(connect(connector, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    accepted = accept(listener, nullptr, nullptr);
    close(listener);
    connector_port = LocalPort(connector);
  }
  ~LoopbackConnection() {
    if (connector >= 0) close(connector);
    if (accepted >= 0) close(accepted);
  }
  int connector = -1, accepted = -1;
  uint16_t listen_port = 0, connector_port = 0;
};

void Send(int fd, size_t bytes) {
  std::string data(bytes, 'x');
  ASSERT_EQ(send(fd, data.data(), data.size(), 0), static_cast<ssize_t>(data.size()));
}

TEST(TcpStatsTest, FindsTheConnectingSideByItsPeersListeningAddress) {
  LoopbackConnection c;
  Send(c.connector, 1000);
  // The connector's own advertised (listening) port is not in the four-tuple.
  TcpConnection ours{Loopback(1), Loopback(c.listen_port), std::nullopt};
  auto source = NewSockDiagTcpStats();
  absl::StatusOr<TcpCounters> first = source->Read(ours);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(ours.resolved.has_value());
  EXPECT_EQ(ours.resolved->local.port, c.connector_port) << "the accepted side was read instead";
  EXPECT_EQ(ours.resolved->remote.port, c.listen_port);
  EXPECT_GE(first->sent_segments, 1u);
  EXPECT_EQ(first->retransmitted_segments, 0u);
  EXPECT_GT(first->rtt, absl::ZeroDuration());

  // The second read is an exact lookup and sees the new segments.
  Send(c.connector, 1000);
  absl::StatusOr<TcpCounters> second = source->Read(ours);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_GT(second->sent_segments, first->sent_segments);

  close(c.connector);
  c.connector = -1;
  absl::StatusOr<TcpCounters> closed = source->Read(ours);
  EXPECT_TRUE(absl::IsNotFound(closed.status())) << closed.status();
  EXPECT_FALSE(ours.resolved.has_value());
}

TEST(TcpStatsTest, FindsTheAcceptingSideByItsOwnListeningAddress) {
  LoopbackConnection c;
  Send(c.accepted, 1000);
  Send(c.accepted, 1000);
  TcpConnection ours{Loopback(c.listen_port), Loopback(1), std::nullopt};
  absl::StatusOr<TcpCounters> counters = NewSockDiagTcpStats()->Read(ours);
  ASSERT_TRUE(counters.ok()) << counters.status();
  ASSERT_TRUE(ours.resolved.has_value());
  EXPECT_EQ(ours.resolved->local.port, c.listen_port);
  EXPECT_EQ(ours.resolved->remote.port, c.connector_port);
  EXPECT_GE(counters->sent_segments, 2u);
}

TEST(TcpStatsTest, NoSuchConnectionIsNotFound) {
  LoopbackConnection c;  // exists, but matches neither address
  TcpConnection other{Loopback(1), Loopback(2), std::nullopt};
  EXPECT_TRUE(absl::IsNotFound(NewSockDiagTcpStats()->Read(other).status()));
}

// Gloo closes a pair's listener once connected, so the port a pair
// advertised can since belong to a connection with another peer: that one's
// counters are not this link's (a lossy link to one peer was once reported
// on a healthy link to another).
TEST(TcpStatsTest, AnotherPeersConnectionOnOurFormerListeningPortIsNotOurs) {
  LoopbackConnection other(kPeer3);  // 127.0.0.3 connected to our port
  Send(other.accepted, 1000);
  TcpConnection ours{Loopback(other.listen_port), Loopback(1, kPeer2), std::nullopt};
  absl::StatusOr<TcpCounters> counters = NewSockDiagTcpStats()->Read(ours);
  EXPECT_TRUE(absl::IsNotFound(counters.status())) << counters.status();
  // The same port with the peer's address is ours.
  TcpConnection same_peer{Loopback(other.listen_port), Loopback(1, kPeer3), std::nullopt};
  EXPECT_TRUE(NewSockDiagTcpStats()->Read(same_peer).ok());
}

TEST(TcpCounterDeltasTest, EachConnectionStartsAtZeroAndAddsIncrements) {
  TcpCounterDeltas deltas;
  auto counters = [](uint64_t retransmitted, uint64_t sent) {
    TcpCounters c;
    c.retransmitted_segments = retransmitted;
    c.sent_segments = sent;
    return c;
  };
  TcpCounterDeltas::Delta d = deltas.Update(0, counters(2, 100));
  EXPECT_EQ(d.retransmitted_segments, 2u);
  EXPECT_EQ(d.sent_segments, 100u);
  d = deltas.Update(1, counters(0, 50));
  EXPECT_EQ(d.sent_segments, 50u);
  d = deltas.Update(0, counters(5, 160));
  EXPECT_EQ(d.retransmitted_segments, 3u);
  EXPECT_EQ(d.sent_segments, 60u);
  // Counters that went back are another socket's: all new.
  d = deltas.Update(0, counters(1, 10));
  EXPECT_EQ(d.retransmitted_segments, 1u);
  EXPECT_EQ(d.sent_segments, 10u);
}

// Records what ApplyPeerEvent replays.
class LastTcp final : public ProbeObserver {
 public:
  void SetConnecting() override {}
  void SetUp(const std::string&, const std::string&) override {}
  void RecordFailure(v1::FailureReason, const std::string&) override {}
  void RecordRtts(const std::vector<absl::Duration>&) override {}
  void RecordOffset(const OffsetEstimate&) override {}
  void RecordBandwidth(BandwidthDirection, const BandwidthSample&) override {}
  void RecordTcp(const TcpSample& sample) override { last = sample; }
  std::optional<TcpSample> last;
};

TEST(TcpEventTest, RoundTripsWithAndWithoutRtt) {
  transport::v1::PeerEvent event;
  event.mutable_tcp()->set_retransmitted_segments(7);
  event.mutable_tcp()->set_sent_segments(140);
  event.mutable_tcp()->set_spurious_retransmitted_segments(2);
  LastTcp observer;
  ApplyPeerEvent(event, observer);
  ASSERT_TRUE(observer.last.has_value());
  EXPECT_EQ(observer.last->retransmitted_segments, 7u);
  EXPECT_EQ(observer.last->sent_segments, 140u);
  EXPECT_EQ(observer.last->spurious_retransmitted_segments, 2u);
  EXPECT_FALSE(observer.last->rtt.has_value());
  event.mutable_tcp()->set_rtt_nanos(250000);
  event.mutable_tcp()->set_rtt_variation_nanos(50000);
  ApplyPeerEvent(event, observer);
  EXPECT_EQ(observer.last->rtt, absl::Microseconds(250));
  EXPECT_EQ(observer.last->rtt_variation, absl::Microseconds(50));
}

std::optional<double> Value(const PeerSeries& metrics, const std::string& name) {
  for (const prometheus::MetricFamily& f : metrics.Collect()) {
    if (f.name != name) continue;
    for (const prometheus::ClientMetric& m : f.metric) {
      return f.type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value;
    }
  }
  return std::nullopt;
}

TEST(PeerTrackerTcpTest, CountersAddUpAndTheRatioCoversTheLastMinute) {
  SimulatedClock clock;
  PeerConfig peer;
  peer.name = "b";
  auto tracker_ptr =
      std::make_shared<PeerTracker>(peer, absl::Minutes(5), absl::Minutes(5), std::nullopt, &clock);
  PeerTracker& tracker = *tracker_ptr;
  const PeerSeries metrics(
      "a", [tracker_ptr] { return std::vector<std::shared_ptr<const PeerTracker>>{tracker_ptr}; });
  EXPECT_EQ(Value(metrics, "gloowatch_peer_tcp_sent_segments_total"), 0);
  EXPECT_FALSE(Value(metrics, "gloowatch_peer_tcp_loss_ratio").has_value());

  // A lossy minute: 12% retransmitted, 2% of it spurious (the peer had
  // those), so 10% lost.
  for (int i = 0; i < 12; ++i) {
    tracker.RecordTcp({12, 100, 2, absl::Microseconds(300), absl::Microseconds(40)});
    clock.Advance(absl::Seconds(5));
  }
  EXPECT_DOUBLE_EQ(*Value(metrics, "gloowatch_peer_tcp_loss_ratio"), 0.1);
  EXPECT_DOUBLE_EQ(*Value(metrics, "gloowatch_peer_tcp_rtt_seconds"), 300e-6);
  EXPECT_DOUBLE_EQ(*Value(metrics, "gloowatch_peer_tcp_rtt_variation_seconds"), 40e-6);

  // Then a clean one (a reconnect in between changes nothing: these are
  // increments). The lossy reports leave the window one by one.
  for (int i = 0; i < 6; ++i) {
    tracker.RecordTcp({0, 100, 0, std::nullopt, std::nullopt});
    clock.Advance(absl::Seconds(5));
  }
  EXPECT_NEAR(*Value(metrics, "gloowatch_peer_tcp_loss_ratio"), 0.05, 0.01);
  for (int i = 0; i < 7; ++i) {
    tracker.RecordTcp({0, 100, 0, std::nullopt, std::nullopt});
    clock.Advance(absl::Seconds(5));
  }
  EXPECT_DOUBLE_EQ(*Value(metrics, "gloowatch_peer_tcp_loss_ratio"), 0);
  EXPECT_EQ(Value(metrics, "gloowatch_peer_tcp_retransmitted_segments_total"), 144);
  EXPECT_EQ(Value(metrics, "gloowatch_peer_tcp_spurious_retransmitted_segments_total"), 24);
  EXPECT_EQ(Value(metrics, "gloowatch_peer_tcp_sent_segments_total"), 2500);
  // The RTT keeps its last reading.
  EXPECT_DOUBLE_EQ(*Value(metrics, "gloowatch_peer_tcp_rtt_seconds"), 300e-6);

  const v1::TcpFigures tcp = tracker.Snapshot().status.tcp();
  EXPECT_EQ(tcp.retransmitted_segments(), 144u);
  EXPECT_EQ(tcp.spurious_retransmitted_segments(), 24u);
  EXPECT_EQ(tcp.sent_segments(), 2500u);
  EXPECT_DOUBLE_EQ(tcp.loss_ratio(), 0);
  EXPECT_DOUBLE_EQ(tcp.window_seconds(), 60);
  EXPECT_DOUBLE_EQ(tcp.rtt_seconds(), 300e-6);
}

}  // namespace
}  // namespace gloowatch
