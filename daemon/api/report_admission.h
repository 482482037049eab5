// Who may send training reports (Status.ReportStep/ReportSteps): processes
// on this host, or, when the gRPC port runs mutual TLS, any caller (each then
// holds a certificate signed by the cluster's CA). A stranger who can merely
// reach the port can therefore not fill the (job, rank) series cap.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "daemon/system/gloo_endpoint.h"

namespace gloowatch {

class ReportAdmission {
 public:
  // `system` lists this host's addresses (re-read every kRefresh, so an
  // address added later is known); both must outlive this object.
  ReportAdmission(const SystemView* system, const Clock* clock, bool mutual_tls);

  // Who the caller is for the per-client share of the series cap: "" for a
  // process on this host (trusted with the whole cap), else its address; or
  // PERMISSION_DENIED naming the caller. `peer` is gRPC's
  // ServerContext::peer(): "ipv4:10.0.0.2:5555", "ipv6:[::1]:5555" (or with
  // the brackets %-encoded), "unix:/path".
  absl::StatusOr<std::string> Admit(const std::string& peer);

  // The address part of a gRPC peer string ("10.0.0.2", "::1"); nullopt for
  // anything else. "unix:" peers yield "unix".
  static std::optional<std::string> PeerAddress(const std::string& peer);

  static constexpr absl::Duration kRefresh = absl::Seconds(10);

 private:
  bool IsOwnAddress(const std::string& address) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const SystemView* system_;
  const Clock* clock_;
  const bool mutual_tls_;
  absl::Mutex mu_;
  std::vector<std::string> own_ ABSL_GUARDED_BY(mu_);  // canonical numeric form
  absl::Time read_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace gloowatch
