// Time source seam: production code reads time only through Clock so tests
// can control it.
#pragma once

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace gloowatch {

class Clock {
 public:
  virtual ~Clock() = default;
  // Wall clock (CLOCK_REALTIME): timestamps and clock-offset samples.
  virtual absl::Time Now() const = 0;
  // Monotonic clock, for durations only; its epoch is arbitrary.
  virtual absl::Duration Monotonic() const = 0;
  // Waits, with `mu` held on entry and on return (released while waiting),
  // until `condition` holds or Monotonic() reaches `deadline`; returns whether
  // `condition` held. Waits that decide backoff and deadlines go through here
  // so that a simulated clock can end them without real time passing. This
  // default waits in real time for `deadline - Monotonic()`.
  virtual bool AwaitUntil(absl::Mutex& mu, const absl::Condition& condition,
                          absl::Duration deadline) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
};

class RealClock final : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
  absl::Duration Monotonic() const override;
  static const Clock* Get();
};

}  // namespace gloowatch
