#include "common/estimators.h"

#include <algorithm>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace gloowatch {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1700000000);

// Builds one exchange from ground truth: the peer clock reads ours plus
// `offset`, the request takes `forward` and the reply `backward`.
TimestampSample Exchange(absl::Duration offset, absl::Duration forward, absl::Duration backward,
                         absl::Duration peer_processing = absl::Microseconds(50),
                         absl::Time t0 = kStart) {
  TimestampSample s;
  s.t0 = t0;
  s.t1 = t0 + forward + offset;
  s.t2 = s.t1 + peer_processing;
  s.t3 = s.t2 - offset + backward;
  return s;
}

absl::Duration Abs(absl::Duration d) { return d < absl::ZeroDuration() ? -d : d; }

TEST(EstimateOffsetTest, SymmetricDelayGivesExactOffset) {
  const absl::Duration offset = absl::Milliseconds(3);
  OffsetEstimate e =
      EstimateOffset(Exchange(offset, absl::Microseconds(200), absl::Microseconds(200)));
  EXPECT_EQ(e.offset, offset);
  EXPECT_EQ(e.delay, absl::Microseconds(400));
  EXPECT_EQ(e.error, absl::Microseconds(200));
}

TEST(EstimateOffsetTest, ZeroOffsetZeroDelay) {
  OffsetEstimate e =
      EstimateOffset(Exchange(absl::ZeroDuration(), absl::ZeroDuration(), absl::ZeroDuration()));
  EXPECT_EQ(e.offset, absl::ZeroDuration());
  EXPECT_EQ(e.delay, absl::ZeroDuration());
  EXPECT_EQ(e.error, absl::ZeroDuration());
}

TEST(EstimateOffsetTest, AsymmetricDelayErrorIsHalfTheAsymmetryAndWithinBound) {
  const absl::Duration offset = absl::Milliseconds(7);
  const absl::Duration forward = absl::Microseconds(900);
  const absl::Duration backward = absl::Microseconds(100);
  OffsetEstimate e = EstimateOffset(Exchange(offset, forward, backward));
  EXPECT_EQ(e.offset - offset, (forward - backward) / 2);
  EXPECT_EQ(e.delay, forward + backward);
  EXPECT_LE(Abs(e.offset - offset), e.error);
}

TEST(EstimateOffsetTest, AsymmetryTheOtherWay) {
  const absl::Duration offset = absl::Milliseconds(-2);
  const absl::Duration forward = absl::Microseconds(30);
  const absl::Duration backward = absl::Microseconds(1030);
  OffsetEstimate e = EstimateOffset(Exchange(offset, forward, backward));
  EXPECT_EQ(e.offset - offset, absl::Microseconds(-500));
  EXPECT_LE(Abs(e.offset - offset), e.error);
}

TEST(EstimateOffsetTest, LargePositiveTrueOffset) {
  const absl::Duration offset = absl::Milliseconds(250);
  OffsetEstimate e =
      EstimateOffset(Exchange(offset, absl::Microseconds(120), absl::Microseconds(80)));
  EXPECT_EQ(e.offset, offset + absl::Microseconds(20));
  EXPECT_EQ(e.delay, absl::Microseconds(200));
  EXPECT_LE(Abs(e.offset - offset), e.error);
}

TEST(EstimateOffsetTest, LargeNegativeTrueOffset) {
  const absl::Duration offset = absl::Milliseconds(-250);
  OffsetEstimate e =
      EstimateOffset(Exchange(offset, absl::Microseconds(80), absl::Microseconds(120)));
  EXPECT_EQ(e.offset, offset - absl::Microseconds(20));
  EXPECT_EQ(e.delay, absl::Microseconds(200));
  EXPECT_LE(Abs(e.offset - offset), e.error);
}

TEST(EstimateOffsetTest, PeerProcessingTimeIsNotDelay) {
  OffsetEstimate e = EstimateOffset(Exchange(absl::ZeroDuration(), absl::Microseconds(10),
                                             absl::Microseconds(10), absl::Milliseconds(40)));
  EXPECT_EQ(e.delay, absl::Microseconds(20));
  EXPECT_EQ(e.offset, absl::ZeroDuration());
}

TEST(BestOffsetTest, EmptyIsNullopt) { EXPECT_FALSE(BestOffset({}).has_value()); }

TEST(BestOffsetTest, PicksMinimumDelaySample) {
  const absl::Duration offset = absl::Milliseconds(250);
  std::vector<TimestampSample> samples = {
      Exchange(offset, absl::Milliseconds(5), absl::Microseconds(100)),
      Exchange(offset, absl::Microseconds(60), absl::Microseconds(40)),  // tightest
      Exchange(offset, absl::Microseconds(100), absl::Milliseconds(3)),
  };
  std::optional<OffsetEstimate> best = BestOffset(samples);
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->delay, absl::Microseconds(100));
  EXPECT_EQ(best->offset, offset + absl::Microseconds(10));
}

TEST(BestOffsetTest, SkipsNegativeDelaySamples) {
  TimestampSample stepped =
      Exchange(absl::ZeroDuration(), absl::Microseconds(10), absl::Microseconds(10));
  stepped.t3 = stepped.t0 - absl::Milliseconds(1);  // our clock stepped back mid-exchange
  ASSERT_LT(EstimateOffset(stepped).delay, absl::ZeroDuration());

  TimestampSample good =
      Exchange(absl::Milliseconds(1), absl::Microseconds(300), absl::Microseconds(300));
  std::optional<OffsetEstimate> best = BestOffset({stepped, good});
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->offset, absl::Milliseconds(1));
  EXPECT_EQ(best->delay, absl::Microseconds(600));
}

TEST(BestOffsetTest, OnlyNegativeDelayIsNullopt) {
  TimestampSample stepped =
      Exchange(absl::ZeroDuration(), absl::Microseconds(10), absl::Microseconds(10));
  stepped.t3 = stepped.t0 - absl::Milliseconds(1);
  EXPECT_FALSE(BestOffset({stepped, stepped}).has_value());
}

TEST(PercentileWindowTest, EmptyIsNullopt) {
  PercentileWindow w(absl::Seconds(60));
  EXPECT_EQ(w.size(), 0u);
  EXPECT_FALSE(w.Percentile(0.5).has_value());
  EXPECT_EQ(w.window(), absl::Seconds(60));
}

TEST(PercentileWindowTest, NearestRankOnKnownData) {
  PercentileWindow w(absl::Seconds(600));
  // 1..100 added in a scrambled order; nearest rank of q is ceil(q*100).
  std::vector<int> values;
  for (int i = 1; i <= 100; ++i) values.push_back(i);
  std::mt19937_64 rng(42);
  std::shuffle(values.begin(), values.end(), rng);
  for (size_t i = 0; i < values.size(); ++i) {
    w.Add(kStart + absl::Milliseconds(static_cast<int64_t>(i)), values[i]);
  }
  ASSERT_EQ(w.size(), 100u);
  EXPECT_EQ(w.Percentile(0.5), 50.0);
  EXPECT_EQ(w.Percentile(0.99), 99.0);
  EXPECT_EQ(w.Percentile(0.0), 1.0);
  EXPECT_EQ(w.Percentile(1.0), 100.0);
  EXPECT_EQ(w.Percentile(0.505), 51.0);
  EXPECT_EQ(w.Percentile(0.07), 7.0);  // 0.07 * 100 is 7.000000000000001 in doubles
}

TEST(PercentileWindowTest, NearestRankSmallSet) {
  PercentileWindow w(absl::Seconds(600));
  for (double v : {15.0, 20.0, 35.0, 40.0, 50.0}) w.Add(kStart, v);
  EXPECT_EQ(w.Percentile(0.05), 15.0);
  EXPECT_EQ(w.Percentile(0.30), 20.0);
  EXPECT_EQ(w.Percentile(0.40), 20.0);
  EXPECT_EQ(w.Percentile(0.50), 35.0);
  EXPECT_EQ(w.Percentile(0.99), 50.0);
  EXPECT_EQ(w.Percentile(1.0), 50.0);
}

TEST(PercentileWindowTest, SingleSample) {
  PercentileWindow w(absl::Seconds(1));
  w.Add(kStart, 0.25);
  EXPECT_EQ(w.Percentile(0.0), 0.25);
  EXPECT_EQ(w.Percentile(0.5), 0.25);
  EXPECT_EQ(w.Percentile(1.0), 0.25);
}

TEST(PercentileWindowTest, OutOfRangeQuantileIsClamped) {
  PercentileWindow w(absl::Seconds(60));
  for (int i = 1; i <= 10; ++i) w.Add(kStart, i);
  EXPECT_EQ(w.Percentile(-1.0), 1.0);
  EXPECT_EQ(w.Percentile(2.0), 10.0);
}

TEST(PercentileWindowTest, ExpiresByTime) {
  PercentileWindow w(absl::Seconds(10));
  w.Add(kStart, 1000.0);  // old outlier
  w.Add(kStart + absl::Seconds(5), 1.0);
  w.Add(kStart + absl::Seconds(8), 2.0);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w.Percentile(1.0), 1000.0);

  w.Expire(kStart + absl::Seconds(10));  // exactly window old: kept
  EXPECT_EQ(w.size(), 3u);
  w.Expire(kStart + absl::Seconds(12));
  EXPECT_EQ(w.size(), 2u);
  EXPECT_EQ(w.Percentile(1.0), 2.0);

  w.Expire(kStart + absl::Hours(1));
  EXPECT_EQ(w.size(), 0u);
  EXPECT_FALSE(w.Percentile(0.5).has_value());
}

TEST(PercentileWindowTest, AddExpiresOldSamples) {
  PercentileWindow w(absl::Seconds(10));
  w.Add(kStart, 5.0);
  w.Add(kStart + absl::Seconds(30), 7.0);
  EXPECT_EQ(w.size(), 1u);
  EXPECT_EQ(w.Percentile(0.5), 7.0);
}

TEST(PercentileWindowTest, MaxSamplesCapKeepsNewest) {
  PercentileWindow w(absl::Hours(1), /*max_samples=*/3);
  for (int i = 1; i <= 10; ++i) w.Add(kStart + absl::Seconds(i), i);
  EXPECT_EQ(w.size(), 3u);
  EXPECT_EQ(w.Percentile(0.0), 8.0);
  EXPECT_EQ(w.Percentile(1.0), 10.0);
}

TEST(BackoffTest, GrowsExponentiallyWithinJitterBoundsAndCaps) {
  const absl::Duration initial = absl::Milliseconds(100);
  const absl::Duration max = absl::Seconds(5);
  Backoff b(initial, max, /*seed=*/1234);
  absl::Duration base = initial;
  for (int n = 1; n <= 20; ++n) {
    absl::Duration d = b.Next();
    EXPECT_EQ(b.failures(), n);
    EXPECT_GE(d, base / 2) << "failure " << n;
    EXPECT_LE(d, base) << "failure " << n;
    EXPECT_LE(d, max) << "failure " << n;
    base = std::min(base * 2, max);
  }
}

TEST(BackoffTest, GrowthIsVisibleEvenAtTheLowEndOfJitter) {
  // With bounds [base/2, base], attempt n+2 always waits longer than attempt
  // n, whatever the jitter, until the cap.
  Backoff b(absl::Milliseconds(10), absl::Hours(1), /*seed=*/7);
  std::vector<absl::Duration> waits;
  for (int i = 0; i < 12; ++i) waits.push_back(b.Next());
  for (size_t i = 0; i + 2 < waits.size(); ++i) EXPECT_GT(waits[i + 2], waits[i]);
}

TEST(BackoffTest, CapHoldsForVeryManyFailures) {
  Backoff b(absl::Seconds(1), absl::Seconds(30), /*seed=*/99);
  absl::Duration d;
  for (int i = 0; i < 500; ++i) d = b.Next();
  EXPECT_GE(d, absl::Seconds(15));
  EXPECT_LE(d, absl::Seconds(30));
}

TEST(BackoffTest, ResetStartsOver) {
  Backoff b(absl::Milliseconds(100), absl::Seconds(10), /*seed=*/5);
  for (int i = 0; i < 6; ++i) b.Next();
  EXPECT_EQ(b.failures(), 6);
  b.Reset();
  EXPECT_EQ(b.failures(), 0);
  absl::Duration d = b.Next();
  EXPECT_EQ(b.failures(), 1);
  EXPECT_GE(d, absl::Milliseconds(50));
  EXPECT_LE(d, absl::Milliseconds(100));
}

TEST(BackoffTest, SameSeedSameSequence) {
  Backoff a(absl::Milliseconds(100), absl::Seconds(10), /*seed=*/77);
  Backoff b(absl::Milliseconds(100), absl::Seconds(10), /*seed=*/77);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(a.Next(), b.Next());
}

TEST(BackoffTest, InitialAboveMaxIsCapped) {
  Backoff b(absl::Seconds(10), absl::Seconds(2), /*seed=*/3);
  absl::Duration d = b.Next();
  EXPECT_GE(d, absl::Seconds(1));
  EXPECT_LE(d, absl::Seconds(2));
}

TEST(JitteredTest, WithinBounds) {
  std::mt19937_64 rng(2024);
  const absl::Duration interval = absl::Seconds(10);
  absl::Duration lo = absl::InfiniteDuration(), hi = -absl::InfiniteDuration();
  for (int i = 0; i < 1000; ++i) {
    absl::Duration d = Jittered(interval, 0.2, rng);
    EXPECT_GE(d, absl::Seconds(8));
    EXPECT_LE(d, absl::Seconds(12));
    lo = std::min(lo, d);
    hi = std::max(hi, d);
  }
  // It does jitter, over most of the range.
  EXPECT_LT(lo, absl::Seconds(9));
  EXPECT_GT(hi, absl::Seconds(11));
}

TEST(JitteredTest, ZeroJitterIsExact) {
  std::mt19937_64 rng(1);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(Jittered(absl::Milliseconds(1500), 0.0, rng), absl::Milliseconds(1500));
  }
}

TEST(JitteredTest, SameSeedSameSequence) {
  std::mt19937_64 a(11), b(11);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(Jittered(absl::Seconds(1), 0.5, a), Jittered(absl::Seconds(1), 0.5, b));
  }
}

}  // namespace
}  // namespace gloowatch
