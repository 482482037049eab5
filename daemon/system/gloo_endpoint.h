// Decides which local address and interface the Gloo device binds to, the
// way PyTorch's ProcessGroupGloo would, and reads facts about that interface
// (link speed, MTU). The system is reached only through SystemView so tests
// can fake it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/interfaces.h"
#include "proto/gloowatch.pb.h"

namespace gloowatch {

class SystemView {
 public:
  virtual ~SystemView() = default;
  // Every interface, including ones without an IP address (HostInterfaces).
  virtual absl::StatusOr<std::vector<InterfaceInfo>> ListInterfaces() const = 0;
  // Contents of /sys/class/net/<iface>/<file>, trailing whitespace removed;
  // nullopt when missing or unreadable (lo's "speed" read fails with EINVAL).
  virtual std::optional<std::string> ReadSysfs(const std::string& iface,
                                               const std::string& file) const = 0;
  // Whole file; nullopt when missing or unreadable.
  virtual std::optional<std::string> ReadFile(const std::string& path) const = 0;
  virtual absl::StatusOr<std::string> Hostname() const = 0;
  // Numeric addresses for `name` in getaddrinfo(AF_UNSPEC, SOCK_STREAM)
  // order, duplicates removed. Error text carries gai_strerror.
  virtual absl::StatusOr<std::vector<std::string>> ResolveHost(const std::string& name) const = 0;
};

// The running machine. Never null; lives forever.
const SystemView& RealSystem();

struct EndpointRequest {
  std::string config_address;    // gloo.address
  std::string config_interface;  // gloo.interface
  std::optional<std::string> env_gloo_socket_ifname;
  bool peers_are_remote = false;
  double link_speed_override = 0;  // bytes/s; > 0 replaces what sysfs says
};

struct GlooEndpoint {
  std::string interface;  // empty when no interface holds the address
  std::string address;    // what the Gloo device binds to
  // "config:address", "config:interface", "env:GLOO_SOCKET_IFNAME", "hostname".
  std::string source;
  bool is_loopback = false;
  std::optional<double> link_speed_bytes_per_second;
  std::string link_speed_note;  // why the speed is unknown, or "from config"
  uint32_t mtu = 0;             // 0 when unknown
  std::string warning;          // for the operator; empty when all is well
  // GLOO_SOCKET_IFNAME's names when it chose the interface (ProcessGroupGloo
  // opens one device per name); empty otherwise.
  std::vector<std::string> socket_ifnames;
};

// As GetStatus and Preflight.Resolve report it.
v1::GlooEndpoint GlooEndpointProto(const GlooEndpoint& endpoint);

// Order: gloo.address, gloo.interface, GLOO_SOCKET_IFNAME, host name.
// Errors (the daemon cannot probe the way training would): an address no
// local interface holds, a missing / down / address-less interface, NCCL's
// '^' exclusion syntax in GLOO_SOCKET_IFNAME. A host name that resolves to no
// local address is not an error: like PyTorch we fall back to 127.0.0.1 and
// warn.
absl::StatusOr<GlooEndpoint> ResolveGlooEndpoint(const EndpointRequest& req, const SystemView& sys);

// /proc/sys/net/ipv4/ip_local_port_range as {low, high}.
absl::StatusOr<std::pair<uint32_t, uint32_t>> ReadEphemeralPortRange(const SystemView& sys);

}  // namespace gloowatch
