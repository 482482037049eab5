#include "daemon/supervisor/open_admission.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace gloowatch {

OpenAdmission::OpenAdmission(size_t max_in_flight, size_t max_per_caller)
    : max_in_flight_(max_in_flight), max_per_caller_(max_per_caller) {}

absl::Status OpenAdmission::Admit(const std::string& caller, Ticket* ticket) {
  absl::MutexLock lock(&mu_);
  if (in_flight_ >= max_in_flight_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("this node is already setting up ", in_flight_,
                     " probe pairs (its limit); retry after a backoff"));
  }
  size_t& mine = by_caller_[caller];
  if (mine >= max_per_caller_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "this peer already has ", mine, " probe pair requests in flight (the limit per peer)"));
  }
  ++mine;
  ++in_flight_;
  *ticket = Ticket(this, caller);
  return absl::OkStatus();
}

size_t OpenAdmission::in_flight() const {
  absl::MutexLock lock(&mu_);
  return in_flight_;
}

void OpenAdmission::Release(const std::string& caller) {
  absl::MutexLock lock(&mu_);
  auto it = by_caller_.find(caller);
  if (it == by_caller_.end()) return;
  --in_flight_;
  // Callers come and go; keep only those with requests in flight.
  if (--it->second == 0) by_caller_.erase(it);
}

OpenAdmission::Ticket::Ticket(OpenAdmission* admission, std::string caller)
    : admission_(admission), caller_(std::move(caller)) {}

OpenAdmission::Ticket::Ticket(Ticket&& other) noexcept
    : admission_(std::exchange(other.admission_, nullptr)), caller_(std::move(other.caller_)) {}

OpenAdmission::Ticket& OpenAdmission::Ticket::operator=(Ticket&& other) noexcept {
  if (this != &other) {
    Release();
    admission_ = std::exchange(other.admission_, nullptr);
    caller_ = std::move(other.caller_);
  }
  return *this;
}

OpenAdmission::Ticket::~Ticket() { Release(); }

void OpenAdmission::Ticket::Release() {
  if (admission_ != nullptr) std::exchange(admission_, nullptr)->Release(caller_);
}

}  // namespace gloowatch
