// Time source seam: production code reads time only through Clock so tests
// can control it.
#pragma once

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
};

class RealClock final : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
  absl::Duration Monotonic() const override;
  static const Clock* Get();
};

// A clock that moves only when told to; thread-compatible, not thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::UnixEpoch() + absl::Hours(24 * 365 * 50))
      : now_(start) {}
  absl::Time Now() const override { return now_; }
  absl::Duration Monotonic() const override { return now_ - absl::UnixEpoch(); }
  void Advance(absl::Duration d) { now_ += d; }

 private:
  absl::Time now_;
};

}  // namespace gloowatch
