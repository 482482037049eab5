// PeerProber on simulated time, in an in-process cluster: backoff toward a
// peer that is down, and the probe schedule toward one that is up, asserted
// exactly instead of "at least N probes in 3 s".
#include <algorithm>
#include <optional>

#include "daemon/peers/peer_tracker.h"
#include "gtest/gtest.h"
#include "tests/inprocess/inprocess_cluster.h"

namespace gloowatch::inprocess {
namespace {

// The base of the n-th backoff wait (n from 0): doubles from `initial`,
// capped at `max`; Backoff draws the wait from [base / 2, base].
absl::Duration BackoffBase(absl::Duration initial, absl::Duration max, int n) {
  absl::Duration base = initial;
  for (int i = 0; i < n; ++i) base = std::min(base * 2, max);
  return base;
}

// Simulated time up to `end`, from one wait's end to the next, then until
// the prober waits again (the probe due at `end`, if any, done).
void RunUntil(SimulatedClock& clock, absl::Duration end) {
  for (int wakes = 0; clock.Monotonic() < end; ++wakes) {
    ASSERT_LT(wakes, 1000);
    const std::optional<absl::Duration> wake = clock.AwaitPendingDeadline(kRealTimeout);
    ASSERT_TRUE(wake.has_value()) << "the prober stopped waiting";
    clock.AdvanceTo(std::min(*wake, end));
  }
  ASSERT_TRUE(clock.AwaitPendingDeadline(kRealTimeout).has_value());
}

TEST(PeerProberInProcessTest, BackoffTowardADownPeerDoublesAndCaps) {
  RecordingObserver observer;
  absl::StatusOr<std::unique_ptr<InProcessCluster>> cluster = InProcessCluster::Spawn(1);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  SimulatedClock& clock = (*cluster)->clock();
  RefusingPort down;
  ASSERT_NE(down.port(), 0);
  Config config = SmallConfig("node-0");
  config.probe.backoff_initial = absl::Milliseconds(500);
  config.probe.backoff_max = absl::Seconds(4);
  PeerConfig peer{"node-down", HostPort{"127.0.0.1", static_cast<uint16_t>(down.port())}, "", {}};
  (*cluster)->StartProber(0, peer, config, &observer);

  // 500 ms, 1 s, 2 s, 4 s, then 4 s again: each wait starts when the
  // failure before it was recorded and lasts Backoff's draw, never more.
  for (int n = 0; n < 6; ++n) {
    const std::optional<absl::Duration> wake = clock.AwaitPendingDeadline(kRealTimeout);
    ASSERT_TRUE(wake.has_value()) << "the prober did not go to sleep after failure " << n + 1;
    EXPECT_EQ(observer.failures(), n + 1);
    const absl::Duration wait = *wake - clock.Monotonic();
    const absl::Duration base =
        BackoffBase(config.probe.backoff_initial, config.probe.backoff_max, n);
    EXPECT_GE(wait, base / 2) << "wait " << n;
    EXPECT_LE(wait, base) << "wait " << n;
    clock.AdvanceTo(*wake);
  }
  EXPECT_TRUE(observer.AwaitFailures(7));
  EXPECT_NE(observer.last_failure().find("OpenProbePair"), std::string::npos)
      << observer.last_failure();
  EXPECT_EQ(observer.ups(), 0);
}

// Probes counted over one simulated minute of a prober toward a reachable
// peer, with latency and skew at the given intervals (jitter 10%).
struct MinuteOfProbes {
  int latency = 0, skew = 0, bandwidth = 0, failures = 0, ups = 0;
};

void ProbeForAMinute(absl::Duration latency_interval, absl::Duration skew_interval,
                     MinuteOfProbes* counted) {
  RecordingObserver observer;
  absl::StatusOr<std::unique_ptr<InProcessCluster>> cluster = InProcessCluster::Spawn(2);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  SimulatedClock& clock = (*cluster)->clock();
  // A bandwidth transfer times itself and needs time to pass while it runs,
  // which simulated time does not: node-0's gate is held, as by another
  // transfer, so bandwidth probes are deferred and never run.
  std::optional<BandwidthGate::Lease> held = (*cluster)->node(0).gate->TryAcquire();
  ASSERT_TRUE(held.has_value());
  Config config = SmallConfig("node-0");
  config.schedule.latency_interval = latency_interval;
  config.schedule.skew_interval = skew_interval;
  config.schedule.jitter = 0.1;
  (*cluster)->StartProber(0, (*cluster)->PeerConfigOf(1), config, &observer);
  ASSERT_TRUE(observer.AwaitUps(1)) << observer.last_failure();

  // One minute of simulated time, from one wait's end to the next.
  const absl::Duration start = clock.Monotonic();
  const absl::Duration end = start + absl::Minutes(1);
  int wakes = 0;
  while (clock.Monotonic() < end) {
    const std::optional<absl::Duration> wake = clock.AwaitPendingDeadline(kRealTimeout);
    ASSERT_TRUE(wake.has_value()) << "the prober stopped waiting at " << clock.Monotonic() - start;
    // Keepalives (every Gloo timeout / 2 = 1 s) bound every wait.
    EXPECT_LE(*wake - clock.Monotonic(), absl::Seconds(1));
    clock.AdvanceTo(std::min(*wake, end));
    ASSERT_LT(++wakes, 1000);
  }
  // Let the probe due at `end`, if any, finish: the prober then waits again.
  ASSERT_TRUE(clock.AwaitPendingDeadline(kRealTimeout).has_value());
  counted->latency = observer.latency_probes();
  counted->skew = observer.skew_probes();
  counted->bandwidth = observer.bandwidth_samples();
  counted->failures = observer.failures();
  counted->ups = observer.ups();
}

TEST(PeerProberInProcessTest, ReachablePeerIsProbedAtItsIntervals) {
  MinuteOfProbes counted;
  ProbeForAMinute(absl::Seconds(5), absl::Seconds(10), &counted);
  // Latency at once, then every 5 s +-10%: 1 + [60 / 5.5, 60 / 4.5] probes;
  // skew every 10 s +-10%: 1 + [60 / 11, 60 / 9], from the samples of every
  // other latency probe (the 8-byte pings carry the peer's timestamps).
  EXPECT_GE(counted.latency, 1 + 10);
  EXPECT_LE(counted.latency, 1 + 13);
  EXPECT_GE(counted.skew, 1 + 5);
  EXPECT_LE(counted.skew, 1 + 6);
  EXPECT_EQ(counted.bandwidth, 0);
  EXPECT_EQ(counted.failures, 0);
  EXPECT_EQ(counted.ups, 1);
}

// Skew asked for more often than latency runs as a probe of its own.
TEST(PeerProberInProcessTest, SkewMoreFrequentThanLatencyIsAProbeOfItsOwn) {
  MinuteOfProbes counted;
  ProbeForAMinute(absl::Seconds(10), absl::Seconds(5), &counted);
  EXPECT_GE(counted.latency, 1 + 5);
  EXPECT_LE(counted.latency, 1 + 6);
  EXPECT_GE(counted.skew, 1 + 10);
  EXPECT_LE(counted.skew, 1 + 13);
  EXPECT_EQ(counted.failures, 0);
}

// What a reload does to a running prober: new intervals apply at once,
// without reconnecting.
TEST(PeerProberInProcessTest, UpdatedScheduleAppliesWithoutReconnecting) {
  RecordingObserver observer;
  absl::StatusOr<std::unique_ptr<InProcessCluster>> cluster = InProcessCluster::Spawn(2);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  SimulatedClock& clock = (*cluster)->clock();
  std::optional<BandwidthGate::Lease> held = (*cluster)->node(0).gate->TryAcquire();
  ASSERT_TRUE(held.has_value());
  Config config = SmallConfig("node-0");
  config.schedule.latency_interval = absl::Seconds(5);
  config.schedule.jitter = 0.1;
  PeerProber& prober = (*cluster)->StartProber(0, (*cluster)->PeerConfigOf(1), config, &observer);
  ASSERT_TRUE(observer.AwaitUps(1)) << observer.last_failure();
  const std::optional<absl::Duration> asleep = clock.AwaitPendingDeadline(kRealTimeout);
  ASSERT_TRUE(asleep.has_value());
  // Latency and skew ran at once; the keepalive (1 s) or bandwidth comes next.
  EXPECT_GE(*asleep - clock.Monotonic(), absl::Milliseconds(500));
  const int before = observer.latency_probes();
  EXPECT_EQ(before, 1);

  ScheduleConfig faster = config.schedule;
  faster.latency_interval = absl::Milliseconds(100);
  prober.UpdateSchedule(faster);
  // The prober wakes for the update, brings latency forward and sleeps again,
  // all at the same simulated moment.
  ASSERT_TRUE(clock.AwaitPendingDeadline(kRealTimeout, *asleep).has_value());
  EXPECT_LE(*clock.AwaitPendingDeadline(kRealTimeout) - clock.Monotonic(), absl::Milliseconds(110));
  RunUntil(clock, clock.Monotonic() + absl::Seconds(3));
  if (HasFatalFailure()) return;
  // Every 100 ms +-10% for 3 s, the first within 110 ms of the update:
  // between 1 + (3 - 0.11) / 0.11 and 3 / 0.09.
  const int after = observer.latency_probes() - before;
  EXPECT_GE(after, 27);
  EXPECT_LE(after, 34);
  EXPECT_EQ(observer.ups(), 1) << "reconnected";
  EXPECT_EQ(observer.failures(), 0) << observer.last_failure();
}

// Every connection as the kernel shows one whose handshake was repeated (a
// SYN retransmitted while the path was still cut, counted in
// tcpi_total_retrans): two retransmissions from the start, then 10 more data
// segments at each read, none of them lost.
class RepeatedHandshakeTcpStats final : public TcpStatsSource {
 public:
  absl::StatusOr<TcpCounters> Read(TcpConnection&) const override {
    absl::MutexLock lock(&mu_);
    TcpCounters counters;
    counters.retransmitted_segments = 2;
    counters.sent_segments = 10 * ++reads_;
    return counters;
  }

 private:
  mutable absl::Mutex mu_;
  mutable uint64_t reads_ ABSL_GUARDED_BY(mu_) = 0;
};

// A session that connects the moment a cut ends reports no loss for its
// handshake's retransmissions: they are the baseline, not a lossy link.
TEST(PeerProberInProcessTest, TheHandshakesRetransmissionsAreNoLoss) {
  RecordingObserver observer;
  RepeatedHandshakeTcpStats tcp_stats;
  absl::StatusOr<std::unique_ptr<InProcessCluster>> cluster = InProcessCluster::Spawn(2);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  SimulatedClock& clock = (*cluster)->clock();
  std::optional<BandwidthGate::Lease> held = (*cluster)->node(0).gate->TryAcquire();
  ASSERT_TRUE(held.has_value());
  Config config = SmallConfig("node-0");
  config.schedule.latency_interval = absl::Seconds(1);
  (*cluster)->StartProber(0, (*cluster)->PeerConfigOf(1), config, &observer, &tcp_stats);
  ASSERT_TRUE(observer.AwaitUps(1)) << observer.last_failure();
  // Reads ride on latency probes at most every 4 s: 12 s hold at least two.
  RunUntil(clock, clock.Monotonic() + absl::Seconds(12));
  if (HasFatalFailure()) return;
  EXPECT_GE(observer.tcp_reads(), 2);
  EXPECT_GT(observer.tcp_totals().sent_segments, 0u);
  EXPECT_EQ(observer.tcp_totals().retransmitted_segments, 0u);
  EXPECT_EQ(observer.failures(), 0) << observer.last_failure();
}

// The daemon's tracker fed by a prober that keeps failing: each failure
// counts for exactly thresholds.failure_window (1 h) of simulated time.
TEST(PeerProberInProcessTest, TrackerCountsFailuresForExactlyTheFailureWindow) {
  RefusingPort down;
  ASSERT_NE(down.port(), 0);
  const PeerConfig peer{
      "node-down", HostPort{"127.0.0.1", static_cast<uint16_t>(down.port())}, "", {}};
  std::optional<PeerTracker> tracker;  // outlives the cluster's prober
  absl::StatusOr<std::unique_ptr<InProcessCluster>> cluster = InProcessCluster::Spawn(1);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  SimulatedClock& clock = (*cluster)->clock();
  tracker.emplace(peer, absl::Minutes(5), absl::Hours(1), std::nullopt, &clock);
  // Up once before (a peer's failures before it was ever up are not counted).
  tracker->SetUp("127.0.0.1:1", "test");
  PeerProber& prober = (*cluster)->StartProber(0, peer, SmallConfig("node-0"), &*tracker);

  std::vector<absl::Duration> failed_at;  // Monotonic(), which is Now() - UnixEpoch()
  for (int n = 0; n < 4; ++n) {
    const std::optional<absl::Duration> wake = clock.AwaitPendingDeadline(kRealTimeout);
    ASSERT_TRUE(wake.has_value());
    failed_at.push_back(clock.Monotonic());  // the failure before this wait
    clock.AdvanceTo(*wake);
  }
  ASSERT_TRUE(clock.AwaitPendingDeadline(kRealTimeout).has_value());
  failed_at.push_back(clock.Monotonic());
  prober.Stop();
  ASSERT_TRUE(prober.Join(kRealTimeout));

  auto in_window = [&tracker] { return tracker->Snapshot().status.failures_in_window(); };
  EXPECT_EQ(in_window(), 5u);
  EXPECT_EQ(tracker->Snapshot().status.probes_failed(), 5u);
  for (size_t i = 0; i < failed_at.size(); ++i) {
    // Still counted exactly one window after it, gone a nanosecond later.
    clock.AdvanceTo(failed_at[i] + absl::Hours(1));
    EXPECT_EQ(in_window(), failed_at.size() - i) << "failure " << i;
    clock.Advance(absl::Nanoseconds(1));
    EXPECT_EQ(in_window(), failed_at.size() - i - 1) << "failure " << i;
  }
}

}  // namespace
}  // namespace gloowatch::inprocess
