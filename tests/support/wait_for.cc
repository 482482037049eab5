#include "tests/support/wait_for.h"

#include "absl/time/clock.h"

namespace gloowatch::testing {

bool WaitFor(const std::function<bool()>& condition, absl::Duration timeout, absl::Duration every) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    if (condition()) return true;
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(every);
  }
}

}  // namespace gloowatch::testing
