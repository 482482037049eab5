// Local network facts for diagnose: interfaces and host name resolution.
#pragma once

#include <string>
#include <vector>

namespace gloowatch::client {

struct InterfaceInfo {
  std::string name;
  bool exists = false;
  bool up = false;
  bool loopback = false;
  unsigned mtu = 0;
  std::vector<std::string> addresses;  // IPv4/IPv6 literals
};

InterfaceInfo LookupInterface(const std::string& name);
std::vector<std::string> InterfaceNames();

struct HostnameInfo {
  std::string hostname;
  std::vector<std::string> addresses;  // what the host name resolves to
  bool resolves = false;
  bool all_loopback = false;
};

HostnameInfo ResolveOwnHostname();

}  // namespace gloowatch::client
