// Parallel GetStatus to every daemon, each call bounded by its own deadline.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "client/core/targets.h"
#include "grpcpp/security/credentials.h"
#include "proto/gloowatch.pb.h"

namespace gloowatch::client {

struct FetchResult {
  DaemonTarget target;
  std::optional<v1::NodeStatus> status;  // set on success
  std::string error_code;                // gRPC code name, e.g. "DEADLINE_EXCEEDED"
  std::string error;                     // human-readable, set on failure
  absl::Duration elapsed;
};

// One thread per target; returns when every call finished or hit `deadline`
// (results in target order).
// `credentials`: plaintext when null (see MakeChannelCredentials).
std::vector<FetchResult> FetchAll(
    const std::vector<DaemonTarget>& targets, absl::Duration deadline,
    const std::shared_ptr<grpc::ChannelCredentials>& credentials = nullptr);

// Sends one ReportStep; the status carries the daemon's message on rejection.
absl::Status SendReportStep(const Endpoint& daemon, const v1::ReportStepRequest& request,
                            absl::Duration deadline,
                            const std::shared_ptr<grpc::ChannelCredentials>& credentials = nullptr);

}  // namespace gloowatch::client
