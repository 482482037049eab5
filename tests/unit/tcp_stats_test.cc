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
#include "daemon/peers/peer_series.h"
#include "daemon/peers/peer_tracker.h"
#include "gtest/gtest.h"
#include "tests/support/simulated_clock.h"

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

// The window's recent half tells a repaired loss from a present one, its
// last 10 s a loss starting; a window with no report for a minute is empty
// when read.
TEST(PeerTrackerTcpTest, RecentHalfLatestPartAndExpiryWhenRead) {
  SimulatedClock clock;
  PeerConfig peer;
  peer.name = "b";
  PeerTracker tracker(peer, absl::Minutes(5), absl::Minutes(5), std::nullopt, &clock);
  EXPECT_FALSE(tracker.Snapshot().status.tcp().has_recent_sent_segments());
  for (int i = 0; i < 6; ++i) {  // 30 s losing 5%
    tracker.RecordTcp({5, 100, 0, std::nullopt, std::nullopt});
    clock.Advance(absl::Seconds(5));
  }
  v1::TcpFigures tcp = tracker.Snapshot().status.tcp();
  EXPECT_EQ(tcp.recent_sent_segments(), 600u);
  EXPECT_EQ(tcp.recent_lost_segments(), 30u);
  EXPECT_DOUBLE_EQ(tcp.recent_window_seconds(), 30);
  EXPECT_EQ(tcp.latest_sent_segments(), 200u);  // the reads 5 and 10 s ago
  EXPECT_EQ(tcp.latest_lost_segments(), 10u);
  EXPECT_DOUBLE_EQ(tcp.latest_window_seconds(), 10);
  for (int i = 0; i < 6; ++i) {  // 30 s clean
    tracker.RecordTcp({0, 100, 0, std::nullopt, std::nullopt});
    clock.Advance(absl::Seconds(5));
  }
  tcp = tracker.Snapshot().status.tcp();
  EXPECT_DOUBLE_EQ(tcp.loss_ratio(), 0.025);  // the window still holds the loss
  EXPECT_EQ(tcp.window_sent_segments(), 1200u);
  EXPECT_EQ(tcp.recent_sent_segments(), 600u);
  EXPECT_EQ(tcp.recent_lost_segments(), 0u);
  EXPECT_EQ(tcp.latest_lost_segments(), 0u);
  EXPECT_EQ(tcp.sent_since_last_loss(), 600u);
  clock.Advance(absl::Seconds(61));  // nothing reported since (the peer went down)
  tcp = tracker.Snapshot().status.tcp();
  EXPECT_FALSE(tcp.has_loss_ratio());
  EXPECT_EQ(tcp.window_sent_segments(), 0u);
  EXPECT_EQ(tcp.recent_sent_segments(), 0u);
  EXPECT_EQ(tcp.sent_segments(), 1200u);  // the totals stay
  EXPECT_FALSE(tcp.has_sent_since_last_loss());
}

// Per flow: what each carried while the peer's loss lasted (from its
// earliest lost segment on any flow in the window to its latest), and after
// its own last loss.
TEST(PeerTrackerTcpTest, FlowsWhileTheLossLastedAndSinceTheirLastLoss) {
  SimulatedClock clock;
  PeerConfig peer;
  peer.name = "b";
  PeerTracker tracker(peer, absl::Minutes(5), absl::Minutes(5), std::nullopt, &clock);
  auto read = [&](std::vector<FlowTcpSample> flows) {
    TcpSample s;
    for (const FlowTcpSample& f : flows) {
      s.retransmitted_segments += f.retransmitted_segments;
      s.sent_segments += f.sent_segments;
    }
    s.flows = std::move(flows);
    tracker.RecordTcp(s);
    clock.Advance(absl::Seconds(5));
  };
  auto flow = [&](uint32_t index) {
    const PeerSnapshot snapshot = tracker.Snapshot();
    for (const v1::FlowFigures& f : snapshot.status.flows()) {
      if (f.flow() == index) return f;
    }
    ADD_FAILURE() << "no flow " << index;
    return v1::FlowFigures();
  };
  read({{0, 0, 100, 0}, {1, 0, 100, 0}});
  EXPECT_FALSE(flow(0).has_sent_while_losing()) << "nothing lost yet";
  EXPECT_FALSE(flow(0).has_sent_since_last_loss());
  read({{0, 5, 100, 0}, {1, 0, 100, 0}});  // flow 0 loses: the loss begins here
  read({{0, 0, 100, 0}});                  // flow 1 quiet
  read({{0, 4, 100, 0}, {1, 0, 30, 0}});   // the loss goes on
  EXPECT_EQ(flow(0).sent_while_losing(), 200u);
  EXPECT_EQ(flow(0).lost_while_losing(), 4u);
  EXPECT_EQ(flow(0).sent_since_last_loss(), 0u);
  EXPECT_EQ(flow(1).sent_while_losing(), 30u) << "only after the read that saw it begin";
  EXPECT_EQ(flow(1).lost_while_losing(), 0u);
  EXPECT_FALSE(flow(1).has_sent_since_last_loss());
  // The loss stops (a repair): what the flows carry after it is no evidence
  // of what the loss spared.
  read({{0, 0, 100, 0}, {1, 0, 500, 0}});
  EXPECT_EQ(flow(0).sent_while_losing(), 200u);
  EXPECT_EQ(flow(0).sent_since_last_loss(), 100u);
  EXPECT_EQ(flow(1).sent_while_losing(), 30u);
  // A minute on, the lossy reads have left the window: nothing lost in it.
  for (int i = 0; i < 12; ++i) read({{0, 0, 100, 0}, {1, 0, 100, 0}});
  EXPECT_FALSE(flow(0).has_sent_while_losing());
  EXPECT_FALSE(flow(0).has_sent_since_last_loss());
}

TEST(PeerTrackerTcpTest, UnacknowledgedWhileUpUntilAcknowledgedOrAStateChange) {
  SimulatedClock clock;
  PeerConfig peer;
  peer.name = "b";
  PeerTracker tracker(peer, absl::Minutes(5), absl::Minutes(5), std::nullopt, &clock);
  tracker.RecordUnacknowledged(3, absl::Seconds(1));  // not up yet: stale
  EXPECT_FALSE(tracker.Snapshot().status.has_unacknowledged());
  tracker.SetUp("10.0.0.2:4000", "1.0");
  tracker.RecordUnacknowledged(2, absl::Milliseconds(1500));
  clock.Advance(absl::Seconds(1));
  v1::PeerStatus status = tracker.Snapshot().status;
  ASSERT_TRUE(status.has_unacknowledged());
  EXPECT_EQ(status.unacknowledged().retransmissions(), 2u);
  EXPECT_DOUBLE_EQ(status.unacknowledged().seconds(), 2.5);  // grows while it lasts
  tracker.RecordUnacknowledged(0, absl::ZeroDuration());
  EXPECT_FALSE(tracker.Snapshot().status.has_unacknowledged());
  tracker.RecordUnacknowledged(4, absl::Seconds(3));
  tracker.RecordFailure(v1::FAILURE_REASON_TIMEOUT, "ping timed out");
  EXPECT_FALSE(tracker.Snapshot().status.has_unacknowledged());
}

// A cut shorter than the Gloo timeout: the session survives it and the next
// read carries its retransmissions (a transfer's outstanding segments, each
// timeout's retry). They are the cut's, not loss; what the path loses after
// counts again. The totals keep everything.
TEST(PeerTrackerTcpTest, RetransmissionsOfACutAreNoLoss) {
  SimulatedClock clock;
  PeerConfig peer;
  peer.name = "b";
  PeerTracker tracker(peer, absl::Minutes(5), absl::Minutes(5), std::nullopt, &clock);
  tracker.SetUp("10.0.0.2:4000", "1.0");
  auto read = [&](uint64_t retransmitted, uint64_t sent) {
    TcpSample s;
    s.retransmitted_segments = retransmitted;
    s.sent_segments = sent;
    s.flows = {{0, retransmitted, sent, 0}};
    tracker.RecordTcp(s);
    clock.Advance(absl::Seconds(4));
  };
  read(0, 1000);
  tracker.RecordUnacknowledged(3, absl::Seconds(2));
  read(5, 10);  // a read while cut: its retransmissions are the cut's
  tracker.RecordUnacknowledged(0, absl::ZeroDuration());
  read(40, 1000);  // the first read after: the cut's too
  v1::PeerStatus status = tracker.Snapshot().status;
  EXPECT_EQ(status.tcp().loss_ratio(), 0) << status.tcp().ShortDebugString();
  EXPECT_EQ(status.tcp().retransmitted_segments(), 45u);
  ASSERT_EQ(status.flows_size(), 1);
  EXPECT_EQ(status.flows(0).window_lost_segments(), 0u);
  EXPECT_EQ(status.flows(0).lost_segments(), 45u);
  read(20, 990);  // lost since: loss again
  status = tracker.Snapshot().status;
  EXPECT_NEAR(status.tcp().loss_ratio(), 20.0 / 3000, 1e-9);
  EXPECT_EQ(status.flows(0).window_lost_segments(), 20u);
  // A new session forgets a cut that was never acknowledged.
  tracker.RecordUnacknowledged(3, absl::Seconds(2));
  tracker.RecordFailure(v1::FAILURE_REASON_TIMEOUT, "ping timed out");
  tracker.SetUp("10.0.0.2:4000", "1.0");
  read(10, 1000);
  EXPECT_EQ(tracker.Snapshot().status.flows(0).window_lost_segments(), 30u);
}

TEST(UnacknowledgedWatchTest, ReadsOnlyWhatMayBeUnacknowledgedAndReportsTwoTimeouts) {
  UnacknowledgedWatch watch(absl::Seconds(1), 2);
  const absl::Duration sent = absl::Seconds(100);
  TcpCounters acked, waiting, backed_off;
  waiting.unacked_segments = 1;
  waiting.timeout_retransmits = 1;
  backed_off.unacked_segments = 2;
  backed_off.timeout_retransmits = 3;
  EXPECT_FALSE(watch.NeedsRead(sent + absl::Milliseconds(500), sent));  // too young
  EXPECT_TRUE(watch.NeedsRead(sent + absl::Seconds(1), sent));
  EXPECT_FALSE(watch.Update(sent + absl::Seconds(1), sent, acked).has_value());
  EXPECT_FALSE(watch.NeedsRead(sent + absl::Seconds(5), sent));  // known acknowledged
  const absl::Duration next = sent + absl::Seconds(5);
  EXPECT_TRUE(watch.NeedsRead(next + absl::Seconds(1), next));
  EXPECT_FALSE(watch.Update(next + absl::Seconds(1), next, waiting).has_value());  // one timeout
  std::optional<UnacknowledgedWatch::Report> r =
      watch.Update(next + absl::Seconds(2), next, backed_off);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->retransmissions, 3u);
  EXPECT_EQ(r->at_least, absl::Seconds(2));
  // A standing report is read every time until acknowledged, then cleared once.
  EXPECT_TRUE(watch.NeedsRead(next + absl::Seconds(2), next));
  r = watch.Update(next + absl::Seconds(3), next, acked);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->retransmissions, 0u);
  EXPECT_FALSE(watch.Update(next + absl::Seconds(4), next, acked).has_value());
  watch.Reset();
  EXPECT_TRUE(watch.NeedsRead(next + absl::Seconds(4), next));
}

struct LastUnacknowledged final : ProbeObserver {
  void SetConnecting() override {}
  void SetUp(const std::string&, const std::string&) override {}
  void RecordFailure(v1::FailureReason, const std::string&) override {}
  void RecordRtts(const std::vector<absl::Duration>&) override {}
  void RecordOffset(const OffsetEstimate&) override {}
  void RecordBandwidth(BandwidthDirection, const BandwidthSample&) override {}
  void RecordUnacknowledged(uint32_t retransmissions, absl::Duration at_least) override {
    last = {retransmissions, at_least};
  }
  std::optional<std::pair<uint32_t, absl::Duration>> last;
};

TEST(TcpEventTest, UnacknowledgedRoundTrips) {
  const transport::v1::FromTransport m = UnacknowledgedMessage("b", 3, absl::Milliseconds(1250));
  ASSERT_EQ(m.peer().peer(), "b");
  LastUnacknowledged observer;
  ApplyPeerEvents(m.peer(), observer);
  ASSERT_TRUE(observer.last.has_value());
  EXPECT_EQ(observer.last->first, 3u);
  EXPECT_EQ(observer.last->second, absl::Milliseconds(1250));
}

}  // namespace
}  // namespace gloowatch
