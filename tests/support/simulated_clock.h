// A clock for tests whose time moves only when the test says so, after
// Envoy's SimulatedTimeSystem: code that waits through Clock::AwaitUntil
// wakes when simulated time reaches its deadline (or its condition holds),
// never because real time passed. Thread-safe. Tests and benchmarks only:
// no production folder may include it (scripts/check-architecture.sh).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace gloowatch {

class SimulatedClock final : public Clock {
 public:
  explicit SimulatedClock(absl::Time start = absl::UnixEpoch() + absl::Hours(24 * 365 * 50))
      : start_(start) {}

  absl::Time Now() const override { return start_ + Elapsed(); }
  absl::Duration Monotonic() const override { return (start_ - absl::UnixEpoch()) + Elapsed(); }
  bool AwaitUntil(absl::Mutex& mu, const absl::Condition& condition,
                  absl::Duration deadline) const override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  // Moves time forward (in whole nanoseconds, rounded up) and wakes every
  // waiter whose deadline it reached. Must not be called holding a mutex that
  // a waiter waits with.
  void Advance(absl::Duration d);
  // Advances to the monotonic time `at` (no-op when it has passed).
  void AdvanceTo(absl::Duration at);

  // Waits up to `real_timeout` of real time until some thread waits through
  // this clock for a deadline still ahead of Monotonic() (and before
  // `earlier_than`); the earliest such deadline, or nullopt on timeout. How a
  // test learns that the code under test went to sleep, and until when,
  // without sleeping itself.
  std::optional<absl::Duration> AwaitPendingDeadline(
      absl::Duration real_timeout, absl::Duration earlier_than = absl::InfiniteDuration()) const;

 private:
  struct Waiter {
    absl::Mutex* mu;
    absl::Duration deadline;
    int pokes = 0;  // Advance calls about to lock `mu`
  };

  absl::Duration Elapsed() const { return absl::Nanoseconds(elapsed_ns_.load()); }
  std::optional<absl::Duration> EarliestPending() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(waiters_mu_);

  const absl::Time start_;
  std::atomic<int64_t> elapsed_ns_{0};
  // Never held while locking a waiter's mutex; a waiter takes it with its own
  // mutex held.
  mutable absl::Mutex waiters_mu_;
  mutable std::vector<Waiter*> waiters_ ABSL_GUARDED_BY(waiters_mu_);
};

}  // namespace gloowatch
