// The bandwidth gate's accounting and budget, on an injected clock.
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "tests/support/simulated_clock.h"
#include "transport/probe_link.h"

namespace gloowatch {
namespace {

// Holds a started lease for `took` of fake time.
void Transfer(BandwidthGate& gate, SimulatedClock& clock, absl::Duration took) {
  std::optional<BandwidthGate::Lease> lease = gate.TryAcquire();
  ASSERT_TRUE(lease.has_value());
  lease->Start();
  clock.Advance(took);
}

TEST(BandwidthGateTest, OneTransferAtATime) {
  SimulatedClock clock;
  BandwidthGate gate(&clock, 1.0);
  std::optional<BandwidthGate::Lease> lease = gate.TryAcquire();
  ASSERT_TRUE(lease.has_value());
  EXPECT_FALSE(gate.TryAcquire().has_value());
  lease.reset();
  // Budget 1: free again as soon as the lease ends.
  EXPECT_TRUE(gate.TryAcquire().has_value());
}

TEST(BandwidthGateTest, ClosesForDurationOverBudgetFromTheTransferStart) {
  SimulatedClock clock;
  BandwidthGate gate(&clock, 0.01);
  const absl::Duration t = clock.Monotonic();
  Transfer(gate, clock, absl::Milliseconds(50));
  EXPECT_EQ(gate.transfer_time(), absl::Milliseconds(50));
  EXPECT_EQ(gate.open_at(), t + absl::Seconds(5));  // 50 ms / 1 %
  clock.Advance(absl::Seconds(5) - absl::Milliseconds(51));
  EXPECT_FALSE(gate.TryAcquire().has_value());
  clock.Advance(absl::Milliseconds(1));
  EXPECT_TRUE(gate.TryAcquire().has_value());
}

TEST(BandwidthGateTest, OnlyTheStartedPartOfALeaseCounts) {
  SimulatedClock clock;
  BandwidthGate gate(&clock, 0.1);
  {
    // Held while the peer said busy: never started, costs nothing.
    std::optional<BandwidthGate::Lease> lease = gate.TryAcquire();
    ASSERT_TRUE(lease.has_value());
    clock.Advance(absl::Milliseconds(3));
  }
  EXPECT_EQ(gate.transfer_time(), absl::ZeroDuration());
  EXPECT_TRUE(gate.TryAcquire().has_value());
  {
    std::optional<BandwidthGate::Lease> lease = gate.TryAcquire();
    ASSERT_TRUE(lease.has_value());
    clock.Advance(absl::Milliseconds(7));  // handshake before the start
    lease->Start();
    clock.Advance(absl::Milliseconds(20));
  }
  EXPECT_EQ(gate.transfer_time(), absl::Milliseconds(20));
}

TEST(BandwidthGateTest, ShareOverALongRunStaysWithinBudget) {
  // Greedy users retrying every 10 ms with transfers of varying length: the
  // time in transfers over 10 minutes is at most budget * elapsed plus one
  // transfer.
  SimulatedClock clock;
  const double budget = 0.05;
  BandwidthGate gate(&clock, budget);
  const absl::Duration begin = clock.Monotonic();
  int transfers = 0;
  absl::Duration longest;
  for (int i = 0; clock.Monotonic() - begin < absl::Minutes(10); ++i) {
    if (std::optional<BandwidthGate::Lease> lease = gate.TryAcquire()) {
      lease->Start();
      const absl::Duration took = absl::Milliseconds(20 + (i * 37) % 200);
      longest = std::max(longest, took);
      clock.Advance(took);
      ++transfers;
    } else {
      clock.Advance(absl::Milliseconds(10));
    }
  }
  const double elapsed = absl::ToDoubleSeconds(clock.Monotonic() - begin);
  const double spent = absl::ToDoubleSeconds(gate.transfer_time());
  EXPECT_LE(spent, budget * elapsed + absl::ToDoubleSeconds(longest));
  // And the budget is used, not wasted: within 10 % of it.
  EXPECT_GE(spent, 0.9 * budget * elapsed);
  EXPECT_GT(transfers, 100);
}

TEST(BandwidthGateTest, ANewBudgetAppliesToTheNextTransfer) {
  SimulatedClock clock;
  BandwidthGate gate(&clock, 0.5);
  const absl::Duration t = clock.Monotonic();
  Transfer(gate, clock, absl::Seconds(1));
  EXPECT_EQ(gate.open_at(), t + absl::Seconds(2));
  gate.SetBudget(0.1);
  clock.Advance(absl::Seconds(1));
  const absl::Duration t2 = clock.Monotonic();
  Transfer(gate, clock, absl::Seconds(1));
  EXPECT_EQ(gate.open_at(), t2 + absl::Seconds(10));
}

TEST(BandwidthGateTest, TransfersReuseOneRegionAndALargeOneIsFreed) {
  SimulatedClock clock;
  BandwidthGate gate(&clock, 1.0);
  const char* first = nullptr;
  {
    std::optional<BandwidthGate::Lease> lease = gate.TryAcquire();
    ASSERT_TRUE(lease.has_value());
    std::vector<char>& region = lease->Region(4 << 20);
    EXPECT_GE(region.size(), 4u << 20);
    first = region.data();
  }
  {
    std::optional<BandwidthGate::Lease> lease = gate.TryAcquire();
    ASSERT_TRUE(lease.has_value());
    EXPECT_EQ(lease->Region(1 << 20).data(), first);  // a smaller message fits the same one
    EXPECT_GE(lease->Region(64 << 20).size(), 64u << 20);
  }
  std::optional<BandwidthGate::Lease> lease = gate.TryAcquire();
  ASSERT_TRUE(lease.has_value());
  // The 64 MiB region went back after its transfer: what is here now is new.
  EXPECT_EQ(lease->Region(1).size(), 1u);
}

}  // namespace
}  // namespace gloowatch
