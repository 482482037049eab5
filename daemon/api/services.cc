#include "daemon/api/services.h"

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/probe_parameters.h"
#include "common/user_text.h"

namespace gloowatch {

grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

grpc::ServerUnaryReactor* StatusService::GetStatus(grpc::CallbackServerContext* context,
                                                   const v1::GetStatusRequest*,
                                                   v1::NodeStatus* response) {
  *response = status_();
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* StatusService::ReportStep(grpc::CallbackServerContext* context,
                                                    const v1::ReportStepRequest* request,
                                                    v1::ReportStepResponse*) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::StatusOr<std::string> client = admit_(context->peer());
  reactor->Finish(ToGrpc(client.ok() ? report_(*request, *client) : client.status()));
  return reactor;
}

grpc::ServerUnaryReactor* StatusService::ReportSteps(grpc::CallbackServerContext* context,
                                                     const v1::ReportStepsRequest* request,
                                                     v1::ReportStepsResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::StatusOr<std::string> client = admit_(context->peer());
  if (!client.ok()) {
    reactor->Finish(ToGrpc(client.status()));
    return reactor;
  }
  const int n = request->steps_size();
  if ((n == 0 && !request->has_collective()) || n > kMaxStepsPerBatch) {
    reactor->Finish(
        grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                     absl::StrCat("steps: ", n, " in the batch, want 1 to ", kMaxStepsPerBatch,
                                  " (0 only with a collective report)")));
    return reactor;
  }
  for (int i = 0; i < n; ++i) {
    absl::Status s = report_(request->steps(i), *client);
    if (s.ok()) {
      response->set_accepted(response->accepted() + 1);
      continue;
    }
    v1::RejectedStep* rejected = response->add_rejected();
    rejected->set_index(static_cast<uint32_t>(i));
    rejected->set_error(std::string(s.message()));
  }
  if (request->has_collective()) {
    absl::Status s = collective_(request->collective(), *client);
    if (!s.ok()) response->set_collective_error(std::string(s.message()));
  }
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

PeerService::PeerService(std::string node, std::string version, std::set<std::string> allowed_peers,
                         ResponderOpener* opener)
    : node_(std::move(node)),
      version_(std::move(version)),
      opener_(opener),
      allowed_(std::move(allowed_peers)) {}

void PeerService::SetAllowedPeers(std::set<std::string> peers) {
  absl::MutexLock lock(&mu_);
  allowed_ = std::move(peers);
}

grpc::Status PeerService::Check(const v1::OpenProbePairRequest& request) {
  if (request.protocol_version() != kProbeProtocolVersion) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        absl::StrCat("probe protocol ", request.protocol_version(),
                                     " is not supported; this daemon speaks ",
                                     kProbeProtocolVersion, " (version ", version_, ")"));
  }
  if (request.to_node() != node_) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        absl::StrCat("this is node '", node_, "', not ", Quote(request.to_node()),
                                     ": check the peer list of ", Quote(request.from_node())));
  }
  if (absl::Status s = ValidateProbeParameters(request.parameters()); !s.ok()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("parameters: ", s.message()));
  }
  if (request.gloo_address().empty() || request.bulk_gloo_address().empty() ||
      request.gloo_address().size() > 192 || request.bulk_gloo_address().size() > 192) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "gloo_address and bulk_gloo_address must be Gloo TCP addresses");
  }
  {
    absl::MutexLock lock(&mu_);
    if (allowed_.count(request.from_node()) == 0) {
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                          absl::StrCat(Quote(request.from_node()),
                                       " is not in the peer list of node '", node_, "'"));
    }
  }
  return grpc::Status::OK;
}

grpc::ServerUnaryReactor* PeerService::OpenProbePair(grpc::CallbackServerContext* context,
                                                     const v1::OpenProbePairRequest* request,
                                                     v1::OpenProbePairResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (grpc::Status refused = Check(*request); !refused.ok()) {
    reactor->Finish(refused);
    return reactor;
  }
  opener_->StartOpen(*request,
                     [reactor, response](absl::StatusOr<v1::OpenProbePairResponse> opened) {
                       if (!opened.ok()) {
                         reactor->Finish(ToGrpc(opened.status()));
                         return;
                       }
                       *response = *std::move(opened);
                       reactor->Finish(grpc::Status::OK);
                     });
  return reactor;
}

}  // namespace gloowatch
