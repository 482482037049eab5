#include "daemon/services.h"

#include "absl/strings/str_cat.h"
#include "daemon/log.h"
#include "daemon/user_text.h"

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
  reactor->Finish(ToGrpc(report_(*request)));
  return reactor;
}

ResponderRegistry::ResponderRegistry(std::string node, std::string version,
                                     std::shared_ptr<gloo::transport::Device> device,
                                     BandwidthGate* gate, const Clock* clock)
    : node_(std::move(node)),
      version_(std::move(version)),
      device_(std::move(device)),
      gate_(gate),
      clock_(clock) {}

ResponderRegistry::~ResponderRegistry() { StopAll(); }

void ResponderRegistry::Retain(const std::set<std::string>& peers) {
  absl::MutexLock lock(&mu_);
  for (auto& [name, list] : responders_) {
    if (peers.count(name) == 0) {
      for (auto& responder : list) responder->Stop();
    }
  }
}

void ResponderRegistry::StopAll() {
  absl::MutexLock lock(&mu_);
  for (auto& [name, list] : responders_) {
    for (auto& responder : list) responder->Stop();
  }
}

size_t ResponderRegistry::active_responders() {
  absl::MutexLock lock(&mu_);
  Reap();
  size_t n = 0;
  for (const auto& [name, list] : responders_) n += list.size();
  return n;
}

void ResponderRegistry::Reap() {
  for (auto it = responders_.begin(); it != responders_.end();) {
    auto& list = it->second;
    list.erase(
        std::remove_if(list.begin(), list.end(), [](const auto& r) { return r->finished(); }),
        list.end());
    it = list.empty() ? responders_.erase(it) : std::next(it);
  }
}

absl::StatusOr<v1::OpenProbePairResponse> ResponderRegistry::Open(
    const v1::OpenProbePairRequest& request) {
  const std::string& peer = request.from_node();
  auto exhausted = [&] {
    return absl::ResourceExhaustedError(
        absl::StrCat(Quote(peer), " already has ", kMaxRespondersPerPeer,
                     " probe pairs open or winding down; retry later"));
  };
  {
    absl::MutexLock lock(&mu_);
    Reap();
    if (responders_[peer].size() >= kMaxRespondersPerPeer) return exhausted();
  }
  auto responder = ProbeResponder::Create(device_, request.parameters(), clock_, gate_, peer);
  if (!responder.ok()) return responder.status();
  v1::OpenProbePairResponse response;
  response.set_protocol_version(kProbeProtocolVersion);
  response.set_node(node_);
  response.set_version(version_);
  response.set_gloo_address((*responder)->command_address());
  response.set_bulk_gloo_address((*responder)->bulk_address());
  {
    absl::MutexLock lock(&mu_);
    auto& list = responders_[peer];
    if (list.size() >= kMaxRespondersPerPeer) return exhausted();
    list.push_back(*responder);
  }
  (*responder)->Start(request.gloo_address(), request.bulk_gloo_address());
  GW_LOG(kDebug, "serving probe pair for %s", peer);
  return response;
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
