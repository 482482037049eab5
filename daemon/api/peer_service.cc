#include "daemon/api/peer_service.h"

#include "absl/strings/str_cat.h"
#include "common/probe_parameters.h"
#include "common/user_text.h"
#include "daemon/api/grpc_status.h"

namespace gloowatch {

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
  // One address a flow after the first, as many as the parameters say.
  if (static_cast<uint32_t>(request.flow_gloo_addresses_size()) + 1 !=
      ProbeFlows(request.parameters())) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("flow_gloo_addresses must hold parameters.flows - 1 = ",
                                     ProbeFlows(request.parameters()) - 1, " addresses, got ",
                                     request.flow_gloo_addresses_size()));
  }
  for (const std::string& address : request.flow_gloo_addresses()) {
    if (address.empty() || address.size() > 192) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "flow_gloo_addresses must be Gloo TCP addresses");
    }
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
