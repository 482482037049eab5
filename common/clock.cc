#include "common/clock.h"

#include <time.h>

namespace gloowatch {

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
