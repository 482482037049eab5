// gRPC services of the daemon: the operator-facing Status service and the
// peer-to-peer Peer service, kept in separate classes.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "channel/responder_opener.h"
#include "common/clock.h"
#include "proto/gloowatch.grpc.pb.h"

namespace gloowatch {

grpc::Status ToGrpc(const absl::Status& status);

// Both services use gRPC's callback API: a call holds no thread while it
// waits, so a flood of one method cannot use up the threads another needs.
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

// Serves OpenProbePair: checks who asks and what, then hands the request to
// the opener. Only configured peers may open pairs.
class PeerService final : public v1::Peer::CallbackService {
 public:
  PeerService(std::string node, std::string version, std::set<std::string> allowed_peers,
              ResponderOpener* opener);

  grpc::ServerUnaryReactor* OpenProbePair(grpc::CallbackServerContext* context,
                                          const v1::OpenProbePairRequest* request,
                                          v1::OpenProbePairResponse* response) override;

  void SetAllowedPeers(std::set<std::string> peers);

 private:
  // Why `request` is refused before it reaches the opener, or OK.
  grpc::Status Check(const v1::OpenProbePairRequest& request);

  const std::string node_;
  const std::string version_;
  ResponderOpener* const opener_;
  absl::Mutex mu_;
  std::set<std::string> allowed_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gloowatch
