// The one bounded wait of the tests: poll a condition until it holds or the
// time is up, instead of sleeping and hoping it held.
#pragma once

#include <functional>

#include "absl/time/time.h"

namespace gloowatch::testing {

// Polls `condition` every `every` (50 ms unless given) until it holds or
// `timeout` passes; whether it held.
bool WaitFor(const std::function<bool()>& condition, absl::Duration timeout,
             absl::Duration every = absl::Milliseconds(50));

}  // namespace gloowatch::testing
