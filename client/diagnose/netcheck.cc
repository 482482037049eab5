#include "client/diagnose/netcheck.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <set>

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

InterfaceInfo LookupInterface(const std::string& name) {
  InterfaceInfo info;
  info.name = name;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return info;
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (name != i->ifa_name) continue;
    info.exists = true;
    info.up = (i->ifa_flags & IFF_UP) != 0;
    info.loopback = (i->ifa_flags & IFF_LOOPBACK) != 0;
    if (i->ifa_addr && (i->ifa_addr->sa_family == AF_INET || i->ifa_addr->sa_family == AF_INET6)) {
      info.addresses.push_back(AddressString(i->ifa_addr));
    }
  }
  freeifaddrs(list);
  if (info.exists && name.size() < IFNAMSIZ) {
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ifreq req{};
    std::strncpy(req.ifr_name, name.c_str(), IFNAMSIZ - 1);
    if (fd >= 0 && ioctl(fd, SIOCGIFMTU, &req) == 0) info.mtu = req.ifr_mtu;
    if (fd >= 0) close(fd);
  }
  return info;
}

std::vector<std::string> InterfaceNames() {
  std::set<std::string> names;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return {};
  for (ifaddrs* i = list; i; i = i->ifa_next) names.insert(i->ifa_name);
  freeifaddrs(list);
  return {names.begin(), names.end()};
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
