#include "daemon/api/preflight_service.h"

#include <algorithm>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/user_text.h"
#include "daemon/api/grpc_status.h"

namespace gloowatch {
namespace {

// Interface names (and commas between them), a session id, a host name.
bool AllOf(const std::string& s, absl::string_view extra) {
  for (char c : s) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) &&
        extra.find(c) == absl::string_view::npos) {
      return false;
    }
  }
  return true;
}

absl::Status CheckTimeout(uint64_t timeout_ms) {
  if (timeout_ms == 0 || timeout_ms > PreflightService::kMaxTimeoutMs) {
    return absl::InvalidArgumentError(absl::StrCat("timeout_ms: ", timeout_ms, " not in [1, ",
                                                   PreflightService::kMaxTimeoutMs, "]"));
  }
  return absl::OkStatus();
}

absl::Status CheckSession(const std::string& session) {
  if (session.empty() || session.size() > 64 || !AllOf(session, "_.-")) {
    return absl::InvalidArgumentError(
        absl::StrCat("session: ", Quote(session), " is not [A-Za-z0-9_.-]{1,64}"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckResolveRequest(const v1::PreflightResolveRequest& request) {
  if (request.socket_ifname().size() > 256 || !AllOf(request.socket_ifname(), "_.:,@^-")) {
    return absl::InvalidArgumentError(
        absl::StrCat("socket_ifname: ", Quote(request.socket_ifname()),
                     " is not a comma-separated list of interface names (up to 256 characters)"));
  }
  if (request.hosts() == 0) return absl::OkStatus();
  if (request.hosts() < 2 || request.hosts() > PreflightService::kMaxHosts) {
    return absl::InvalidArgumentError(
        absl::StrCat("hosts: ", request.hosts(), " not in [2, ", PreflightService::kMaxHosts, "]"));
  }
  if (request.rank() >= request.hosts()) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank: ", request.rank(), " not below hosts ", request.hosts()));
  }
  if (absl::Status s = CheckSession(request.session()); !s.ok()) return s;
  return CheckTimeout(request.timeout_ms());
}

absl::Status CheckConnectRequest(const v1::PreflightConnectRequest& request) {
  if (absl::Status s = CheckSession(request.session()); !s.ok()) return s;
  if (absl::Status s = CheckTimeout(request.timeout_ms()); !s.ok()) return s;
  const int n = request.peer_pair_addresses_size();
  if (n < 2 || n > static_cast<int>(PreflightService::kMaxHosts)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "peer_pair_addresses: ", n, " entries, not in [2, ", PreflightService::kMaxHosts, "]"));
  }
  for (int i = 0; i < n; ++i) {
    if (request.peer_pair_addresses(i).size() > 192) {
      return absl::InvalidArgumentError(
          absl::StrCat("peer_pair_addresses[", i, "]: not a Gloo TCP address"));
    }
  }
  const int reverse = request.peer_reverse_addresses_size();
  if (reverse != 0 && reverse != n) {
    return absl::InvalidArgumentError(absl::StrCat("peer_reverse_addresses: ", reverse,
                                                   " entries for ", n, " peer_pair_addresses"));
  }
  for (int i = 0; i < reverse; ++i) {
    if (request.peer_reverse_addresses(i).size() > 192) {
      return absl::InvalidArgumentError(
          absl::StrCat("peer_reverse_addresses[", i, "]: not a Gloo TCP address"));
    }
  }
  if (request.master_addr().size() > 253 || !AllOf(request.master_addr(), "_.:-[]%")) {
    return absl::InvalidArgumentError(absl::StrCat("master_addr: ", Quote(request.master_addr()),
                                                   " is not a host name or IP address"));
  }
  if (!request.master_addr().empty() &&
      (request.master_port() == 0 || request.master_port() > 65535)) {
    return absl::InvalidArgumentError(
        absl::StrCat("master_port: ", request.master_port(), " not in [1, 65535]"));
  }
  return absl::OkStatus();
}

v1::PreflightResolveResponse ResolveForJob(const std::string& socket_ifname,
                                           const SystemView& system) {
  v1::PreflightResolveResponse out;
  EndpointRequest request;
  // As the job's ProcessGroupGloo reads it: unset and empty are the same.
  if (!socket_ifname.empty()) request.env_gloo_socket_ifname = socket_ifname;
  absl::StatusOr<GlooEndpoint> endpoint = ResolveGlooEndpoint(request, system);
  if (endpoint.ok()) {
    *out.mutable_gloo() = GlooEndpointProto(*endpoint);
  } else {
    out.set_error(std::string(endpoint.status().message()));
  }
  absl::StatusOr<std::string> host = system.Hostname();
  if (!host.ok()) {
    out.set_hostname_error(std::string(host.status().message()));
    return out;
  }
  out.set_hostname(*host);
  absl::StatusOr<std::vector<std::string>> addresses = system.ResolveHost(*host);
  if (!addresses.ok()) {
    out.set_hostname_error(std::string(addresses.status().message()));
    return out;
  }
  for (const std::string& a : *addresses) out.add_hostname_addresses(a);
  return out;
}

bool PreflightService::Admit() {
  if (in_flight_.fetch_add(1) < kMaxInFlight) return true;
  in_flight_.fetch_sub(1);
  return false;
}

namespace {

grpc::Status Busy() {
  return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                      absl::StrCat(PreflightService::kMaxInFlight,
                                   " preflight calls are already running on this daemon (the "
                                   "limit); retry later"));
}

}  // namespace

grpc::ServerUnaryReactor* PreflightService::Resolve(grpc::CallbackServerContext* context,
                                                    const v1::PreflightResolveRequest* request,
                                                    v1::PreflightResolveResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (absl::Status s = CheckResolveRequest(*request); !s.ok()) {
    reactor->Finish(ToGrpc(s));
    return reactor;
  }
  if (!Admit()) {
    reactor->Finish(Busy());
    return reactor;
  }
  // The transport gets as long as the caller waits (a big mesh on a loaded
  // host takes a while to open its pairs), within bounds.
  const absl::Duration caller_waits =
      absl::FromChrono(context->deadline()) - absl::Now() - absl::Milliseconds(200);
  const absl::Duration prepare_deadline =
      std::clamp(caller_waits, absl::Seconds(1), absl::Seconds(60));
  // getaddrinfo may wait for DNS: not on a gRPC thread.
  std::thread([this, reactor, request, response, prepare_deadline] {
    *response = ResolveForJob(request->socket_ifname(), *system_);
    response->set_node(node_);
    if (request->hosts() == 0 || !response->error().empty()) {
      Release();
      reactor->Finish(grpc::Status::OK);
      return;
    }
    transport::v1::PreflightStep step;
    step.set_session(request->session());
    transport::v1::PreflightPrepare* prepare = step.mutable_prepare();
    prepare->set_address(response->gloo().address());
    prepare->set_rank(request->rank());
    prepare->set_hosts(request->hosts());
    prepare->set_timeout_ms(request->timeout_ms());
    transport_->StartPreflight(
        std::move(step), prepare_deadline,
        [this, reactor, response](absl::StatusOr<transport::v1::PreflightReply> reply) {
          Release();
          if (!reply.ok()) {
            reactor->Finish(ToGrpc(reply.status()));
            return;
          }
          for (const std::string& a : reply->pair_addresses()) response->add_pair_addresses(a);
          response->set_reverse_address(reply->reverse_address());
          reactor->Finish(grpc::Status::OK);
        });
  }).detach();
  return reactor;
}

grpc::ServerUnaryReactor* PreflightService::Connect(grpc::CallbackServerContext* context,
                                                    const v1::PreflightConnectRequest* request,
                                                    v1::PreflightConnectResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (absl::Status s = CheckConnectRequest(*request); !s.ok()) {
    reactor->Finish(ToGrpc(s));
    return reactor;
  }
  if (!Admit()) {
    reactor->Finish(Busy());
    return reactor;
  }
  transport::v1::PreflightStep step;
  step.set_session(request->session());
  *step.mutable_connect() = *request;
  // Connects end by the timeout, the exchange one timeout later at most.
  const absl::Duration timeout = absl::Milliseconds(request->timeout_ms());
  transport_->StartPreflight(
      std::move(step), 2 * timeout + absl::Seconds(10),
      [this, reactor, response](absl::StatusOr<transport::v1::PreflightReply> reply) {
        Release();
        if (!reply.ok()) {
          reactor->Finish(ToGrpc(reply.status()));
          return;
        }
        *response = reply->connected();
        reactor->Finish(grpc::Status::OK);
      });
  return reactor;
}

}  // namespace gloowatch
