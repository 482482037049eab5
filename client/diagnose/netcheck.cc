#include "client/diagnose/netcheck.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netdb.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <utility>

namespace gloowatch::client {
namespace {

std::string AddressString(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (sa->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, buf, sizeof buf);
  } else if (sa->sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, buf, sizeof buf);
  }
  return buf;
}

bool IsLoopbackAddress(const std::string& a) { return a.rfind("127.", 0) == 0 || a == "::1"; }

}  // namespace

std::optional<InterfaceFacts> LookupInterface(const std::string& name) {
  absl::StatusOr<std::vector<InterfaceInfo>> listed = HostInterfaces();
  if (!listed.ok()) return std::nullopt;
  for (InterfaceInfo& info : *listed) {
    if (info.name != name) continue;
    InterfaceFacts facts{std::move(info), 0};
    if (name.size() < IFNAMSIZ) {
      int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
      ifreq req{};
      std::strncpy(req.ifr_name, name.c_str(), IFNAMSIZ - 1);
      if (fd >= 0 && ioctl(fd, SIOCGIFMTU, &req) == 0) facts.mtu = req.ifr_mtu;
      if (fd >= 0) close(fd);
    }
    return facts;
  }
  return std::nullopt;
}

HostnameInfo ResolveOwnHostname() {
  HostnameInfo info;
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  info.hostname = buf;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* ai = nullptr;
  if (getaddrinfo(buf, nullptr, &hints, &ai) != 0) return info;
  std::set<std::string> seen;
  for (addrinfo* a = ai; a; a = a->ai_next) {
    std::string s = AddressString(a->ai_addr);
    if (!s.empty() && seen.insert(s).second) info.addresses.push_back(s);
  }
  freeaddrinfo(ai);
  info.resolves = !info.addresses.empty();
  info.all_loopback =
      info.resolves && std::all_of(info.addresses.begin(), info.addresses.end(), IsLoopbackAddress);
  return info;
}

}  // namespace gloowatch::client
