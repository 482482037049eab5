// The operator-facing gRPC service (gloowatch.v1.Status): the node's status,
// and the training processes' step and collective reports.
#pragma once

#include <functional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/gloowatch.grpc.pb.h"

namespace gloowatch {

// gRPC's callback API, as every service of the daemon: a call holds no
// thread while it waits, so a flood of one method cannot use up the threads
// another needs.
class StatusService final : public v1::Status::CallbackService {
 public:
  using StatusFn = std::function<v1::NodeStatus()>;
  // `client`: "" for a process on this host, else who it is (AdmitFn).
  using ReportFn =
      std::function<absl::Status(const v1::ReportStepRequest&, const std::string& client)>;
  // The client, or an error when the caller (grpc's ServerContext::peer())
  // may not report at all.
  using AdmitFn = std::function<absl::StatusOr<std::string>(const std::string& peer)>;
  using CollectiveFn =
      std::function<absl::Status(const v1::CollectiveReport&, const std::string& client)>;
  StatusService(StatusFn status, ReportFn report, CollectiveFn collective, AdmitFn admit)
      : status_(std::move(status)),
        report_(std::move(report)),
        collective_(std::move(collective)),
        admit_(std::move(admit)) {}

  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* context,
                                      const v1::GetStatusRequest*,
                                      v1::NodeStatus* response) override;
  grpc::ServerUnaryReactor* ReportStep(grpc::CallbackServerContext* context,
                                       const v1::ReportStepRequest* request,
                                       v1::ReportStepResponse*) override;
  // Each step goes through the same check as ReportStep; a batch that is
  // larger than kMaxStepsPerBatch, or empty without a collective report, is
  // refused as a whole.
  grpc::ServerUnaryReactor* ReportSteps(grpc::CallbackServerContext* context,
                                        const v1::ReportStepsRequest* request,
                                        v1::ReportStepsResponse* response) override;

  static constexpr int kMaxStepsPerBatch = 1024;

 private:
  StatusFn status_;
  ReportFn report_;
  CollectiveFn collective_;
  AdmitFn admit_;
};

}  // namespace gloowatch
