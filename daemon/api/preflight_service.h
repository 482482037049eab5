// The Preflight gRPC service (gloowatch.v1.Preflight, docs/client.md
// "preflight"): a job's hosts resolve their Gloo address for the job's
// GLOO_SOCKET_IFNAME, and their transports form a Gloo full mesh.
//
// Callback API like the other services; resolution (getaddrinfo may wait for
// DNS) runs on a thread of its own, and at most max_in_flight calls run at
// once: more are refused with RESOURCE_EXHAUSTED. Every field is bounded.
#pragma once

#include <atomic>
#include <cstddef>
#include <string>

#include "daemon/supervisor/transport_supervisor.h"
#include "daemon/system/gloo_endpoint.h"
#include "proto/gloowatch.grpc.pb.h"

namespace gloowatch {

class PreflightService final : public v1::Preflight::CallbackService {
 public:
  static constexpr uint32_t kMaxHosts = 1024;
  static constexpr uint64_t kMaxTimeoutMs = 3600 * 1000;
  static constexpr size_t kMaxInFlight = 8;

  PreflightService(std::string node, const SystemView* system, TransportSupervisor* transport)
      : node_(std::move(node)), system_(system), transport_(transport) {}

  grpc::ServerUnaryReactor* Resolve(grpc::CallbackServerContext* context,
                                    const v1::PreflightResolveRequest* request,
                                    v1::PreflightResolveResponse* response) override;
  grpc::ServerUnaryReactor* Connect(grpc::CallbackServerContext* context,
                                    const v1::PreflightConnectRequest* request,
                                    v1::PreflightConnectResponse* response) override;

 private:
  bool Admit();
  void Release() { in_flight_.fetch_sub(1); }

  const std::string node_;
  const SystemView* const system_;
  TransportSupervisor* const transport_;
  std::atomic<size_t> in_flight_{0};
};

// Why a Preflight request is refused, or OK (exposed for tests).
absl::Status CheckResolveRequest(const v1::PreflightResolveRequest& request);
absl::Status CheckConnectRequest(const v1::PreflightConnectRequest& request);

// The daemon's answer to Resolve without the mesh: the job's Gloo address on
// this host, as ProcessGroupGloo would choose it, and the host name's addresses.
v1::PreflightResolveResponse ResolveForJob(const std::string& socket_ifname,
                                           const SystemView& system);

}  // namespace gloowatch
