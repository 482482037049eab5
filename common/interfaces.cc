#include "common/interfaces.h"

#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace gloowatch {

std::optional<std::string> NumericAddress(const sockaddr* sa) {
  socklen_t len;
  if (sa->sa_family == AF_INET) {
    len = sizeof(sockaddr_in);
  } else if (sa->sa_family == AF_INET6) {
    len = sizeof(sockaddr_in6);
  } else {
    return std::nullopt;
  }
  char host[NI_MAXHOST];
  if (getnameinfo(sa, len, host, sizeof(host), nullptr, 0, NI_NUMERICHOST) != 0) {
    return std::nullopt;
  }
  return std::string(host);
}

absl::StatusOr<std::vector<InterfaceInfo>> HostInterfaces() {
  ifaddrs* ifap = nullptr;
  if (getifaddrs(&ifap) != 0) {
    return absl::InternalError(absl::StrCat("getifaddrs: ", strerror(errno)));
  }
  std::vector<InterfaceInfo> out;
  for (ifaddrs* ifa = ifap; ifa != nullptr; ifa = ifa->ifa_next) {
    if (ifa->ifa_name == nullptr) continue;
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const InterfaceInfo& i) { return i.name == ifa->ifa_name; });
    if (it == out.end()) {
      InterfaceInfo info;
      info.name = ifa->ifa_name;
      info.up = (ifa->ifa_flags & IFF_UP) != 0;
      info.loopback = (ifa->ifa_flags & IFF_LOOPBACK) != 0;
      out.push_back(std::move(info));
      it = out.end() - 1;
    }
    if (ifa->ifa_addr == nullptr) continue;
    if (std::optional<std::string> a = NumericAddress(ifa->ifa_addr)) {
      it->addresses.push_back(*std::move(a));
    }
  }
  freeifaddrs(ifap);
  return out;
}

}  // namespace gloowatch
