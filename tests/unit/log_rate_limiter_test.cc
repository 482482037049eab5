// LogRateLimiter: one line per key per interval, with a count of the rest.
#include <cstdint>

#include "common/log.h"
#include "gtest/gtest.h"
#include "tests/support/simulated_clock.h"

namespace gloowatch {
namespace {

TEST(LogRateLimiterTest, FirstLineOfAKeyPassesAndRepeatsWithinTheIntervalAreCounted) {
  SimulatedClock clock;
  LogRateLimiter limiter(absl::Seconds(30), &clock);
  uint64_t suppressed = 99;
  ASSERT_TRUE(limiter.Allow("node-b/refused", &suppressed));
  EXPECT_EQ(suppressed, 0u);
  for (int i = 0; i < 5; ++i) {
    clock.Advance(absl::Seconds(5));  // 5 .. 25 s after the first line
    EXPECT_FALSE(limiter.Allow("node-b/refused", &suppressed)) << i;
  }
  clock.Advance(absl::Milliseconds(4999));  // 29.999 s
  EXPECT_FALSE(limiter.Allow("node-b/refused", &suppressed));
  clock.Advance(absl::Milliseconds(1));  // exactly 30 s
  ASSERT_TRUE(limiter.Allow("node-b/refused", &suppressed));
  EXPECT_EQ(suppressed, 6u);
  EXPECT_EQ(SuppressedSuffix(suppressed), " (6 similar suppressed)");
  // The count starts over after it was reported.
  clock.Advance(absl::Seconds(31));
  ASSERT_TRUE(limiter.Allow("node-b/refused", &suppressed));
  EXPECT_EQ(suppressed, 0u);
  EXPECT_EQ(SuppressedSuffix(suppressed), "");
}

TEST(LogRateLimiterTest, KeysAreIndependent) {
  SimulatedClock clock;
  LogRateLimiter limiter(absl::Seconds(30), &clock);
  uint64_t suppressed = 0;
  EXPECT_TRUE(limiter.Allow("refused", &suppressed));
  EXPECT_TRUE(limiter.Allow("timeout", &suppressed));
  EXPECT_FALSE(limiter.Allow("refused", &suppressed));
  EXPECT_FALSE(limiter.Allow("refused", &suppressed));
  EXPECT_FALSE(limiter.Allow("timeout", &suppressed));
  clock.Advance(absl::Seconds(30));
  EXPECT_TRUE(limiter.Allow("timeout", &suppressed));
  EXPECT_EQ(suppressed, 1u);
  EXPECT_TRUE(limiter.Allow("refused", &suppressed));
  EXPECT_EQ(suppressed, 2u);
}

TEST(LogRateLimiterTest, ResetReturnsTheUnreportedCountAndLetsTheNextLineThrough) {
  SimulatedClock clock;
  LogRateLimiter limiter(absl::Seconds(30), &clock);
  uint64_t suppressed = 0;
  EXPECT_TRUE(limiter.Allow("refused", &suppressed));
  EXPECT_FALSE(limiter.Allow("refused", &suppressed));
  EXPECT_FALSE(limiter.Allow("refused", &suppressed));
  EXPECT_TRUE(limiter.Allow("reset", &suppressed));
  EXPECT_FALSE(limiter.Allow("reset", &suppressed));
  // The peer came back: a new outage a second later is news again.
  EXPECT_EQ(limiter.Reset(), 3u);
  EXPECT_EQ(limiter.Reset(), 0u);
  clock.Advance(absl::Seconds(1));
  EXPECT_TRUE(limiter.Allow("refused", &suppressed));
  EXPECT_EQ(suppressed, 0u);
}

TEST(LogRateLimiterTest, ZeroIntervalLetsEverythingThrough) {
  SimulatedClock clock;
  LogRateLimiter limiter(absl::ZeroDuration(), &clock);
  uint64_t suppressed = 0;
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(limiter.Allow("k", &suppressed));
  EXPECT_EQ(suppressed, 0u);
}

}  // namespace
}  // namespace gloowatch
