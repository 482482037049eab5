// The host's network interfaces as getifaddrs(3) lists them: one walk for the
// daemon (which address the Gloo device binds to, which callers are local)
// and the client (diagnose's check of GLOO_SOCKET_IFNAME).
#pragma once

#include <sys/socket.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gloowatch {

struct InterfaceInfo {
  std::string name;
  bool up = false;        // IFF_UP
  bool loopback = false;  // IFF_LOOPBACK
  // Numeric IPv4/IPv6 addresses in kernel order; IPv6 link-local ones carry
  // their scope ("fe80::1%eth0").
  std::vector<std::string> addresses;
};

// Every interface, including ones without an IP address, in kernel order.
absl::StatusOr<std::vector<InterfaceInfo>> HostInterfaces();

// The numeric text of an IPv4 or IPv6 socket address, an IPv6 one with its
// scope (getnameinfo NI_NUMERICHOST); nullopt for any other family.
std::optional<std::string> NumericAddress(const sockaddr* address);

}  // namespace gloowatch
