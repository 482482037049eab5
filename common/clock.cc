#include "common/clock.h"

#include <time.h>

namespace gloowatch {

bool Clock::AwaitUntil(absl::Mutex& mu, const absl::Condition& condition,
                       absl::Duration deadline) const {
  const absl::Duration wait = deadline - Monotonic();
  if (wait <= absl::ZeroDuration()) return condition.Eval();
  return mu.AwaitWithTimeout(condition, wait);
}

absl::Duration RealClock::Monotonic() const {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return absl::DurationFromTimespec(ts);
}

const Clock* RealClock::Get() {
  static const RealClock* const clock = new RealClock();
  return clock;
}

}  // namespace gloowatch
