#include "daemon/system/gloo_endpoint.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace gloowatch {
namespace {

// --- the real system ---------------------------------------------------------

std::optional<std::string> ReadWholeFile(const std::string& path) {
  // POSIX read rather than iostreams: sysfs reports "no value" as a read
  // error (EINVAL for lo's speed), which must not look like an empty file.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string out;
  std::array<char, 4096> buf;
  for (;;) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    out.append(buf.data(), static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

class RealSystemView final : public SystemView {
 public:
  absl::StatusOr<std::vector<InterfaceInfo>> ListInterfaces() const override {
    return HostInterfaces();
  }

  std::optional<std::string> ReadSysfs(const std::string& iface,
                                       const std::string& file) const override {
    // Names come from config and the environment: keep them inside sysfs.
    for (const std::string* part : {&iface, &file}) {
      if (part->empty() || *part == "." || *part == ".." || part->find('/') != std::string::npos) {
        return std::nullopt;
      }
    }
    std::optional<std::string> s = ReadWholeFile(absl::StrCat("/sys/class/net/", iface, "/", file));
    if (!s) return std::nullopt;
    return std::string(absl::StripTrailingAsciiWhitespace(*s));
  }

  std::optional<std::string> ReadFile(const std::string& path) const override {
    return ReadWholeFile(path);
  }

  absl::StatusOr<std::string> Hostname() const override {
    std::array<char, HOST_NAME_MAX + 1> buf{};
    if (gethostname(buf.data(), buf.size() - 1) != 0) {
      return absl::InternalError(absl::StrCat("gethostname: ", strerror(errno)));
    }
    return std::string(buf.data());
  }

  absl::StatusOr<std::vector<std::string>> ResolveHost(const std::string& name) const override {
    // Same hints as Gloo's lookupAddrForHostname with PyTorch's defaults.
    addrinfo hints;
    std::memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* result = nullptr;
    int rv = getaddrinfo(name.c_str(), nullptr, &hints, &result);
    if (rv != 0) {
      return absl::UnavailableError(absl::StrCat("getaddrinfo ", name, ": ", gai_strerror(rv)));
    }
    std::vector<std::string> out;
    for (addrinfo* rp = result; rp != nullptr; rp = rp->ai_next) {
      std::optional<std::string> a = NumericAddress(rp->ai_addr);
      if (a && std::find(out.begin(), out.end(), *a) == out.end()) out.push_back(*std::move(a));
    }
    freeaddrinfo(result);
    return out;
  }
};

// --- address helpers ---------------------------------------------------------

struct Ip {
  int family = AF_UNSPEC;
  std::array<unsigned char, 16> bytes{};
  std::string scope;  // IPv6 zone, "" when absent
};

std::optional<Ip> ParseIp(absl::string_view text) {
  Ip ip;
  std::string host(text);
  if (size_t pct = host.find('%'); pct != std::string::npos) {
    ip.scope = host.substr(pct + 1);
    host.resize(pct);
  }
  if (ip.scope.empty() && inet_pton(AF_INET, host.c_str(), ip.bytes.data()) == 1) {
    ip.family = AF_INET;
    return ip;
  }
  if (inet_pton(AF_INET6, host.c_str(), ip.bytes.data()) == 1) {
    ip.family = AF_INET6;
    return ip;
  }
  return std::nullopt;
}

bool SameIp(const Ip& a, const Ip& b) {
  const size_t n = a.family == AF_INET ? 4 : 16;
  if (a.family != b.family || std::memcmp(a.bytes.data(), b.bytes.data(), n) != 0) return false;
  return a.scope.empty() || b.scope.empty() || a.scope == b.scope;
}

bool IsLoopbackIp(const Ip& ip) {
  if (ip.family == AF_INET) return ip.bytes[0] == 127;
  if (ip.family == AF_INET6) {
    static constexpr std::array<unsigned char, 16> kLoop6 = {0, 0, 0, 0, 0, 0, 0, 0,
                                                             0, 0, 0, 0, 0, 0, 0, 1};
    return ip.bytes == kLoop6;
  }
  return false;
}

bool IsLoopbackText(absl::string_view text) {
  std::optional<Ip> ip = ParseIp(text);
  return ip && IsLoopbackIp(*ip);
}

// The interface a bind to `ip` would use, or null when bind(2) would fail
// with EADDRNOTAVAIL. All of 127/8 binds and belongs to the loopback
// interface even though only 127.0.0.1 is listed (Gloo's
// sockaddrToInterfaceName maps it the same way): Debian's 127.0.1.1.
const InterfaceInfo* InterfaceForIp(const std::vector<InterfaceInfo>& ifaces, const Ip& ip) {
  for (const InterfaceInfo& i : ifaces) {
    for (const std::string& a : i.addresses) {
      std::optional<Ip> have = ParseIp(a);
      if (have && SameIp(*have, ip)) return &i;
    }
  }
  if (ip.family == AF_INET && IsLoopbackIp(ip)) {
    for (const InterfaceInfo& i : ifaces) {
      if (i.loopback) return &i;
    }
    for (const InterfaceInfo& i : ifaces) {
      for (const std::string& a : i.addresses) {
        std::optional<Ip> have = ParseIp(a);
        if (have && have->family == AF_INET && IsLoopbackIp(*have)) return &i;
      }
    }
  }
  return nullptr;
}

const InterfaceInfo* InterfaceByName(const std::vector<InterfaceInfo>& ifaces,
                                     absl::string_view name) {
  for (const InterfaceInfo& i : ifaces) {
    if (i.name == name) return &i;
  }
  return nullptr;
}

// IPv4 first, as Gloo gets it: getifaddrs lists an interface's IPv4
// addresses before its IPv6 ones.
std::optional<std::string> PickAddress(const InterfaceInfo& iface) {
  const std::string* v6 = nullptr;
  for (const std::string& a : iface.addresses) {
    std::optional<Ip> ip = ParseIp(a);
    if (!ip) continue;
    if (ip->family == AF_INET) return a;
    if (v6 == nullptr) v6 = &a;
  }
  if (v6 != nullptr) return *v6;
  return std::nullopt;
}

// "lo 127.0.0.1 ::1, eth0 192.0.2.2"
std::string DescribeAddresses(const std::vector<InterfaceInfo>& ifaces) {
  std::vector<std::string> parts;
  for (const InterfaceInfo& i : ifaces) {
    if (i.addresses.empty()) continue;
    parts.push_back(absl::StrCat(i.name, " ", absl::StrJoin(i.addresses, " ")));
  }
  return parts.empty() ? "none" : absl::StrJoin(parts, ", ");
}

std::string DescribeNames(const std::vector<InterfaceInfo>& ifaces) {
  std::vector<std::string> names;
  for (const InterfaceInfo& i : ifaces) names.push_back(i.name);
  return names.empty() ? "none" : absl::StrJoin(names, ", ");
}

void FillLinkFacts(const EndpointRequest& req, const SystemView& sys, GlooEndpoint& ep) {
  if (!ep.interface.empty()) {
    uint32_t mtu = 0;
    std::optional<std::string> m = sys.ReadSysfs(ep.interface, "mtu");
    if (m && absl::SimpleAtoi(*m, &mtu)) ep.mtu = mtu;
  }

  if (req.link_speed_override > 0) {
    ep.link_speed_bytes_per_second = req.link_speed_override;
    ep.link_speed_note = "from config";
    return;
  }
  if (ep.is_loopback) {
    ep.link_speed_note = "loopback has no link speed";
    return;
  }
  if (ep.interface.empty()) {
    ep.link_speed_note = "speed unknown (no interface)";
    return;
  }
  std::optional<std::string> s = sys.ReadSysfs(ep.interface, "speed");
  if (!s) {
    // Virtual and wireless devices often have no readable speed file.
    ep.link_speed_note = "speed unknown (sysfs speed unreadable)";
    return;
  }
  int64_t mbps = 0;
  if (!absl::SimpleAtoi(*s, &mbps)) {
    ep.link_speed_note = absl::StrCat("speed unknown (sysfs reports '", *s, "')");
    return;
  }
  if (mbps <= 0) {
    ep.link_speed_note = absl::StrCat("speed unknown (sysfs reports ", mbps, ")");
    return;
  }
  // sysfs speed is in Mbit/s.
  ep.link_speed_bytes_per_second = static_cast<double>(mbps) * 1e6 / 8;
}

// What ResolveGlooEndpoint has chosen so far, and how to explain it.
struct Choice {
  GlooEndpoint ep;
  const InterfaceInfo* iface = nullptr;
  std::string origin;        // for errors: what picked the interface
  std::string loopback_why;  // for the loopback warning
  std::string loopback_fix;
  std::vector<std::string> warnings;
};

// gloo.address: it must be a local address.
absl::Status ChooseByAddress(const EndpointRequest& req, const std::vector<InterfaceInfo>& ifaces,
                             Choice& c) {
  c.ep.source = "config:address";
  c.origin = "gloo.address";
  std::optional<Ip> ip = ParseIp(req.config_address);
  if (!ip) {
    return absl::InvalidArgumentError(
        absl::StrCat("gloo.address '", req.config_address, "' is not a numeric IP address"));
  }
  c.iface = InterfaceForIp(ifaces, *ip);
  if (c.iface == nullptr) {
    return absl::NotFoundError(absl::StrCat(
        "gloo.address ", req.config_address,
        " is not assigned to any local interface (have: ", DescribeAddresses(ifaces), ")"));
  }
  c.ep.address = req.config_address;
  c.loopback_why = "gloo.address is set to it";
  c.loopback_fix = "set gloo.address to a routable address, or gloo.interface";
  return absl::OkStatus();
}

// The interface gloo.interface or GLOO_SOCKET_IFNAME names (as PyTorch reads
// the variable), or "" when neither does: the host name decides.
absl::Status InterfaceNameFor(const EndpointRequest& req, Choice& c, std::string* name) {
  if (!req.config_interface.empty()) {
    c.ep.source = "config:interface";
    c.origin = "gloo.interface";
    *name = req.config_interface;
    c.loopback_why = absl::StrCat("gloo.interface is ", *name);
    c.loopback_fix = "set gloo.interface to a routable interface";
    return absl::OkStatus();
  }
  if (req.env_gloo_socket_ifname && req.env_gloo_socket_ifname->size() == 1) {
    c.warnings.push_back(absl::StrCat("GLOO_SOCKET_IFNAME='", *req.env_gloo_socket_ifname,
                                      "' is ignored: PyTorch only reads values longer than "
                                      "one character, so it uses the host name"));
  }
  // PyTorch only honours values longer than one character
  // (strlen(ifnameEnv) > 1) and splits them on ','.
  if (!req.env_gloo_socket_ifname || req.env_gloo_socket_ifname->size() <= 1) {
    return absl::OkStatus();
  }
  const std::string& env = *req.env_gloo_socket_ifname;
  if (env[0] == '^') {
    return absl::InvalidArgumentError(
        absl::StrCat("GLOO_SOCKET_IFNAME='", env,
                     "': '^' exclusion is NCCL syntax; Gloo/PyTorch read a comma-separated list of "
                     "interface names and fail with 'Unable to find address for: ",
                     std::vector<std::string>(absl::StrSplit(env, ','))[0], "'"));
  }
  std::vector<std::string> names = absl::StrSplit(env, ',', absl::SkipEmpty());
  if (names.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("GLOO_SOCKET_IFNAME='", env, "' names no interface"));
  }
  c.ep.source = "env:GLOO_SOCKET_IFNAME";
  c.ep.socket_ifnames = names;
  c.origin = "GLOO_SOCKET_IFNAME";
  *name = names[0];
  if (names.size() > 1) {
    c.warnings.push_back(absl::StrCat(
        "GLOO_SOCKET_IFNAME lists ", absl::StrJoin(names, ","),
        ": PyTorch spreads Gloo pairs over one device per interface; gloowatch probes over ", *name,
        " only (not probed: ", absl::StrJoin(names.begin() + 1, names.end(), ", "), ")"));
  }
  c.loopback_why = absl::StrCat("GLOO_SOCKET_IFNAME=", env);
  c.loopback_fix = "set GLOO_SOCKET_IFNAME to a routable interface";
  return absl::OkStatus();
}

// A named interface: it must exist and have an address.
absl::Status ChooseByName(const std::string& name, const std::vector<InterfaceInfo>& ifaces,
                          Choice& c) {
  c.iface = InterfaceByName(ifaces, name);
  if (c.iface == nullptr) {
    std::string msg = absl::StrCat("interface ", name, " (from ", c.origin,
                                   ") does not exist (have: ", DescribeNames(ifaces), ")");
    if (c.ep.source == "env:GLOO_SOCKET_IFNAME") {
      absl::StrAppend(&msg, "; PyTorch fails with 'Unable to find address for: ", name, "'");
    }
    return absl::NotFoundError(msg);
  }
  std::optional<std::string> address = PickAddress(*c.iface);
  if (!address) {
    if (!c.iface->up) {
      return absl::FailedPreconditionError(
          absl::StrCat("interface ", name, " is down (from ", c.origin, ")"));
    }
    return absl::FailedPreconditionError(absl::StrCat("interface ", name, " (from ", c.origin,
                                                      ") has no IP address; Gloo fails with "
                                                      "'Unable to find address for: ",
                                                      name, "'"));
  }
  c.ep.address = *address;
  return absl::OkStatus();
}

// PyTorch's createDefaultDevice: the first address the host name resolves
// to that bind(2) accepts, else loopback with a warning.
absl::Status ChooseByHostname(const SystemView& sys, const std::vector<InterfaceInfo>& ifaces,
                              Choice& c) {
  c.ep.source = "hostname";
  absl::StatusOr<std::string> host = sys.Hostname();
  if (!host.ok()) return host.status();
  c.origin = absl::StrCat("host name '", *host, "'");
  c.loopback_fix = "set gloo.interface / GLOO_SOCKET_IFNAME";
  std::string reason;
  absl::StatusOr<std::vector<std::string>> resolved = sys.ResolveHost(*host);
  if (resolved.ok()) {
    for (const std::string& a : *resolved) {
      std::optional<Ip> ip = ParseIp(a);
      if (!ip) continue;
      if (const InterfaceInfo* i = InterfaceForIp(ifaces, *ip)) {
        c.iface = i;
        c.ep.address = a;
        break;
      }
    }
    if (c.iface == nullptr) {
      reason = resolved->empty() ? "it resolves to nothing"
                                 : absl::StrCat("it resolves to ", absl::StrJoin(*resolved, ", "),
                                                ", none of them local");
    }
  } else {
    reason = std::string(resolved.status().message());
  }
  if (c.iface == nullptr) {
    c.ep.address = "127.0.0.1";
    c.iface = InterfaceForIp(ifaces, *ParseIp(c.ep.address));
    c.warnings.push_back(absl::StrCat("host name '", *host, "' has no local address (", reason,
                                      "); like PyTorch, falling back to loopback 127.0.0.1"));
    c.loopback_why = absl::StrCat("host name '", *host, "' has no local address");
  } else {
    c.loopback_why = "host name resolves to it";
  }
  return absl::OkStatus();
}

}  // namespace

const SystemView& RealSystem() {
  static const RealSystemView* const sys = new RealSystemView();
  return *sys;
}

v1::GlooEndpoint GlooEndpointProto(const GlooEndpoint& ep) {
  v1::GlooEndpoint g;
  g.set_interface(ep.interface);
  g.set_address(ep.address);
  g.set_source(ep.source);
  g.set_is_loopback(ep.is_loopback);
  if (ep.link_speed_bytes_per_second) {
    g.set_link_speed_bytes_per_second(*ep.link_speed_bytes_per_second);
  }
  g.set_link_speed_note(ep.link_speed_note);
  g.set_mtu(ep.mtu);
  g.set_warning(ep.warning);
  for (const std::string& name : ep.socket_ifnames) g.add_socket_ifnames(name);
  return g;
}

absl::StatusOr<GlooEndpoint> ResolveGlooEndpoint(const EndpointRequest& req,
                                                 const SystemView& sys) {
  absl::StatusOr<std::vector<InterfaceInfo>> listed = sys.ListInterfaces();
  if (!listed.ok()) return listed.status();
  const std::vector<InterfaceInfo>& ifaces = *listed;

  Choice c;
  const bool config_chooses = !req.config_address.empty() || !req.config_interface.empty();
  if (config_chooses && req.env_gloo_socket_ifname && !req.env_gloo_socket_ifname->empty()) {
    c.warnings.push_back(
        absl::StrCat("GLOO_SOCKET_IFNAME='", *req.env_gloo_socket_ifname, "' is set but ",
                     req.config_address.empty() ? "gloo.interface" : "gloo.address",
                     " takes precedence; training processes with this environment bind elsewhere"));
  }
  absl::Status chosen;
  if (!req.config_address.empty()) {
    chosen = ChooseByAddress(req, ifaces, c);
  } else {
    std::string name;
    chosen = InterfaceNameFor(req, c, &name);
    if (chosen.ok()) {
      chosen = name.empty() ? ChooseByHostname(sys, ifaces, c) : ChooseByName(name, ifaces, c);
    }
  }
  if (!chosen.ok()) return chosen;

  GlooEndpoint& ep = c.ep;
  if (c.iface != nullptr && !c.iface->up) {
    return absl::FailedPreconditionError(
        absl::StrCat("interface ", c.iface->name, " is down (from ", c.origin, ")"));
  }
  ep.interface = c.iface != nullptr ? c.iface->name : "";
  ep.is_loopback = IsLoopbackText(ep.address) || (c.iface != nullptr && c.iface->loopback);
  if (ep.is_loopback && req.peers_are_remote) {
    // First, because nothing else matters if no peer can connect.
    c.warnings.insert(c.warnings.begin(),
                      absl::StrCat("Gloo would bind to loopback ", ep.address, " (", c.loopback_why,
                                   ") while peers are remote: ", c.loopback_fix));
  }
  FillLinkFacts(req, sys, ep);
  ep.warning = absl::StrJoin(c.warnings, "; ");
  return ep;
}

absl::StatusOr<std::pair<uint32_t, uint32_t>> ReadEphemeralPortRange(const SystemView& sys) {
  static constexpr char kPath[] = "/proc/sys/net/ipv4/ip_local_port_range";
  std::optional<std::string> text = sys.ReadFile(kPath);
  if (!text) return absl::NotFoundError(absl::StrCat("cannot read ", kPath));
  std::vector<absl::string_view> fields =
      absl::StrSplit(*text, absl::ByAnyChar(" \t\n"), absl::SkipEmpty());
  uint32_t low = 0, high = 0;
  if (fields.size() != 2 || !absl::SimpleAtoi(fields[0], &low) ||
      !absl::SimpleAtoi(fields[1], &high) || low == 0 || high > 65535 || low > high) {
    return absl::InvalidArgumentError(absl::StrCat(kPath, ": expected 'low high', got '",
                                                   absl::StripTrailingAsciiWhitespace(*text), "'"));
  }
  return std::make_pair(low, high);
}

}  // namespace gloowatch
