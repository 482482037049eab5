// Who may run an on-demand link test (Status.ProbeLink) now: one at a time
// per node and at most kProbeLinksPerMinute in any minute, so that a script
// in a loop (or a stranger, without TLS) cannot turn the daemon into a load
// generator; a request past a limit is refused at once, naming it.
#pragma once

#include <deque>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "proto/gloowatch.pb.h"

namespace gloowatch {

inline constexpr size_t kProbeLinksPerMinute = 10;
inline constexpr uint32_t kMaxProbeLinkPings = 1000;

class ProbeLinkAdmission {
 public:
  explicit ProbeLinkAdmission(const Clock* clock) : clock_(clock) {}

  // OK and counted (call Done() when it ends), or INVALID_ARGUMENT for a
  // request out of range, RESOURCE_EXHAUSTED past a limit.
  absl::Status Admit(const v1::ProbeLinkRequest& request);
  void Done();

 private:
  const Clock* const clock_;
  absl::Mutex mu_;
  bool running_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<absl::Duration> started_ ABSL_GUARDED_BY(mu_);  // within the last minute
};

}  // namespace gloowatch
