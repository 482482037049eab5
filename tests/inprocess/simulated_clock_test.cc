// SimulatedClock: waits through the clock end when simulated time reaches
// their deadline or their condition holds, never because real time passed.
#include "tests/support/simulated_clock.h"

#include <thread>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

namespace gloowatch {
namespace {

// Real time a test gives another thread to get somewhere; never slept.
constexpr absl::Duration kRealTimeout = absl::Seconds(10);

// One thread waiting through `clock` until `deadline` or `flag`.
class Sleeper {
 public:
  Sleeper(const Clock& clock, absl::Duration deadline) {
    thread_ = std::thread([this, &clock, deadline] {
      absl::MutexLock lock(&mu_);
      condition_held_ = clock.AwaitUntil(mu_, absl::Condition(&flag_), deadline);
      woke_at_ = clock.Monotonic();
      done_ = true;
    });
  }
  ~Sleeper() {
    Raise();
    thread_.join();
  }
  void Raise() {
    absl::MutexLock lock(&mu_);
    flag_ = true;
  }
  // Whether it woke within the real timeout.
  bool AwaitWoken() {
    absl::MutexLock lock(&mu_);
    return mu_.AwaitWithTimeout(absl::Condition(&done_), kRealTimeout);
  }
  bool done() {
    absl::MutexLock lock(&mu_);
    return done_;
  }
  bool condition_held() {
    absl::MutexLock lock(&mu_);
    return condition_held_;
  }
  absl::Duration woke_at() {
    absl::MutexLock lock(&mu_);
    return woke_at_;
  }

 private:
  absl::Mutex mu_;
  bool flag_ = false;
  bool done_ = false;
  bool condition_held_ = false;
  absl::Duration woke_at_;
  std::thread thread_;
};

TEST(SimulatedClockTest, TimeMovesOnlyWhenAdvanced) {
  SimulatedClock clock;
  const absl::Time now = clock.Now();
  const absl::Duration monotonic = clock.Monotonic();
  clock.Advance(absl::Milliseconds(1500));
  EXPECT_EQ(clock.Now() - now, absl::Milliseconds(1500));
  EXPECT_EQ(clock.Monotonic() - monotonic, absl::Milliseconds(1500));
  clock.AdvanceTo(monotonic);  // the past: no-op
  EXPECT_EQ(clock.Monotonic() - monotonic, absl::Milliseconds(1500));
}

TEST(SimulatedClockTest, WaiterWakesExactlyAtItsDeadline) {
  SimulatedClock clock;
  const absl::Duration deadline = clock.Monotonic() + absl::Seconds(30);
  Sleeper sleeper(clock, deadline);
  ASSERT_EQ(clock.AwaitPendingDeadline(kRealTimeout), deadline);

  clock.Advance(absl::Seconds(30) - absl::Nanoseconds(1));
  // Still waiting: the same deadline is pending and the sleeper is not done.
  EXPECT_EQ(clock.AwaitPendingDeadline(kRealTimeout), deadline);
  EXPECT_FALSE(sleeper.done());

  clock.Advance(absl::Nanoseconds(1));
  ASSERT_TRUE(sleeper.AwaitWoken());
  EXPECT_FALSE(sleeper.condition_held());
  EXPECT_EQ(sleeper.woke_at(), deadline);
}

TEST(SimulatedClockTest, ConditionWakesWaiterWithoutTimePassing) {
  SimulatedClock clock;
  const absl::Duration start = clock.Monotonic();
  Sleeper sleeper(clock, start + absl::Hours(1));
  ASSERT_TRUE(clock.AwaitPendingDeadline(kRealTimeout).has_value());
  sleeper.Raise();
  ASSERT_TRUE(sleeper.AwaitWoken());
  EXPECT_TRUE(sleeper.condition_held());
  EXPECT_EQ(sleeper.woke_at(), start);
}

TEST(SimulatedClockTest, DeadlineInThePastReturnsAtOnce) {
  SimulatedClock clock;
  absl::Mutex mu;
  bool flag = false;
  absl::MutexLock lock(&mu);
  EXPECT_FALSE(clock.AwaitUntil(mu, absl::Condition(&flag), clock.Monotonic()));
  flag = true;
  EXPECT_TRUE(clock.AwaitUntil(mu, absl::Condition(&flag), clock.Monotonic() - absl::Seconds(1)));
}

TEST(SimulatedClockTest, OneAdvanceWakesOnlyTheWaitersItReaches) {
  SimulatedClock clock;
  const absl::Duration start = clock.Monotonic();
  Sleeper early(clock, start + absl::Seconds(1));
  Sleeper late(clock, start + absl::Seconds(5));
  ASSERT_EQ(clock.AwaitPendingDeadline(kRealTimeout), start + absl::Seconds(1));

  clock.Advance(absl::Seconds(2));
  ASSERT_TRUE(early.AwaitWoken());
  EXPECT_EQ(early.woke_at(), start + absl::Seconds(2));
  EXPECT_EQ(clock.AwaitPendingDeadline(kRealTimeout), start + absl::Seconds(5));
  EXPECT_FALSE(late.done());

  clock.AdvanceTo(start + absl::Seconds(5));
  ASSERT_TRUE(late.AwaitWoken());
  EXPECT_EQ(late.woke_at(), start + absl::Seconds(5));
}

// Many threads sharing one mutex wait and are woken by concurrent advances:
// every one wakes, none before its deadline.
TEST(SimulatedClockTest, ConcurrentWaitersAndAdvances) {
  SimulatedClock clock;
  const absl::Duration start = clock.Monotonic();
  absl::Mutex mu;
  int woken = 0;
  bool give_up = false;  // ends the waiters if the clock lost a wake-up
  constexpr int kThreads = 8;
  constexpr int kRounds = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 1; r <= kRounds; ++r) {
        absl::MutexLock lock(&mu);
        const absl::Duration deadline = start + absl::Milliseconds(10 * r + t);
        if (clock.AwaitUntil(mu, absl::Condition(&give_up), deadline)) return;
        EXPECT_GE(clock.Monotonic(), deadline);
        ++woken;
      }
    });
  }
  // Two advancing threads race each other and the waiters.
  std::vector<std::thread> advancers;
  for (int a = 0; a < 2; ++a) {
    advancers.emplace_back([&] {
      const absl::Time give_up = absl::Now() + kRealTimeout;
      while (absl::Now() < give_up) {
        {
          absl::MutexLock lock(&mu);
          if (woken == kThreads * kRounds) return;
        }
        clock.Advance(absl::Milliseconds(1));
      }
    });
  }
  for (std::thread& a : advancers) a.join();
  {
    absl::MutexLock lock(&mu);
    give_up = true;
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(woken, kThreads * kRounds);
}

}  // namespace
}  // namespace gloowatch
