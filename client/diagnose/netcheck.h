// Local network facts for diagnose: interfaces and host name resolution.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/interfaces.h"

namespace gloowatch::client {

// An interface as diagnose checks it: the host's listing of it and its MTU.
struct InterfaceFacts {
  InterfaceInfo info;
  unsigned mtu = 0;  // 0: unknown
};

// The interface `name` (HostInterfaces), or nullopt when the host has none of
// that name or cannot list its interfaces.
std::optional<InterfaceFacts> LookupInterface(const std::string& name);

struct HostnameInfo {
  std::string hostname;
  std::vector<std::string> addresses;  // what the host name resolves to
  bool resolves = false;
  bool all_loopback = false;
};

HostnameInfo ResolveOwnHostname();

}  // namespace gloowatch::client
