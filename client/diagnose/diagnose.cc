#include "client/diagnose/diagnose.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "client/preflight/preflight.h"
#include "common/net.h"
#include "yaml-cpp/yaml.h"

namespace gloowatch::client {
namespace {

constexpr uint32_t kSmallEphemeralRange = 16384;  // cf. pytorch/pytorch#97677

Check Make(std::string id) {
  Check c;
  c.id = std::move(id);
  return c;
}

void Raise(Check& c, Severity s) { c.status = std::max(c.status, s); }

std::vector<const v1::NodeStatus*> Reached(const std::vector<FetchResult>& daemons) {
  std::vector<const v1::NodeStatus*> out;
  for (const auto& d : daemons) {
    if (d.status) out.push_back(&*d.status);
  }
  return out;
}

std::string HostOf(const std::string& address) {
  auto ep = ParseEndpoint(address);
  return ep.ok() ? ep->host : address;
}

const char* PeerStateName(v1::PeerState s) {
  switch (s) {
    case v1::PEER_STATE_CONNECTING:
      return "CONNECTING";
    case v1::PEER_STATE_UP:
      return "UP";
    case v1::PEER_STATE_DOWN:
      return "DOWN";
    default:
      return "UNKNOWN";
  }
}

}  // namespace

std::string CompressPorts(const std::vector<uint16_t>& ports) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < ports.size();) {
    size_t j = i;
    while (j + 1 < ports.size() && ports[j + 1] == ports[j] + 1) ++j;
    parts.push_back(j == i ? absl::StrCat(ports[i]) : absl::StrCat(ports[i], "-", ports[j]));
    i = j + 1;
  }
  return absl::StrJoin(parts, ",");
}

Check CheckDaemonsReachable(const std::vector<FetchResult>& daemons) {
  Check c = Make("daemons");
  int ok = 0;
  for (const auto& d : daemons) {
    if (d.status) {
      ++ok;
      c.evidence.push_back(absl::StrCat(d.target.endpoint.ToString(), ": node ", d.status->node(),
                                        " version ", d.status->version()));
    } else {
      Raise(c, Severity::kFail);
      c.evidence.push_back(absl::StrCat(d.target.endpoint.ToString(), ": ", d.error));
    }
  }
  c.summary = absl::StrCat(ok, " of ", daemons.size(), " daemons answered");
  if (c.status != Severity::kPass) {
    c.remediation =
        "Check gloowatchd runs on the unreachable hosts (systemctl status gloowatchd) "
        "and that its gRPC port is open from here.";
  }
  return c;
}

Check CheckPortScan(const HostScan& scan) {
  Check c = Make(absl::StrCat("port_scan:", scan.host));
  if (scan.error) {
    c.status = Severity::kFail;
    c.summary = *scan.error;
    c.remediation = "Fix name resolution for this host (DNS or /etc/hosts) on every node.";
    return c;
  }
  std::map<PortState, std::vector<uint16_t>> by_state;
  std::set<std::string> errors;
  for (const auto& p : scan.ports) {
    by_state[p.state].push_back(p.port);
    if (!p.error.empty()) errors.insert(p.error);
  }
  std::vector<std::string> counts;
  for (const auto& [state, ports] : by_state) {
    counts.push_back(absl::StrCat(ports.size(), " ", PortStateName(state)));
    c.evidence.push_back(absl::StrCat(PortStateName(state), ": ", CompressPorts(ports)));
  }
  for (const auto& e : errors) c.evidence.push_back(absl::StrCat("error: ", e));
  c.summary = absl::StrCat(scan.host, ": ", absl::StrJoin(counts, ", "));
  if (by_state.count(PortState::kFiltered) || by_state.count(PortState::kUnreachable)) {
    c.status = Severity::kFail;
    c.remediation =
        "Packets to the filtered ports are silently dropped (firewall DROP rule, security group). "
        "Allow TCP from the training hosts to the rendezvous port(s) AND to the ephemeral range "
        "(net.ipv4.ip_local_port_range) where Gloo pairs listen.";
  } else if (by_state.count(PortState::kNotScanned) || by_state.count(PortState::kError)) {
    c.status = Severity::kWarn;
    c.remediation = "Scan did not finish for every port; narrow --ports or raise --scan-timeout.";
  }
  return c;
}

Check CheckEphemeralPorts(const std::vector<FetchResult>& daemons,
                          const std::vector<HostScan>& scans) {
  Check c = Make("ephemeral_ports");
  std::map<std::string, const HostScan*> scan_by_host;
  for (const auto& s : scans) scan_by_host[s.host] = &s;
  std::vector<std::string> remedies;
  for (const v1::NodeStatus* n : Reached(daemons)) {
    const uint32_t lo = n->ephemeral_port_low(), hi = n->ephemeral_port_high();
    if (lo == 0 || hi < lo) {
      c.evidence.push_back(absl::StrCat(n->node(), ": ephemeral range unknown"));
      continue;
    }
    const uint32_t size = hi - lo + 1;
    c.evidence.push_back(
        absl::StrCat(n->node(), ": ip_local_port_range ", lo, "-", hi, " (", size, " ports)"));
    if (size < kSmallEphemeralRange) {
      Raise(c, Severity::kWarn);
      remedies.push_back(
          absl::StrCat(n->node(), " has only ", size,
                       " ephemeral ports; every Gloo pair and outgoing connection "
                       "takes one, large jobs can run out (cf. pytorch/pytorch#97677). Widen "
                       "net.ipv4.ip_local_port_range."));
    }
    for (const auto& p : n->peers()) {
      if (p.state() == v1::PEER_STATE_UP) continue;
      auto it = scan_by_host.find(HostOf(p.grpc_address()));
      if (it == scan_by_host.end()) continue;
      bool any_open = std::any_of(it->second->ports.begin(), it->second->ports.end(),
                                  [](const PortResult& r) { return r.state == PortState::kOpen; });
      if (!any_open) continue;
      Raise(c, Severity::kFail);
      c.evidence.push_back(
          absl::StrCat(n->node(), " -> ", p.name(), ": ", PeerStateName(p.state()),
                       " although ports in the scanned range on ", it->first, " are open",
                       p.last_failure().message().empty()
                           ? ""
                           : absl::StrCat(" (last failure: ", p.last_failure().message(), ")")));
      remedies.push_back(
          "Rendezvous ports answer but the Gloo pair does not connect: Gloo pairs listen on "
          "EPHEMERAL ports (net.ipv4.ip_local_port_range), not on MASTER_PORT, so a firewall that "
          "only opens the rendezvous port breaks them (pytorch/pytorch#44544, pytorch/gloo#54). "
          "Open the ephemeral range between the hosts, or pin ip_local_port_range to a range you "
          "open.");
    }
  }
  std::sort(remedies.begin(), remedies.end());
  remedies.erase(std::unique(remedies.begin(), remedies.end()), remedies.end());
  c.remediation = absl::StrJoin(remedies, " ");
  c.summary = c.status == Severity::kPass ? "ephemeral port ranges look fine"
                                          : "ephemeral port problems (see evidence)";
  if (c.evidence.empty()) c.summary = "no daemon data (use --daemons)";
  return c;
}

Check CheckInterface(const std::vector<std::string>& ifnames,
                     const std::vector<InterfaceFacts>& found, const HostnameInfo& hostname,
                     bool remote_peers) {
  Check c = Make("interface");
  if (ifnames.empty()) {
    c.evidence.push_back(absl::StrCat(
        "GLOO_SOCKET_IFNAME unset; host name '", hostname.hostname, "' resolves to ",
        hostname.resolves ? absl::StrJoin(hostname.addresses, ", ") : std::string("nothing")));
    if (!hostname.resolves) {
      c.status = Severity::kFail;
      c.summary = "host name does not resolve; Gloo cannot pick an address";
      c.remediation = "Set GLOO_SOCKET_IFNAME to the training interface or fix /etc/hosts.";
    } else if (hostname.all_loopback) {
      c.status = remote_peers ? Severity::kFail : Severity::kWarn;
      c.summary = "host name resolves to loopback only; Gloo binds to 127.0.0.1";
      c.remediation =
          "Remote ranks cannot reach a loopback address. Set GLOO_SOCKET_IFNAME to the "
          "training interface or make the host name resolve to a routable address.";
    } else {
      c.summary = "Gloo uses the host name's address";
    }
    return c;
  }
  for (const auto& name : ifnames) {
    const InterfaceFacts* facts = nullptr;
    for (const auto& f : found) {
      if (f.info.name == name) facts = &f;
    }
    if (facts == nullptr) {
      Raise(c, Severity::kFail);
      c.evidence.push_back(absl::StrCat(name,
                                        ": no such interface (Gloo fails with 'Unable to "
                                        "find address for: ",
                                        name, "')"));
      continue;
    }
    const InterfaceInfo& info = facts->info;
    // The line starts with the interface's name: its IPv6 link-local
    // addresses are shown without their scope ("%eth0").
    std::vector<absl::string_view> addresses;
    for (const std::string& a : info.addresses)
      addresses.push_back(absl::string_view(a).substr(0, a.find('%')));
    std::string line =
        absl::StrCat(name, ": ", info.up ? "up" : "DOWN", ", mtu ", facts->mtu, ", addresses ",
                     addresses.empty() ? "none" : absl::StrJoin(addresses, " "));
    if (!info.up || info.addresses.empty()) Raise(c, Severity::kFail);
    if (info.loopback && remote_peers) {
      Raise(c, Severity::kFail);
      line += " (loopback, but peers are remote)";
    }
    c.evidence.push_back(line);
  }
  c.summary = c.status == Severity::kPass
                  ? absl::StrCat("interface ", absl::StrJoin(ifnames, ","), " usable")
                  : "Gloo interface not usable";
  if (c.status != Severity::kPass) {
    c.remediation =
        "Pick an interface that exists, is up and has an address on the training "
        "network (`ip -br addr`); same setting on every host.";
  }
  return c;
}

Check CheckMtu(const std::vector<FetchResult>& daemons) {
  Check c = Make("mtu");
  std::set<uint32_t> mtus;
  for (const v1::NodeStatus* n : Reached(daemons)) {
    c.evidence.push_back(
        absl::StrCat(n->node(), ": ", n->gloo().interface(), " mtu ", n->gloo().mtu()));
    if (n->gloo().mtu() != 0) mtus.insert(n->gloo().mtu());
  }
  if (mtus.size() > 1) {
    c.status = Severity::kWarn;
    c.summary = "MTU differs between nodes";
    c.remediation =
        "Use one MTU on the training network; a mismatch with PMTU discovery blocked "
        "stalls large transfers (hangs in big all_reduce, small ones fine).";
  } else {
    c.summary = mtus.empty() ? "no MTU data" : absl::StrCat("MTU ", *mtus.begin(), " everywhere");
  }
  return c;
}

Check CheckThresholds(const std::vector<FetchResult>& daemons) {
  Check c = Make("link_quality");
  int links = 0;
  for (const v1::NodeStatus* n : Reached(daemons)) {
    const auto& t = n->thresholds();
    for (const auto& p : n->peers()) {
      ++links;
      const std::string link = absl::StrCat(n->node(), " -> ", p.name(), ": ");
      if (p.latency().has_p50_seconds() && t.latency_seconds() > 0 &&
          p.latency().p50_seconds() >= t.latency_seconds()) {
        Raise(c, Severity::kWarn);
        c.evidence.push_back(absl::StrFormat("%slatency p50 %.3f ms >= %.3f ms", link,
                                             p.latency().p50_seconds() * 1e3,
                                             t.latency_seconds() * 1e3));
      }
      if (p.bandwidth().has_link_ratio() && p.bandwidth().link_ratio() < t.bandwidth_link_ratio()) {
        Raise(c, Severity::kWarn);
        c.evidence.push_back(absl::StrFormat("%slink ratio %.2f < %.2f", link,
                                             p.bandwidth().link_ratio(), t.bandwidth_link_ratio()));
      }
      if (p.clock().has_offset_seconds() && t.clock_offset_seconds() > 0 &&
          std::abs(p.clock().offset_seconds()) >= t.clock_offset_seconds()) {
        Raise(c, Severity::kWarn);
        c.evidence.push_back(absl::StrFormat("%sclock offset %.1f ms, limit %.1f ms", link,
                                             p.clock().offset_seconds() * 1e3,
                                             t.clock_offset_seconds() * 1e3));
      }
      if (p.failures_in_window() > 0) {
        Raise(c, Severity::kWarn);
        c.evidence.push_back(absl::StrCat(link, p.failures_in_window(), " failures in window"));
      }
    }
  }
  c.summary = links == 0                    ? "no link data (use --daemons)"
              : c.status == Severity::kPass ? absl::StrCat(links, " links within thresholds")
                                            : "links outside thresholds (see evidence)";
  if (c.status != Severity::kPass) {
    c.remediation =
        "Run `gloowatch health` for the full matrices; fix clock sync (chrony), "
        "congested or mis-negotiated links.";
  }
  return c;
}

Check CheckEnvironment(const std::vector<EnvFinding>& findings) {
  Check c = Make("environment");
  std::vector<std::string> fixes;
  for (const auto& f : findings) {
    Raise(c, f.severity);
    c.evidence.push_back(
        absl::StrCat(SeverityName(f.severity), " ", f.name, "=", f.value, ": ", f.message));
    if (f.severity != Severity::kPass) fixes.push_back(absl::StrCat(f.name, ": ", f.message));
  }
  c.summary = findings.empty() ? "no GLOO_* variables set"
                               : absl::StrCat(findings.size(), " GLOO_* variable(s) set");
  if (!fixes.empty()) c.remediation = absl::StrCat("Remove or fix: ", absl::StrJoin(fixes, "; "));
  return c;
}

namespace {

// How many Gloo devices each daemon's host gives ProcessGroupGloo: one per
// GLOO_SOCKET_IFNAME entry, else one (the host name's address). Daemons whose
// own config chose the interface say nothing of the training environment.
std::map<size_t, std::vector<std::string>> GlooDeviceCounts(
    const std::vector<FetchResult>& daemons) {
  std::map<size_t, std::vector<std::string>> by_count;
  for (const v1::NodeStatus* n : Reached(daemons)) {
    const v1::GlooEndpoint& g = n->gloo();
    if (absl::StartsWith(g.source(), "config:")) continue;
    const size_t count = g.socket_ifnames_size() > 0 ? g.socket_ifnames_size() : 1;
    by_count[count].push_back(g.socket_ifnames_size() > 0
                                  ? absl::StrCat(n->node(), " (GLOO_SOCKET_IFNAME=",
                                                 absl::StrJoin(g.socket_ifnames(), ","), ")")
                                  : n->node());
  }
  return by_count;
}

}  // namespace

Check CheckConsistency(const std::vector<FetchResult>& daemons) {
  Check c = Make("consistency");
  std::map<std::string, std::map<std::string, std::vector<std::string>>> values;
  std::map<std::string, std::vector<std::string>> by_family;
  for (const v1::NodeStatus* n : Reached(daemons)) {
    if (!n->gloo().address().empty()) {
      by_family[n->gloo().address().find(':') == std::string::npos ? "IPv4" : "IPv6"].push_back(
          absl::StrCat(n->node(), " (", n->gloo().address(), ")"));
    }
    values["version"][n->version()].push_back(n->node());
    values["gloo_version"][n->gloo_version()].push_back(n->node());
    values["interface"][n->gloo().interface()].push_back(n->node());
    values["interface_source"][n->gloo().source()].push_back(n->node());
    if (!n->gloo().warning().empty()) {
      Raise(c, Severity::kWarn);
      c.evidence.push_back(absl::StrCat(n->node(), ": ", n->gloo().warning()));
    }
  }
  std::vector<std::string> differing;
  for (const auto& [key, by_value] : values) {
    if (by_value.size() <= 1) continue;
    Raise(c, Severity::kWarn);
    differing.push_back(key);
    for (const auto& [v, nodes] : by_value) {
      c.evidence.push_back(absl::StrCat(key, " '", v, "': ", absl::StrJoin(nodes, ",")));
    }
  }
  c.summary = differing.empty()
                  ? "daemons agree on version, gloo version and interface"
                  : absl::StrCat("differs across daemons: ", absl::StrJoin(differing, ", "));
  if (c.status != Severity::kPass) {
    c.remediation = "Roll out one gloowatchd/Gloo version and one interface setting to every node.";
  }
  // ProcessGroupGloo builds one context per device, each a full mesh under
  // the store prefix of its index: a host with fewer devices never joins the
  // others' extra meshes, and init ends in a store wait timeout.
  if (std::map<size_t, std::vector<std::string>> by_count = GlooDeviceCounts(daemons);
      by_count.size() > 1) {
    Raise(c, Severity::kFail);
    for (const auto& [count, nodes] : by_count) {
      c.evidence.push_back(absl::StrCat(count, " Gloo device", count == 1 ? "" : "s", ": ",
                                        absl::StrJoin(nodes, ", ")));
    }
    c.summary = "hosts open different numbers of Gloo devices (GLOO_SOCKET_IFNAME lists)";
    c.remediation =
        "ProcessGroupGloo opens one device per GLOO_SOCKET_IFNAME entry and connects a full mesh "
        "over each; a host with fewer entries never joins the others' extra meshes and "
        "init_process_group times out. List the same number of interfaces on every host.";
  }
  // Gloo pairs only connect within one family: a job over these hosts fails
  // in connectFullMesh with "ss1.ss_family == ss2.ss_family. 2 vs 10".
  if (by_family.size() > 1) {
    Raise(c, Severity::kFail);
    for (const auto& [family, nodes] : by_family) {
      c.evidence.push_back(absl::StrCat(family, ": ", absl::StrJoin(nodes, ", ")));
    }
    c.summary = "Gloo addresses mix IPv4 and IPv6: pairs between them cannot connect";
    c.remediation =
        "Give every host an address of one family: GLOO_SOCKET_IFNAME naming an interface with an "
        "IPv4 address everywhere, or /etc/hosts mapping each host name to its IPv4 address (Gloo "
        "takes getaddrinfo's first answer).";
  }
  return c;
}

Check CheckMasterAddr(const std::map<std::string, std::string>& env, bool remote_peers) {
  Check c = Make("master_addr");
  auto fail = [&c](std::string summary, std::string remediation) {
    Raise(c, Severity::kFail);
    c.summary = std::move(summary);
    c.remediation = std::move(remediation);
    return c;
  };
  const auto addr = env.find("MASTER_ADDR");
  const auto port = env.find("MASTER_PORT");
  if (addr == env.end()) {
    c.summary = "MASTER_ADDR not set here (torchrun and the launcher set it per job)";
    return c;
  }
  const std::string& a = addr->second;
  c.evidence.push_back(absl::StrCat("MASTER_ADDR=", a));
  if (port != env.end()) c.evidence.push_back(absl::StrCat("MASTER_PORT=", port->second));
  int port_number = 0;
  if (port != env.end() &&
      (!absl::SimpleAtoi(port->second, &port_number) || port_number < 1 || port_number > 65535)) {
    return fail(absl::StrCat("MASTER_PORT '", port->second, "' is not a port number"),
                "Set MASTER_PORT to a free TCP port number on the rank 0 host (e.g. 29500).");
  }
  // A port, a scheme or a path in MASTER_ADDR: the store connects to a host
  // of that literal name and fails to resolve it.
  const bool ipv6_literal = std::count(a.begin(), a.end(), ':') > 1;
  if (a.empty() || a.find_first_of(" /\t") != std::string::npos ||
      (!ipv6_literal && a.find(':') != std::string::npos)) {
    return fail(absl::StrCat("MASTER_ADDR '", a, "' is not a host name or address"),
                "MASTER_ADDR takes the rank 0 host alone (no port, no scheme); the port goes in "
                "MASTER_PORT.");
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(a.c_str(), nullptr, &hints, &found); rc != 0) {
    return fail(absl::StrCat("MASTER_ADDR '", a, "' does not resolve here: ", gai_strerror(rc)),
                "Use an address or a name every host resolves (DNS or /etc/hosts).");
  }
  bool loopback = true;
  for (addrinfo* i = found; i != nullptr; i = i->ai_next) {
    char text[INET6_ADDRSTRLEN] = {0};
    const void* raw =
        i->ai_family == AF_INET
            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(i->ai_addr)->sin_addr)
            : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(i->ai_addr)->sin6_addr);
    inet_ntop(i->ai_family, raw, text, sizeof(text));
    loopback &= IsLoopbackHost(text);
  }
  freeaddrinfo(found);
  if (loopback && remote_peers) {
    return fail(absl::StrCat("MASTER_ADDR '", a, "' resolves to loopback, but peers are remote"),
                "Each rank would look for the store on its own host: set MASTER_ADDR to the rank "
                "0 host's address on the training network.");
  }
  c.summary = absl::StrCat("MASTER_ADDR '", a, "' resolves", loopback ? " (to loopback)" : "");
  return c;
}

Check CheckJobResolution(const std::vector<PreflightHost>& hosts, const std::string& ifname) {
  Check c = Make("job_resolution");
  const std::string setting =
      ifname.empty() ? "GLOO_SOCKET_IFNAME unset" : absl::StrCat("GLOO_SOCKET_IFNAME=", ifname);
  std::map<std::string, std::vector<std::string>> by_family;
  std::vector<std::string> loopback, remote, failed;
  int resolved = 0;
  for (const PreflightHost& h : hosts) {
    if (!h.resolve_error.empty()) {
      // Unreachable daemons are the "daemons" check's; an older daemon has
      // no Preflight service.
      c.evidence.push_back(absl::StrCat(h.target.name, ": not asked (", h.resolve_error, ")"));
      continue;
    }
    const v1::PreflightResolveResponse& r = *h.resolved;
    if (!r.error().empty()) {
      Raise(c, Severity::kFail);
      failed.push_back(h.target.name);
      c.evidence.push_back(absl::StrCat(h.target.name, ": ", r.error()));
      continue;
    }
    ++resolved;
    const std::string& address = r.gloo().address();
    c.evidence.push_back(absl::StrCat(h.target.name, ": ", address,
                                      r.gloo().interface().empty() ? "" : " on ",
                                      r.gloo().interface(), " (", r.gloo().source(), ")"));
    by_family[address.find(':') == std::string::npos ? "IPv4" : "IPv6"].push_back(h.target.name);
    (IsLoopbackHost(address) ? loopback : remote).push_back(h.target.name);
    if (!r.gloo().warning().empty()) {
      Raise(c, Severity::kWarn);
      c.evidence.push_back(absl::StrCat(h.target.name, ": ", r.gloo().warning()));
    }
  }
  std::vector<std::string> problems;
  if (!failed.empty()) {
    problems.push_back(absl::StrCat("no Gloo address on ", absl::StrJoin(failed, ", ")));
  }
  if (by_family.size() > 1) {
    Raise(c, Severity::kFail);
    problems.push_back("IPv4 and IPv6 mixed");
    for (const auto& [family, nodes] : by_family) {
      c.evidence.push_back(absl::StrCat(family, ": ", absl::StrJoin(nodes, ", ")));
    }
  }
  if (!loopback.empty() && !remote.empty()) {
    Raise(c, Severity::kFail);
    problems.push_back(absl::StrCat("loopback on ", absl::StrJoin(loopback, ", ")));
  }
  if (ifname.size() <= 1 && !remote.empty()) {
    for (const PreflightHost& h : hosts) {
      if (!h.resolved || h.resolved->hostname_addresses().empty()) continue;
      if (!IsLoopbackHost(h.resolved->hostname_addresses(0))) continue;
      Raise(c, Severity::kWarn);
      problems.push_back(absl::StrCat("host name of ", h.target.name, " resolves to loopback"));
      c.evidence.push_back(absl::StrCat(h.target.name, ": host name '", h.resolved->hostname(),
                                        "' resolves first to ", h.resolved->hostname_addresses(0)));
    }
  }
  c.summary = problems.empty() ? absl::StrCat("the job's Gloo address resolves on ", resolved,
                                              " host", resolved == 1 ? "" : "s", " (", setting, ")")
                               : absl::StrCat(setting, ": ", absl::StrJoin(problems, "; "));
  if (c.status != Severity::kPass) {
    c.remediation =
        "Set GLOO_SOCKET_IFNAME to an interface with a routable address of one family that exists "
        "on every host (or fix /etc/hosts so each host name maps to that address first); "
        "`gloowatch preflight` then checks the whole mesh.";
  }
  return c;
}

Check CheckTrainingConfig(const std::string& path, const std::vector<FetchResult>& daemons) {
  Check c = Make("training_config");
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    c.status = Severity::kFail;
    c.summary = absl::StrCat("cannot read ", path, ": ", e.what());
    c.remediation = "Pass a readable YAML training config.";
    return c;
  }
  auto scalar = [&](const char* key) -> std::optional<std::string> {
    if (root.IsMap() && root[key] && root[key].IsScalar()) return root[key].as<std::string>();
    return std::nullopt;
  };
  std::vector<std::string> fixes;
  if (auto b = scalar("dist_backend")) {
    c.evidence.push_back(absl::StrCat("dist_backend: ", *b));
    if (*b != "gloo") {
      Raise(c, Severity::kWarn);
      fixes.push_back(
          absl::StrCat("dist_backend is '", *b, "', not gloo; gloowatch measures Gloo"));
    }
  }
  for (const char* key :
       {"timeout", "dist_timeout", "gloo_timeout", "timeout_seconds", "process_group_timeout"}) {
    auto v = scalar(key);
    double seconds = 0;
    if (!v || !absl::SimpleAtod(*v, &seconds)) continue;
    c.evidence.push_back(absl::StrCat(key, ": ", *v, " s"));
    if (seconds < 60) {
      Raise(c, Severity::kWarn);
      fixes.push_back(absl::StrCat(key, " = ", *v,
                                   " s is very low for Gloo collectives: one slow "
                                   "rank (checkpointing, data loading) fails the whole job with "
                                   "'Timed out waiting ...ms'; default is 1800 s"));
    }
  }
  if (root.IsMap() && root["node_ip_addresses"] && root["node_ip_addresses"].IsSequence()) {
    std::set<std::string> daemon_hosts;
    for (const auto& d : daemons) daemon_hosts.insert(d.target.endpoint.host);
    for (const auto& ip : root["node_ip_addresses"]) {
      const std::string s = ip.as<std::string>();
      if (daemon_hosts.count(s) || daemon_hosts.empty()) continue;
      Raise(c, Severity::kWarn);
      fixes.push_back(absl::StrCat("node ", s, " has no gloowatchd in --daemons"));
    }
    c.evidence.push_back(absl::StrCat("node_ip_addresses: ", root["node_ip_addresses"].size()));
  }
  c.summary = fixes.empty() ? "training config looks fine for Gloo" : "training config issues";
  c.remediation = absl::StrJoin(fixes, "; ");
  return c;
}

int DiagnoseReport::ExitCode() const { return fail > 0 ? 2 : warn > 0 ? 1 : 0; }

DiagnoseReport MakeReport(std::vector<Check> checks) {
  DiagnoseReport r;
  r.checks = std::move(checks);
  for (const auto& c : r.checks) {
    (c.status == Severity::kPass ? r.pass : c.status == Severity::kWarn ? r.warn : r.fail)++;
  }
  return r;
}

DiagnoseReport RunDiagnose(const DiagnoseOptions& o) {
  std::vector<Check> checks;
  std::vector<FetchResult> daemons;
  if (!o.daemons.empty()) {
    daemons = FetchAll(o.daemons, o.deadline, o.credentials);
    checks.push_back(CheckDaemonsReachable(daemons));
  }
  std::vector<std::string> hosts;
  for (const v1::NodeStatus* n : Reached(daemons)) {
    for (const auto& p : n->peers()) hosts.push_back(HostOf(p.grpc_address()));
  }
  hosts.insert(hosts.end(), o.targets.begin(), o.targets.end());
  std::sort(hosts.begin(), hosts.end());
  hosts.erase(std::unique(hosts.begin(), hosts.end()), hosts.end());
  std::vector<HostScan> scans;
  for (const auto& h : hosts) {
    HostScan s;
    s.host = h;
    auto r = ScanPorts(h, o.port_low, o.port_high, o.scan);
    if (r.ok()) {
      s.ports = std::move(*r);
    } else {
      s.error = std::string(r.status().message());
    }
    scans.push_back(std::move(s));
    checks.push_back(CheckPortScan(scans.back()));
  }
  if (!daemons.empty()) checks.push_back(CheckEphemeralPorts(daemons, scans));

  std::string ifname = o.ifname;
  if (ifname.empty()) {
    auto it = o.env.find("GLOO_SOCKET_IFNAME");
    if (it != o.env.end()) ifname = it->second;
  }
  std::vector<std::string> ifnames = absl::StrSplit(ifname, ',', absl::SkipWhitespace());
  std::vector<InterfaceFacts> infos;
  for (const auto& n : ifnames) {
    if (std::optional<InterfaceFacts> found = LookupInterface(n))
      infos.push_back(*std::move(found));
  }
  bool remote = false;
  for (const auto& h : hosts) remote |= !IsLoopbackHost(h);
  checks.push_back(CheckInterface(ifnames, infos, ResolveOwnHostname(), remote));
  if (!daemons.empty()) {
    checks.push_back(CheckMtu(daemons));
    checks.push_back(CheckThresholds(daemons));
    checks.push_back(CheckConsistency(daemons));
    checks.push_back(
        CheckJobResolution(ResolveOnly(o.daemons, ifname, o.deadline, o.credentials), ifname));
  }
  checks.push_back(CheckEnvironment(AuditEnvironment(o.env)));
  checks.push_back(CheckMasterAddr(o.env, remote));
  if (!o.training_config.empty()) checks.push_back(CheckTrainingConfig(o.training_config, daemons));
  return MakeReport(std::move(checks));
}

nlohmann::json ReportToJson(const DiagnoseReport& r, const DiagnoseOptions& o) {
  nlohmann::json j;
  j["schema"] = "gloowatch.diagnose.v1";
  j["generated_at"] = absl::FormatTime(absl::RFC3339_sec, absl::Now(), absl::UTCTimeZone());
  j["exit_code"] = r.ExitCode();
  j["summary"] = {{"pass", r.pass},
                  {"warn", r.warn},
                  {"fail", r.fail},
                  {"verdict", r.fail   ? "fail"
                              : r.warn ? "warn"
                                       : "pass"}};
  nlohmann::json daemons = nlohmann::json::array();
  for (const auto& d : o.daemons) daemons.push_back(d.endpoint.ToString());
  j["inputs"] = {{"daemons", daemons},
                 {"targets", o.targets},
                 {"ports", {o.port_low, o.port_high}},
                 {"ifname", o.ifname},
                 {"training_config", o.training_config}};
  j["checks"] = nlohmann::json::array();
  for (const auto& c : r.checks) {
    j["checks"].push_back({{"id", c.id},
                           {"status", SeverityName(c.status)},
                           {"summary", c.summary},
                           {"evidence", c.evidence},
                           {"remediation", c.remediation}});
  }
  return j;
}

std::string RenderReportText(const DiagnoseReport& r, bool color) {
  std::string out;
  auto paint = [&](Severity s) -> std::string {
    std::string name = SeverityName(s);
    if (!color) return name;
    const char* code = s == Severity::kPass ? "32" : s == Severity::kWarn ? "33" : "31";
    return absl::StrCat("\033[", code, "m", name, "\033[0m");
  };
  for (const auto& c : r.checks) {
    absl::StrAppend(&out, paint(c.status), "  ", c.id, ": ", c.summary, "\n");
    if (c.status == Severity::kPass) continue;
    for (const auto& e : c.evidence) absl::StrAppend(&out, "      ", e, "\n");
    if (!c.remediation.empty()) absl::StrAppend(&out, "      fix: ", c.remediation, "\n");
  }
  absl::StrAppend(&out, "\n", r.pass, " pass, ", r.warn, " warn, ", r.fail, " fail\n");
  return out;
}

}  // namespace gloowatch::client
