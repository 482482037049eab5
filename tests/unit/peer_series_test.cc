// The per-peer series are built from the trackers' snapshots at scrape time:
// exact values after known events, nothing before a first measurement, and
// the same figures GetStatus serves.
#include "daemon/peers/peer_series.h"

#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "channel/peer_events.h"
#include "common/proto_time.h"
#include "daemon/peers/peer_tracker.h"
#include "gtest/gtest.h"
#include "tests/support/simulated_clock.h"

namespace gloowatch {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

using Labels = std::map<std::string, std::string>;

std::map<std::string, MetricFamily> ByName(const std::vector<MetricFamily>& families) {
  std::map<std::string, MetricFamily> out;
  for (const MetricFamily& f : families) out.emplace(f.name, f);
  return out;
}

const ClientMetric* Find(const std::map<std::string, MetricFamily>& families,
                         const std::string& name, const Labels& labels) {
  auto it = families.find(name);
  if (it == families.end()) return nullptr;
  for (const ClientMetric& m : it->second.metric) {
    Labels got;
    for (const ClientMetric::Label& l : m.label) got[l.name] = l.value;
    if (got == labels) return &m;
  }
  return nullptr;
}

std::optional<double> Value(const std::map<std::string, MetricFamily>& families,
                            const std::string& name, const Labels& labels) {
  const ClientMetric* m = Find(families, name, labels);
  if (m == nullptr) return std::nullopt;
  return families.at(name).type == MetricType::Counter ? m->counter.value : m->gauge.value;
}

class PeerSeriesTest : public ::testing::Test {
 protected:
  std::shared_ptr<PeerTracker> AddTracker(const std::string& name,
                                          std::optional<double> link_speed = std::nullopt) {
    PeerConfig peer;
    peer.name = name;
    trackers_.push_back(std::make_shared<PeerTracker>(peer, absl::Seconds(60), absl::Seconds(60),
                                                      link_speed, &clock_));
    return trackers_.back();
  }

  std::map<std::string, MetricFamily> Collect() const { return ByName(series_.Collect()); }

  SimulatedClock clock_;
  std::vector<std::shared_ptr<PeerTracker>> trackers_;
  const PeerSeries series_{"node-a", [this] {
                             return std::vector<std::shared_ptr<const PeerTracker>>(
                                 trackers_.begin(), trackers_.end());
                           }};
};

const Labels kB = {{"node", "node-a"}, {"peer", "node-b"}};

Labels With(const std::string& key, const std::string& value) {
  Labels labels = kB;
  labels[key] = value;
  return labels;
}

TEST_F(PeerSeriesTest, NoPeersNoFamilies) { EXPECT_TRUE(series_.Collect().empty()); }

TEST_F(PeerSeriesTest, ANewPeerHasCountersAndHistogramButNoGauges) {
  AddTracker("node-b");
  const auto families = Collect();
  std::vector<std::string> names;
  for (const auto& [name, family] : families) names.push_back(name);
  EXPECT_EQ(names,
            (std::vector<std::string>{
                "gloowatch_peer_drops_total", "gloowatch_peer_latency_probes_lost_total",
                "gloowatch_peer_probe_failures_total", "gloowatch_peer_probes_total",
                "gloowatch_peer_rtt_seconds", "gloowatch_peer_tcp_retransmitted_segments_total",
                "gloowatch_peer_tcp_sent_segments_total",
                "gloowatch_peer_tcp_spurious_retransmitted_segments_total", "gloowatch_peer_up"}));
  EXPECT_EQ(Value(families, "gloowatch_peer_up", kB), 0);
  EXPECT_EQ(Value(families, "gloowatch_peer_latency_probes_lost_total", kB), 0);
  EXPECT_EQ(Value(families, "gloowatch_peer_drops_total", kB), 0);
  for (const char* reason :
       {"refused", "unreachable", "timeout", "reset", "protocol", "wrong_interface", "other"}) {
    EXPECT_EQ(Value(families, "gloowatch_peer_probe_failures_total", With("reason", reason)), 0)
        << reason;
  }
  EXPECT_EQ(families.at("gloowatch_peer_probe_failures_total").metric.size(), 7u);
  for (const char* kind : {"latency", "skew", "bandwidth"}) {
    EXPECT_EQ(Value(families, "gloowatch_peer_probes_total", With("kind", kind)), 0) << kind;
  }
  const ClientMetric* rtt = Find(families, "gloowatch_peer_rtt_seconds", kB);
  ASSERT_NE(rtt, nullptr);
  EXPECT_EQ(rtt->histogram.sample_count, 0u);
  EXPECT_EQ(rtt->histogram.bucket.size(), RttBucketBounds().size() + 1);
}

TEST_F(PeerSeriesTest, ExactValuesAfterKnownEvents) {
  PeerTracker& b = *AddTracker("node-b", 1e9);
  b.SetUp("127.0.0.1:1", "test");
  // 15 us, 15 us, 20 us (on a bound: counts in its bucket), 3 ms, 5 s (+Inf).
  b.RecordRtts({absl::Microseconds(15), absl::Microseconds(15), absl::Microseconds(20),
                absl::Milliseconds(3), absl::Seconds(5)});
  b.RecordOffset({absl::Microseconds(-250), absl::Microseconds(80), absl::Microseconds(40)});
  b.RecordBandwidth(BandwidthDirection::kTx, {4e8, 0, absl::ZeroDuration()});
  b.RecordBandwidth(BandwidthDirection::kRx, {8e8, 0, absl::ZeroDuration()});
  b.RecordTcp({12, 100, 2, absl::Microseconds(300), absl::Microseconds(40)});
  b.RecordFailure(v1::FAILURE_REASON_TIMEOUT, "no answer");
  b.RecordFailure(v1::FAILURE_REASON_TIMEOUT, "no answer");
  b.RecordFailure(v1::FAILURE_REASON_REFUSED, "nothing listens");
  b.RecordFailure(v1::FAILURE_REASON_UNSPECIFIED, "counts as other");

  const auto families = Collect();
  EXPECT_EQ(Value(families, "gloowatch_peer_up", kB), 0);
  EXPECT_EQ(Value(families, "gloowatch_peer_probe_failures_total", With("reason", "timeout")), 2);
  EXPECT_EQ(Value(families, "gloowatch_peer_probe_failures_total", With("reason", "refused")), 1);
  EXPECT_EQ(Value(families, "gloowatch_peer_probe_failures_total", With("reason", "other")), 1);
  EXPECT_EQ(Value(families, "gloowatch_peer_probe_failures_total", With("reason", "reset")), 0);
  EXPECT_EQ(Value(families, "gloowatch_peer_probes_total", With("kind", "latency")), 1);
  EXPECT_EQ(Value(families, "gloowatch_peer_probes_total", With("kind", "skew")), 1);
  EXPECT_EQ(Value(families, "gloowatch_peer_probes_total", With("kind", "bandwidth")), 2);

  const ClientMetric* rtt = Find(families, "gloowatch_peer_rtt_seconds", kB);
  ASSERT_NE(rtt, nullptr);
  EXPECT_EQ(rtt->histogram.sample_count, 5u);
  EXPECT_DOUBLE_EQ(rtt->histogram.sample_sum, 15e-6 + 15e-6 + 20e-6 + 3e-3 + 5);
  std::map<double, uint64_t> cumulative;
  for (const ClientMetric::Bucket& bucket : rtt->histogram.bucket) {
    cumulative[bucket.upper_bound] = bucket.cumulative_count;
  }
  EXPECT_EQ(cumulative[10e-6], 0u);
  EXPECT_EQ(cumulative[20e-6], 3u);
  EXPECT_EQ(cumulative[2e-3], 3u);
  EXPECT_EQ(cumulative[5e-3], 4u);
  EXPECT_EQ(cumulative[2.0], 4u);
  EXPECT_EQ(cumulative[std::numeric_limits<double>::infinity()], 5u);
  EXPECT_EQ(rtt->histogram.bucket.back().upper_bound, std::numeric_limits<double>::infinity());

  EXPECT_DOUBLE_EQ(*Value(families, "gloowatch_peer_clock_offset_seconds", kB), -250e-6);
  EXPECT_DOUBLE_EQ(*Value(families, "gloowatch_peer_clock_offset_error_seconds", kB), 40e-6);
  EXPECT_DOUBLE_EQ(
      *Value(families, "gloowatch_peer_bandwidth_bytes_per_second", With("direction", "tx")), 4e8);
  EXPECT_DOUBLE_EQ(
      *Value(families, "gloowatch_peer_bandwidth_bytes_per_second", With("direction", "rx")), 8e8);
  // Each direction its own ratio (the status keeps the slower one's).
  EXPECT_DOUBLE_EQ(*Value(families, "gloowatch_peer_bandwidth_link_ratio", With("direction", "tx")),
                   0.4);
  EXPECT_DOUBLE_EQ(*Value(families, "gloowatch_peer_bandwidth_link_ratio", With("direction", "rx")),
                   0.8);
  EXPECT_EQ(Value(families, "gloowatch_peer_tcp_retransmitted_segments_total", kB), 12);
  EXPECT_EQ(Value(families, "gloowatch_peer_tcp_spurious_retransmitted_segments_total", kB), 2);
  EXPECT_EQ(Value(families, "gloowatch_peer_tcp_sent_segments_total", kB), 100);
  EXPECT_DOUBLE_EQ(*Value(families, "gloowatch_peer_tcp_loss_ratio", kB), 0.1);
  EXPECT_DOUBLE_EQ(*Value(families, "gloowatch_peer_tcp_rtt_seconds", kB), 300e-6);
  EXPECT_DOUBLE_EQ(*Value(families, "gloowatch_peer_tcp_rtt_variation_seconds", kB), 40e-6);
}

// One slow transfer (a busy host) is no slow link: each direction is judged
// on the better of its last two transfers, in the status and the series
// alike. Two slow ones in a row (a capped link) are; a fast one clears it.
TEST_F(PeerSeriesTest, LinkRatioJudgesTheBetterOfTheLastTwoTransfers) {
  PeerTracker& b = *AddTracker("node-b", 1e9);
  b.SetUp("127.0.0.1:1", "test");
  b.RecordBandwidth(BandwidthDirection::kTx, {9e8, 0, absl::ZeroDuration()});
  b.RecordBandwidth(BandwidthDirection::kRx, {8e8, 0, absl::ZeroDuration()});
  b.RecordBandwidth(BandwidthDirection::kTx, {2.8e8, 0, absl::ZeroDuration()});  // one slow
  EXPECT_DOUBLE_EQ(b.Snapshot().status.bandwidth().link_ratio(), 0.8);
  EXPECT_DOUBLE_EQ(b.Snapshot().status.bandwidth().tx_bytes_per_second(), 2.8e8);  // the latest
  auto families = Collect();
  EXPECT_DOUBLE_EQ(*Value(families, "gloowatch_peer_bandwidth_link_ratio", With("direction", "tx")),
                   0.9);
  EXPECT_DOUBLE_EQ(
      *Value(families, "gloowatch_peer_bandwidth_bytes_per_second", With("direction", "tx")),
      2.8e8);
  b.RecordBandwidth(BandwidthDirection::kTx, {1e8, 0, absl::ZeroDuration()});  // slow again
  EXPECT_DOUBLE_EQ(b.Snapshot().status.bandwidth().link_ratio(), 0.28);
  families = Collect();
  EXPECT_DOUBLE_EQ(*Value(families, "gloowatch_peer_bandwidth_link_ratio", With("direction", "tx")),
                   0.28);
  b.RecordBandwidth(BandwidthDirection::kTx, {9.5e8, 0, absl::ZeroDuration()});  // repaired
  EXPECT_DOUBLE_EQ(b.Snapshot().status.bandwidth().link_ratio(), 0.8);
}

// How long a peer has been down is from the drop, not the last failed
// reconnect; data acknowledged again within a session says when the path
// came back. Both are what the client tells a fault's start and end with.
TEST_F(PeerSeriesTest, DownSinceTheDropAndAcknowledgedAgain) {
  PeerTracker& b = *AddTracker("node-b", 1e9);
  b.SetUp("127.0.0.1:1", "test");
  EXPECT_FALSE(b.Snapshot().status.has_down_since());
  const absl::Time drop = clock_.Now();
  b.RecordFailure(v1::FAILURE_REASON_TIMEOUT, "no answer");
  clock_.Advance(absl::Seconds(30));
  b.RecordFailure(v1::FAILURE_REASON_REFUSED, "nothing listens");
  v1::PeerStatus s = b.Snapshot().status;
  EXPECT_EQ(FromProtoTimestamp(s.down_since()), drop);
  EXPECT_EQ(FromProtoTimestamp(s.last_failure().time()), drop + absl::Seconds(30));
  b.SetUp("127.0.0.1:1", "test");
  EXPECT_FALSE(b.Snapshot().status.has_down_since());
  b.RecordUnacknowledged(3, absl::Seconds(1.5));
  EXPECT_FALSE(b.Snapshot().status.has_acknowledged_again_at());
  clock_.Advance(absl::Seconds(2));
  b.RecordUnacknowledged(0, absl::ZeroDuration());
  s = b.Snapshot().status;
  EXPECT_FALSE(s.has_unacknowledged());
  EXPECT_EQ(FromProtoTimestamp(s.acknowledged_again_at()), clock_.Now());
  // A new session starts without it.
  b.RecordFailure(v1::FAILURE_REASON_RESET, "closed");
  b.SetUp("127.0.0.1:1", "test");
  EXPECT_FALSE(b.Snapshot().status.has_acknowledged_again_at());
}

TEST_F(PeerSeriesTest, LabelsInNameOrderTypesAndHelp) {
  PeerTracker& b = *AddTracker("node-b", 1e9);
  b.RecordBandwidth(BandwidthDirection::kTx, {4e8, 0, absl::ZeroDuration()});
  const auto families = Collect();
  auto names = [](const ClientMetric& m) {
    std::vector<std::string> out;
    for (const ClientMetric::Label& l : m.label) out.push_back(l.name);
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(names(families.at("gloowatch_peer_up").metric[0]), (V{"node", "peer"}));
  EXPECT_EQ(names(families.at("gloowatch_peer_probe_failures_total").metric[0]),
            (V{"node", "peer", "reason"}));
  EXPECT_EQ(names(families.at("gloowatch_peer_probes_total").metric[0]),
            (V{"kind", "node", "peer"}));
  EXPECT_EQ(names(families.at("gloowatch_peer_bandwidth_link_ratio").metric[0]),
            (V{"direction", "node", "peer"}));
  EXPECT_EQ(families.at("gloowatch_peer_up").type, MetricType::Gauge);
  EXPECT_EQ(families.at("gloowatch_peer_rtt_seconds").type, MetricType::Histogram);
  EXPECT_EQ(families.at("gloowatch_peer_probes_total").type, MetricType::Counter);
  EXPECT_EQ(families.at("gloowatch_peer_up").help,
            "1 when the Gloo probe pair to the peer is connected and answering");
}

TEST_F(PeerSeriesTest, WithoutALinkSpeedNoLinkRatio) {
  PeerTracker& b = *AddTracker("node-b");
  b.RecordBandwidth(BandwidthDirection::kTx, {4e8, 0, absl::ZeroDuration()});
  const auto families = Collect();
  EXPECT_DOUBLE_EQ(
      *Value(families, "gloowatch_peer_bandwidth_bytes_per_second", With("direction", "tx")), 4e8);
  EXPECT_FALSE(Value(families, "gloowatch_peer_bandwidth_bytes_per_second", With("direction", "rx"))
                   .has_value());
  EXPECT_EQ(families.count("gloowatch_peer_bandwidth_link_ratio"), 0u);
}

TEST_F(PeerSeriesTest, UpFromSetUpUntilAFailure) {
  PeerTracker& b = *AddTracker("node-b");
  b.SetUp("127.0.0.1:1", "test");
  EXPECT_EQ(Value(Collect(), "gloowatch_peer_up", kB), 1);
  // A prober that reconnects without a failure: the state says connecting,
  // the gauge (as before the collector) stays up.
  b.SetConnecting();
  EXPECT_EQ(b.Snapshot().status.state(), v1::PEER_STATE_CONNECTING);
  EXPECT_EQ(Value(Collect(), "gloowatch_peer_up", kB), 1);
  b.RecordFailure(v1::FAILURE_REASON_RESET, "closed");
  EXPECT_EQ(Value(Collect(), "gloowatch_peer_up", kB), 0);
  b.SetConnecting();
  EXPECT_EQ(Value(Collect(), "gloowatch_peer_up", kB), 0);
}

TEST_F(PeerSeriesTest, StatusAndSeriesAgree) {
  PeerTracker& b = *AddTracker("node-b", 1e9);
  b.SetUp("127.0.0.1:1", "test");
  for (int i = 1; i <= 20; ++i) {
    b.RecordRtts({absl::Microseconds(10 * i)});
    clock_.Advance(absl::Seconds(1));
  }
  b.RecordOffset({absl::Microseconds(7), absl::Microseconds(30), absl::Microseconds(15)});
  b.RecordBandwidth(BandwidthDirection::kRx, {6e8, 0, absl::ZeroDuration()});
  b.RecordTcp({3, 300, 1, std::nullopt, std::nullopt});
  b.RecordFailure(v1::FAILURE_REASON_PROTOCOL, "bad answer");

  const v1::PeerStatus status = b.Snapshot().status;
  const auto families = Collect();
  EXPECT_EQ(*Value(families, "gloowatch_peer_rtt_p50_seconds", kB), status.latency().p50_seconds());
  EXPECT_EQ(*Value(families, "gloowatch_peer_rtt_p99_seconds", kB), status.latency().p99_seconds());
  EXPECT_EQ(*Value(families, "gloowatch_peer_clock_offset_seconds", kB),
            status.clock().offset_seconds());
  EXPECT_EQ(*Value(families, "gloowatch_peer_bandwidth_bytes_per_second", With("direction", "rx")),
            status.bandwidth().rx_bytes_per_second());
  EXPECT_EQ(*Value(families, "gloowatch_peer_bandwidth_link_ratio", With("direction", "rx")),
            status.bandwidth().link_ratio());
  EXPECT_EQ(*Value(families, "gloowatch_peer_tcp_loss_ratio", kB), status.tcp().loss_ratio());
  EXPECT_EQ(*Value(families, "gloowatch_peer_tcp_sent_segments_total", kB),
            static_cast<double>(status.tcp().sent_segments()));
  double failures = 0;
  for (const ClientMetric& m : families.at("gloowatch_peer_probe_failures_total").metric) {
    failures += m.counter.value;
  }
  EXPECT_EQ(failures, static_cast<double>(status.probes_failed()));
  EXPECT_EQ(*Value(families, "gloowatch_peer_probe_failures_total", With("reason", "protocol")),
            static_cast<double>(status.failures_by_reason().at("protocol")));
  double probes = 0;
  for (const ClientMetric& m : families.at("gloowatch_peer_probes_total").metric) {
    probes += m.counter.value;
  }
  EXPECT_EQ(probes, static_cast<double>(status.probes_ok()));
  EXPECT_EQ(Find(families, "gloowatch_peer_rtt_seconds", kB)->histogram.sample_count, 20u);
}

TEST_F(PeerSeriesTest, JitterIsP99MinusP50OfTheWindow) {
  PeerTracker& b = *AddTracker("node-b");
  b.SetUp("127.0.0.1:1", "test");
  // 1 .. 100 us: nearest rank gives p50 = 50 us, p99 = 99 us.
  std::vector<absl::Duration> rtts;
  for (int i = 1; i <= 100; ++i) rtts.push_back(absl::Microseconds(i));
  b.RecordRtts(rtts);
  v1::LatencyFigures latency = b.Snapshot().status.latency();
  EXPECT_DOUBLE_EQ(latency.p50_seconds(), 50e-6);
  EXPECT_DOUBLE_EQ(latency.p99_seconds(), 99e-6);
  ASSERT_TRUE(latency.has_jitter_seconds());
  EXPECT_DOUBLE_EQ(latency.jitter_seconds(), 99e-6 - 50e-6);
  EXPECT_EQ(*Value(Collect(), "gloowatch_peer_rtt_jitter_seconds", kB), latency.jitter_seconds());

  // The window (60 s) moves on: one steady sample left, no jitter.
  clock_.Advance(absl::Seconds(61));
  b.RecordRtts({absl::Microseconds(20)});
  latency = b.Snapshot().status.latency();
  EXPECT_EQ(latency.samples_in_window(), 1u);
  EXPECT_EQ(latency.jitter_seconds(), 0);
  EXPECT_EQ(*Value(Collect(), "gloowatch_peer_rtt_jitter_seconds", kB), 0);

  // No RTT yet, no jitter series (0 would read as a perfect link).
  AddTracker("node-c");
  EXPECT_FALSE(Value(Collect(), "gloowatch_peer_rtt_jitter_seconds",
                     {{"node", "node-a"}, {"peer", "node-c"}})
                   .has_value());
}

TEST_F(PeerSeriesTest, LostLatencyProbesCountedSinceStartAndInTheFailureWindow) {
  PeerTracker& b = *AddTracker("node-b");
  b.SetUp("127.0.0.1:1", "test");
  // What the prober reports for a ping that timed out: the lost probe, then
  // the timeout failure that ends the session.
  b.RecordLatencyProbeLost();
  b.RecordFailure(v1::FAILURE_REASON_TIMEOUT, "Timed out waiting");
  clock_.Advance(absl::Seconds(30));
  b.SetUp("127.0.0.1:1", "test");
  b.RecordLatencyProbeLost();
  b.RecordFailure(v1::FAILURE_REASON_TIMEOUT, "Timed out waiting");
  // Another timeout (a skew probe's, a connect's) is a failure, not a lost ping.
  b.RecordFailure(v1::FAILURE_REASON_TIMEOUT, "Timed out connecting");

  v1::PeerStatus status = b.Snapshot().status;
  EXPECT_EQ(status.latency().lost_probes(), 2u);
  EXPECT_EQ(status.latency().lost_probes_in_window(), 2u);
  EXPECT_EQ(status.failures_by_reason().at("timeout"), 3u);
  auto families = Collect();
  EXPECT_EQ(Value(families, "gloowatch_peer_latency_probes_lost_total", kB), 2);
  EXPECT_EQ(Value(families, "gloowatch_peer_probe_failures_total", With("reason", "timeout")), 3);
  EXPECT_EQ(families.at("gloowatch_peer_latency_probes_lost_total").type, MetricType::Counter);

  // The failure window (60 s) forgets the first, then the second; the
  // counter does not.
  clock_.Advance(absl::Seconds(31));
  status = b.Snapshot().status;
  EXPECT_EQ(status.latency().lost_probes(), 2u);
  EXPECT_EQ(status.latency().lost_probes_in_window(), 1u);
  clock_.Advance(absl::Seconds(30));
  status = b.Snapshot().status;
  EXPECT_EQ(status.latency().lost_probes_in_window(), 0u);
  EXPECT_EQ(Value(Collect(), "gloowatch_peer_latency_probes_lost_total", kB), 2);

  // The transport's event for it reaches the tracker.
  transport::v1::PeerEvent event;
  event.mutable_latency_probe_lost();
  ApplyPeerEvent(event, b);
  EXPECT_EQ(b.Snapshot().status.latency().lost_probes(), 3u);
}

TEST_F(PeerSeriesTest, DropsAreStepsFromUpToDownNotTheFailedReconnectsAfterThem) {
  PeerTracker& b = *AddTracker("node-b");
  // Failures before the peer was ever up (it is starting) drop nothing.
  b.RecordFailure(v1::FAILURE_REASON_REFUSED, "nothing listens");
  b.SetConnecting();
  b.RecordFailure(v1::FAILURE_REASON_REFUSED, "nothing listens");
  EXPECT_EQ(b.Snapshot().drops, 0u);
  // A restart of the peer: one drop (the reset), then refused reconnects.
  b.SetUp("127.0.0.1:1", "test");
  b.RecordFailure(v1::FAILURE_REASON_RESET, "Connection reset by peer");
  for (int i = 0; i < 4; ++i) {
    b.SetConnecting();
    b.RecordFailure(v1::FAILURE_REASON_REFUSED, "nothing listens");
  }
  PeerSnapshot snapshot = b.Snapshot();
  EXPECT_EQ(snapshot.drops, 1u);
  EXPECT_EQ(snapshot.status.drops_in_window(), 1u);
  EXPECT_EQ(snapshot.status.failures_in_window(), 5u);
  // A flapping link: every up that fails again is a drop.
  clock_.Advance(absl::Seconds(30));
  for (int i = 0; i < 3; ++i) {
    b.SetConnecting();
    b.SetUp("127.0.0.1:1", "test");
    b.RecordFailure(v1::FAILURE_REASON_TIMEOUT, "Timed out");
  }
  // Reconnecting with new pairs (a reload) without a failure is no drop.
  b.SetConnecting();
  b.SetUp("127.0.0.1:1", "test");
  b.SetConnecting();
  b.SetUp("127.0.0.1:1", "test");
  snapshot = b.Snapshot();
  EXPECT_EQ(snapshot.drops, 4u);
  EXPECT_EQ(snapshot.status.drops_in_window(), 4u);
  auto families = Collect();
  EXPECT_EQ(Value(families, "gloowatch_peer_drops_total", kB), 4);
  EXPECT_EQ(families.at("gloowatch_peer_drops_total").type, MetricType::Counter);
  // The failure window (60 s) forgets the restart's drop, then the flaps';
  // the counter keeps them.
  clock_.Advance(absl::Seconds(31));
  EXPECT_EQ(b.Snapshot().status.drops_in_window(), 3u);
  clock_.Advance(absl::Seconds(30));
  EXPECT_EQ(b.Snapshot().status.drops_in_window(), 0u);
  EXPECT_EQ(Value(Collect(), "gloowatch_peer_drops_total", kB), 4);
}

TEST_F(PeerSeriesTest, EveryFailureHasItsTimeAndTheLastOneIsExported) {
  PeerTracker& b = *AddTracker("node-b");
  EXPECT_FALSE(b.Snapshot().status.has_last_failure());
  EXPECT_FALSE(Value(Collect(), "gloowatch_peer_last_failure_timestamp_seconds", kB).has_value());
  // Before the peer was ever up, through the transport's event, and after.
  transport::v1::PeerEvent event;
  event.mutable_failure()->set_reason(v1::FAILURE_REASON_REFUSED);
  event.mutable_failure()->set_message("nothing listens");
  ApplyPeerEvent(event, b);
  v1::PeerStatus status = b.Snapshot().status;
  ASSERT_TRUE(status.last_failure().has_time());
  EXPECT_EQ(FromProtoTimestamp(status.last_failure().time()), clock_.Now());
  EXPECT_DOUBLE_EQ(*Value(Collect(), "gloowatch_peer_last_failure_timestamp_seconds", kB),
                   absl::ToDoubleSeconds(clock_.Now() - absl::UnixEpoch()));

  b.SetUp("127.0.0.1:1", "test");
  clock_.Advance(absl::Milliseconds(2500));
  b.RecordFailure(v1::FAILURE_REASON_TIMEOUT, "Timed out");
  status = b.Snapshot().status;
  EXPECT_EQ(FromProtoTimestamp(status.last_failure().time()), clock_.Now());
  const auto families = Collect();
  EXPECT_DOUBLE_EQ(*Value(families, "gloowatch_peer_last_failure_timestamp_seconds", kB),
                   absl::ToDoubleSeconds(clock_.Now() - absl::UnixEpoch()));
  EXPECT_EQ(families.at("gloowatch_peer_last_failure_timestamp_seconds").type, MetricType::Gauge);
  // Up again: the last failure and its time stay (history, not state).
  b.SetUp("127.0.0.1:1", "test");
  clock_.Advance(absl::Minutes(3));
  EXPECT_EQ(FromProtoTimestamp(b.Snapshot().status.last_failure().time()),
            clock_.Now() - absl::Minutes(3));
}

TEST_F(PeerSeriesTest, RecentP50CoversTheLastMinuteOnly) {
  PeerConfig peer;
  peer.name = "node-b";
  // The default latency window: 5 minutes.
  trackers_.push_back(
      std::make_shared<PeerTracker>(peer, absl::Minutes(5), absl::Hours(1), std::nullopt, &clock_));
  PeerTracker& b = *trackers_.back();
  b.SetUp("127.0.0.1:1", "test");
  EXPECT_FALSE(b.Snapshot().status.latency().has_recent_p50_seconds());
  // A fault: 10 ms round trips for two minutes, then repaired: 100 us.
  for (int i = 0; i < 24; ++i) {
    b.RecordRtts({absl::Milliseconds(10), absl::Milliseconds(10), absl::Milliseconds(10)});
    clock_.Advance(absl::Seconds(5));
  }
  EXPECT_DOUBLE_EQ(b.Snapshot().status.latency().recent_p50_seconds(), 10e-3);
  for (int i = 0; i < 12; ++i) {
    clock_.Advance(absl::Seconds(5));
    b.RecordRtts({absl::Microseconds(100), absl::Microseconds(100), absl::Microseconds(100)});
  }
  // A minute after the repair: the 5-minute median still reads the fault,
  // the recent one does not.
  const v1::LatencyFigures latency = b.Snapshot().status.latency();
  EXPECT_DOUBLE_EQ(latency.p50_seconds(), 10e-3);
  EXPECT_DOUBLE_EQ(latency.recent_p50_seconds(), 100e-6);
  auto families = Collect();
  EXPECT_DOUBLE_EQ(*Value(families, "gloowatch_peer_rtt_recent_p50_seconds", kB), 100e-6);
  EXPECT_DOUBLE_EQ(*Value(families, "gloowatch_peer_rtt_p50_seconds", kB), 10e-3);
  EXPECT_EQ(families.at("gloowatch_peer_rtt_recent_p50_seconds").type, MetricType::Gauge);
  // No round trip for a minute (the link went down): no recent figure.
  b.RecordFailure(v1::FAILURE_REASON_TIMEOUT, "Timed out");
  clock_.Advance(absl::Seconds(61));
  EXPECT_FALSE(b.Snapshot().status.latency().has_recent_p50_seconds());
  EXPECT_FALSE(Value(Collect(), "gloowatch_peer_rtt_recent_p50_seconds", kB).has_value());
}

TEST_F(PeerSeriesTest, PeerDaemonSilenceAsItsTransportLastSaidIt) {
  PeerTracker& b = *AddTracker("node-b");
  EXPECT_FALSE(b.Snapshot().status.has_peer_daemon());
  EXPECT_FALSE(Value(Collect(), "gloowatch_peer_daemon_silent_seconds", kB).has_value());
  b.SetUp("127.0.0.1:1", "test");
  b.RecordPeerDaemon(0.0);
  ASSERT_TRUE(b.Snapshot().status.peer_daemon().has_silent_seconds());
  EXPECT_EQ(b.Snapshot().status.peer_daemon().silent_seconds(), 0.0);
  EXPECT_EQ(Value(Collect(), "gloowatch_peer_daemon_silent_seconds", kB), 0);

  // Through the transport's event: the peer's daemon froze 7 s ago.
  transport::v1::PeerEvent event;
  event.mutable_peer_daemon()->set_silent_seconds(7);
  ApplyPeerEvent(event, b);
  EXPECT_EQ(b.Snapshot().status.peer_daemon().silent_seconds(), 7.0);
  const auto families = Collect();
  EXPECT_EQ(Value(families, "gloowatch_peer_daemon_silent_seconds", kB), 7);
  EXPECT_EQ(families.at("gloowatch_peer_daemon_silent_seconds").type, MetricType::Gauge);
  // Kept while the peer is down: what its transport said last.
  b.RecordFailure(v1::FAILURE_REASON_TIMEOUT, "Timed out");
  EXPECT_EQ(b.Snapshot().status.peer_daemon().silent_seconds(), 7.0);

  // A peer of an older version says nothing: unknown, no series.
  transport::v1::PeerEvent unknown;
  unknown.mutable_peer_daemon();
  ApplyPeerEvent(unknown, b);
  EXPECT_FALSE(b.Snapshot().status.has_peer_daemon());
  EXPECT_FALSE(b.Snapshot().status.peer_daemon().has_silent_seconds());
  EXPECT_FALSE(Value(Collect(), "gloowatch_peer_daemon_silent_seconds", kB).has_value());
}

TEST_F(PeerSeriesTest, ARemovedPeerStopsAppearing) {
  AddTracker("node-b");
  AddTracker("node-c")->RecordFailure(v1::FAILURE_REASON_REFUSED, "nothing listens");
  auto families = Collect();
  EXPECT_EQ(families.at("gloowatch_peer_up").metric.size(), 2u);
  EXPECT_EQ(Value(families, "gloowatch_peer_probe_failures_total",
                  {{"node", "node-a"}, {"peer", "node-c"}, {"reason", "refused"}}),
            1);
  trackers_.pop_back();  // a reload or a rotation drops node-c
  families = Collect();
  for (const auto& [name, family] : families) {
    for (const ClientMetric& m : family.metric) {
      for (const ClientMetric::Label& l : m.label) {
        EXPECT_FALSE(l.name == "peer" && l.value == "node-c") << name;
      }
    }
  }
  EXPECT_EQ(families.at("gloowatch_peer_up").metric.size(), 1u);
}

}  // namespace
}  // namespace gloowatch
