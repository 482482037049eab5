#include "daemon/api/probe_link_admission.h"

#include "absl/strings/str_cat.h"

namespace gloowatch {

absl::Status ProbeLinkAdmission::Admit(const v1::ProbeLinkRequest& request) {
  if (request.peer().empty()) return absl::InvalidArgumentError("peer: empty");
  if (request.pings() > kMaxProbeLinkPings) {
    return absl::InvalidArgumentError(
        absl::StrCat("pings: ", request.pings(), ", at most ", kMaxProbeLinkPings));
  }
  if (!v1::ProbeLinkRequest::Transfers_IsValid(request.transfers())) {
    return absl::InvalidArgumentError(
        absl::StrCat("transfers: ", request.transfers(), " is not a known value"));
  }
  const absl::Duration now = clock_->Monotonic();
  absl::MutexLock lock(&mu_);
  if (running_) {
    return absl::ResourceExhaustedError(
        "an on-demand probe is already running on this node (one at a time)");
  }
  while (!started_.empty() && now - started_.front() >= absl::Minutes(1)) started_.pop_front();
  if (started_.size() >= kProbeLinksPerMinute) {
    const absl::Duration wait = started_.front() + absl::Minutes(1) - now;
    return absl::ResourceExhaustedError(
        absl::StrCat("rate limit: ", kProbeLinksPerMinute,
                     " on-demand probes a minute on this node; the next in ",
                     absl::ToInt64Seconds(wait) + 1, " s"));
  }
  running_ = true;
  started_.push_back(now);
  return absl::OkStatus();
}

void ProbeLinkAdmission::Done() {
  absl::MutexLock lock(&mu_);
  running_ = false;
}

}  // namespace gloowatch
