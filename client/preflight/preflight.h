// `gloowatch preflight`: asks every host's daemon to resolve its Gloo address
// for the job, then to form a Gloo full mesh with the others and check the
// store (gloowatch.v1.Preflight, two phases), and builds the report.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/core/targets.h"
#include "client/preflight/preflight_report.h"
#include "grpcpp/security/credentials.h"

namespace gloowatch::client {

struct PreflightOptions {
  std::vector<DaemonTarget> hosts;  // rank order
  int world_size = 0;
  std::string socket_ifname;
  std::string master_addr;
  uint16_t master_port = 0;
  absl::Duration timeout = absl::Seconds(10);
  // Bound of each Resolve call (the Connect calls wait for the mesh: twice
  // the timeout plus this).
  absl::Duration deadline = absl::Seconds(10);
  std::shared_ptr<grpc::ChannelCredentials> credentials;  // plaintext when null
};

PreflightReport RunPreflight(const PreflightOptions& options);

// Phase 1 only, without a mesh: every daemon resolves the job's Gloo address
// for `socket_ifname` (diagnose's per-host checks). In target order.
std::vector<PreflightHost> ResolveOnly(
    const std::vector<DaemonTarget>& targets, const std::string& socket_ifname,
    absl::Duration deadline, const std::shared_ptr<grpc::ChannelCredentials>& credentials);

// Hosts from a list ("a,b:7602,node[01-04]"), one entry per host; a host
// without a port gets `default_port`. Duplicates are an error.
absl::StatusOr<std::vector<DaemonTarget>> ParsePreflightHosts(const std::vector<std::string>& lines,
                                                              uint16_t default_port);
// A hostfile: one host per line (Slurm ranges allowed), '#' comments, and an
// MPI-style "host slots=N" keeps the host.
absl::StatusOr<std::vector<std::string>> ReadHostfile(const std::string& path);

}  // namespace gloowatch::client
