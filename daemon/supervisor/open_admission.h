// Bounds the OpenProbePair requests handed to the transport process at once:
// in total, and per caller, so a flood under one peer's name is refused at
// once instead of piling up threads, and cannot crowd out the other peers.
#pragma once

#include <cstddef>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace gloowatch {

class OpenAdmission {
 public:
  OpenAdmission(size_t max_in_flight, size_t max_per_caller);

  // Holds one admitted request until destroyed.
  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&& other) noexcept;
    Ticket& operator=(Ticket&& other) noexcept;
    ~Ticket();

   private:
    friend class OpenAdmission;
    Ticket(OpenAdmission* admission, std::string caller);
    void Release();
    OpenAdmission* admission_ = nullptr;
    std::string caller_;
  };

  // A ticket, or RESOURCE_EXHAUSTED saying which limit was reached.
  absl::Status Admit(const std::string& caller, Ticket* ticket);
  size_t in_flight() const;

 private:
  void Release(const std::string& caller);

  const size_t max_in_flight_;
  const size_t max_per_caller_;
  mutable absl::Mutex mu_;
  size_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<std::string, size_t> by_caller_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gloowatch
