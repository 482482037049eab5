// Which daemons to ask: from --daemons, a daemon config or a cluster file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gloowatch::client {

struct Endpoint {
  std::string host;              // without IPv6 brackets
  uint16_t port = 0;             // 0: none (ToString gives the host alone)
  std::string ToString() const;  // "host:port" / "[v6]:port"
};

struct DaemonTarget {
  std::string name;  // node name when known, else the address
  Endpoint endpoint;
};

// "host:port" or "[v6]:port"; port 1..65535.
absl::StatusOr<Endpoint> ParseEndpoint(absl::string_view text);
// Comma-separated endpoints; duplicates are an error (they would double count).
absl::StatusOr<std::vector<DaemonTarget>> ParseDaemonList(absl::string_view text);
// Daemon config: the node itself (grpc_listen, 0.0.0.0/:: mapped to loopback)
// plus every peer's grpc address. A fleet file without `node:` (one file
// listing every node, which gloowatchd reads with `--node %H`) is read as
// `this_host`'s, as that daemon reads it: its own entry is asked through
// grpc_listen, not twice. A host the fleet file does not list (a login node)
// asks every node listed.
absl::StatusOr<std::vector<DaemonTarget>> LoadDaemonConfig(const std::string& path,
                                                           const std::string& this_host = "");
// Cluster file: `nodes: [{name, grpc}]`.
absl::StatusOr<std::vector<DaemonTarget>> LoadClusterFile(const std::string& path);

// "29500-29600" or "29500".
absl::StatusOr<std::pair<uint16_t, uint16_t>> ParsePortRange(absl::string_view text);

}  // namespace gloowatch::client
