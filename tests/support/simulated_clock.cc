#include "tests/support/simulated_clock.h"

#include <algorithm>

namespace gloowatch {

bool SimulatedClock::AwaitUntil(absl::Mutex& mu, const absl::Condition& condition,
                                absl::Duration deadline) const {
  if (Monotonic() >= deadline) return condition.Eval();
  Waiter waiter{&mu, deadline};
  {
    absl::MutexLock lock(&waiters_mu_);
    waiters_.push_back(&waiter);
  }
  // Re-evaluated whenever `mu` is released, which Advance does once time
  // reaches the deadline.
  auto woken = [&] { return condition.Eval() || Monotonic() >= deadline; };
  mu.Await(absl::Condition(&woken));
  const bool met = condition.Eval();
  bool poked;
  {
    absl::MutexLock lock(&waiters_mu_);
    waiters_.erase(std::find(waiters_.begin(), waiters_.end(), &waiter));
    poked = waiter.pokes > 0;
  }
  if (poked) {
    // An Advance still has to lock `mu` (which may not outlive our return):
    // let it, then take `mu` back.
    mu.Unlock();
    {
      absl::MutexLock lock(&waiters_mu_);
      auto released = [&waiter] { return waiter.pokes == 0; };
      waiters_mu_.Await(absl::Condition(&released));
    }
    mu.Lock();
  }
  return met;
}

void SimulatedClock::Advance(absl::Duration d) {
  std::vector<Waiter*> due;
  {
    absl::MutexLock lock(&waiters_mu_);
    // Whole nanoseconds, rounded up: a deadline with a fraction of one (a
    // jittered interval) is reached, not missed by half a nanosecond.
    elapsed_ns_ += absl::ToInt64Nanoseconds(
        absl::Ceil(std::max(d, absl::ZeroDuration()), absl::Nanoseconds(1)));
    for (Waiter* waiter : waiters_) {
      if (waiter->deadline > Monotonic()) continue;
      ++waiter->pokes;
      due.push_back(waiter);
    }
  }
  // Releasing a waiter's mutex makes absl re-evaluate its condition.
  for (Waiter* waiter : due) {
    absl::MutexLock poke(waiter->mu);
  }
  absl::MutexLock lock(&waiters_mu_);
  for (Waiter* waiter : due) --waiter->pokes;
}

void SimulatedClock::AdvanceTo(absl::Duration at) { Advance(at - Monotonic()); }

std::optional<absl::Duration> SimulatedClock::EarliestPending() const {
  std::optional<absl::Duration> earliest;
  for (const Waiter* waiter : waiters_) {
    if (waiter->deadline <= Monotonic() || waiter->deadline == absl::InfiniteDuration()) continue;
    if (!earliest || waiter->deadline < *earliest) earliest = waiter->deadline;
  }
  return earliest;
}

std::optional<absl::Duration> SimulatedClock::AwaitPendingDeadline(
    absl::Duration real_timeout, absl::Duration earlier_than) const {
  absl::MutexLock lock(&waiters_mu_);
  auto pending = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(waiters_mu_) {
    const std::optional<absl::Duration> earliest = EarliestPending();
    return earliest.has_value() && *earliest < earlier_than;
  };
  if (!waiters_mu_.AwaitWithTimeout(absl::Condition(&pending), real_timeout)) return std::nullopt;
  return EarliestPending();
}

}  // namespace gloowatch
