#include "daemon/system/gloo_endpoint.h"

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gloowatch {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

// A small machine: loopback, a fast NIC, a down NIC, an address-less IB
// port and an IPv6-only interface.
class FakeSystem : public SystemView {
 public:
  FakeSystem() {
    ifaces = {
        {"lo", true, true, {"127.0.0.1", "::1"}},
        {"eth0", true, false, {"fe80::1%eth0", "10.0.0.5"}},
        {"eth1", false, false, {"10.1.0.5"}},
        {"ib0", true, false, {}},
        {"v6only", true, false, {"fe80::2%v6only", "fd00::5"}},
    };
    sysfs = {{"lo/mtu", "65536"},  {"eth0/speed", "25000"}, {"eth0/mtu", "9000"},
             {"eth1/speed", "-1"}, {"eth1/mtu", "1500"},    {"v6only/mtu", "1280"}};
    hosts = {{"node-1", {"10.0.0.5"}}};
  }

  absl::StatusOr<std::vector<InterfaceInfo>> ListInterfaces() const override {
    if (!list_error.ok()) return list_error;
    return ifaces;
  }
  std::optional<std::string> ReadSysfs(const std::string& iface,
                                       const std::string& file) const override {
    auto it = sysfs.find(absl::StrCat(iface, "/", file));
    if (it == sysfs.end()) return std::nullopt;
    return it->second;
  }
  std::optional<std::string> ReadFile(const std::string& path) const override {
    auto it = files.find(path);
    if (it == files.end()) return std::nullopt;
    return it->second;
  }
  absl::StatusOr<std::string> Hostname() const override { return hostname; }
  absl::StatusOr<std::vector<std::string>> ResolveHost(const std::string& name) const override {
    auto it = hosts.find(name);
    if (it == hosts.end()) {
      return absl::UnavailableError(
          absl::StrCat("getaddrinfo ", name, ": Name or service not known"));
    }
    return it->second;
  }

  std::vector<InterfaceInfo> ifaces;
  std::map<std::string, std::string> sysfs;
  std::map<std::string, std::string> files;
  std::string hostname = "node-1";
  std::map<std::string, std::vector<std::string>> hosts;
  absl::Status list_error;
};

EndpointRequest Remote() {
  EndpointRequest r;
  r.peers_are_remote = true;
  return r;
}

// --- gloo.address -------------------------------------------------------------

TEST(ConfigAddressTest, AssignedAddressPicksItsInterface) {
  FakeSystem sys;
  EndpointRequest req = Remote();
  req.config_address = "10.0.0.5";
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(req, sys);
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->source, "config:address");
  EXPECT_EQ(ep->interface, "eth0");
  EXPECT_EQ(ep->address, "10.0.0.5");
  EXPECT_FALSE(ep->is_loopback);
  ASSERT_TRUE(ep->link_speed_bytes_per_second.has_value());
  EXPECT_DOUBLE_EQ(*ep->link_speed_bytes_per_second, 25000 * 1e6 / 8);
  EXPECT_EQ(ep->link_speed_note, "");
  EXPECT_EQ(ep->mtu, 9000u);
  EXPECT_EQ(ep->warning, "");
}

TEST(ConfigAddressTest, UnassignedAddressIsAnErrorListingWhatWeHave) {
  FakeSystem sys;
  EndpointRequest req = Remote();
  req.config_address = "10.1.2.3";
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(req, sys);
  ASSERT_FALSE(ep.ok());
  EXPECT_EQ(ep.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ep.status().message(),
            "gloo.address 10.1.2.3 is not assigned to any local interface (have: lo 127.0.0.1 "
            "::1, eth0 fe80::1%eth0 10.0.0.5, eth1 10.1.0.5, v6only fe80::2%v6only fd00::5)");
}

TEST(ConfigAddressTest, NonNumericIsAnError) {
  FakeSystem sys;
  EndpointRequest req;
  req.config_address = "node-1";
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(req, sys);
  ASSERT_FALSE(ep.ok());
  EXPECT_EQ(ep.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ep.status().message(), HasSubstr("not a numeric IP address"));
}

TEST(ConfigAddressTest, Ipv6AddressMatchesInAnySpelling) {
  FakeSystem sys;
  EndpointRequest req;
  req.config_address = "fd00:0:0::5";
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(req, sys);
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->interface, "v6only");
  EXPECT_EQ(ep->address, "fd00:0:0::5");
  EXPECT_EQ(ep->mtu, 1280u);
}

TEST(ConfigAddressTest, WholeLoopbackNetBelongsToLo) {
  FakeSystem sys;
  EndpointRequest req = Remote();
  req.config_address = "127.0.1.1";
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(req, sys);
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->interface, "lo");
  EXPECT_TRUE(ep->is_loopback);
  EXPECT_EQ(ep->warning,
            "Gloo would bind to loopback 127.0.1.1 (gloo.address is set to it) while peers are "
            "remote: set gloo.address to a routable address, or gloo.interface");
}

TEST(ConfigAddressTest, AddressOnDownInterfaceIsAnError) {
  FakeSystem sys;
  EndpointRequest req;
  req.config_address = "10.1.0.5";
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(req, sys);
  ASSERT_FALSE(ep.ok());
  EXPECT_EQ(ep.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(ep.status().message(), HasSubstr("interface eth1 is down"));
}

TEST(ConfigAddressTest, WinsOverInterfaceAndEnvironmentAndSaysSo) {
  FakeSystem sys;
  EndpointRequest req;
  req.config_address = "10.0.0.5";
  req.config_interface = "lo";
  req.env_gloo_socket_ifname = "lo";
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(req, sys);
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->source, "config:address");
  EXPECT_EQ(ep->interface, "eth0");
  EXPECT_THAT(ep->warning, HasSubstr("GLOO_SOCKET_IFNAME='lo' is set but gloo.address takes"));
}

// --- gloo.interface -----------------------------------------------------------

TEST(ConfigInterfaceTest, PrefersIpv4Address) {
  FakeSystem sys;
  EndpointRequest req = Remote();
  req.config_interface = "eth0";
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(req, sys);
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->source, "config:interface");
  EXPECT_EQ(ep->interface, "eth0");
  EXPECT_EQ(ep->address, "10.0.0.5");
  EXPECT_EQ(ep->warning, "");
}

TEST(ConfigInterfaceTest, Ipv6OnlyInterfaceUsesItsFirstIpv6Address) {
  FakeSystem sys;
  EndpointRequest req;
  req.config_interface = "v6only";
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(req, sys);
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->address, "fe80::2%v6only");
}

TEST(ConfigInterfaceTest, WinsOverEnvironment) {
  FakeSystem sys;
  EndpointRequest req;
  req.config_interface = "eth0";
  req.env_gloo_socket_ifname = "^lo";  // broken, but not ours to use
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(req, sys);
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->source, "config:interface");
  EXPECT_THAT(ep->warning, HasSubstr("gloo.interface takes precedence"));
}

TEST(ConfigInterfaceTest, MissingInterfaceListsAvailableOnes) {
  FakeSystem sys;
  EndpointRequest req;
  req.config_interface = "eth9";
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(req, sys);
  ASSERT_FALSE(ep.ok());
  EXPECT_EQ(ep.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ep.status().message(),
            "interface eth9 (from gloo.interface) does not exist (have: lo, eth0, eth1, ib0, "
            "v6only)");
}

TEST(ConfigInterfaceTest, DownInterfaceIsAnError) {
  FakeSystem sys;
  EndpointRequest req;
  req.config_interface = "eth1";
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(req, sys);
  ASSERT_FALSE(ep.ok());
  EXPECT_EQ(ep.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ep.status().message(), "interface eth1 is down (from gloo.interface)");
}

TEST(ConfigInterfaceTest, InterfaceWithoutAddressIsAnError) {
  FakeSystem sys;
  EndpointRequest req;
  req.config_interface = "ib0";
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(req, sys);
  ASSERT_FALSE(ep.ok());
  EXPECT_EQ(ep.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(ep.status().message(), HasSubstr("interface ib0 (from gloo.interface) has no IP"));
}

TEST(ConfigInterfaceTest, LoopbackWithRemotePeersWarns) {
  FakeSystem sys;
  EndpointRequest req = Remote();
  req.config_interface = "lo";
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(req, sys);
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_TRUE(ep->is_loopback);
  EXPECT_EQ(ep->warning,
            "Gloo would bind to loopback 127.0.0.1 (gloo.interface is lo) while peers are "
            "remote: set gloo.interface to a routable interface");
}

// --- GLOO_SOCKET_IFNAME -------------------------------------------------------

TEST(EnvTest, SingleInterface) {
  FakeSystem sys;
  EndpointRequest req = Remote();
  req.env_gloo_socket_ifname = "eth0";
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(req, sys);
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->source, "env:GLOO_SOCKET_IFNAME");
  EXPECT_EQ(ep->interface, "eth0");
  EXPECT_EQ(ep->address, "10.0.0.5");
  EXPECT_EQ(ep->warning, "");
}

TEST(EnvTest, ListTakesFirstAndNotesTheRest) {
  FakeSystem sys;
  EndpointRequest req;
  req.env_gloo_socket_ifname = "eth0,v6only,lo";
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(req, sys);
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->interface, "eth0");
  EXPECT_THAT(ep->warning, HasSubstr("GLOO_SOCKET_IFNAME lists eth0,v6only,lo"));
  EXPECT_THAT(ep->warning, HasSubstr("not probed: v6only, lo"));
  EXPECT_THAT(ep->socket_ifnames, ::testing::ElementsAre("eth0", "v6only", "lo"));
}

TEST(EnvTest, NcclExclusionSyntaxIsAnError) {
  FakeSystem sys;
  EndpointRequest req;
  req.env_gloo_socket_ifname = "^lo";
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(req, sys);
  ASSERT_FALSE(ep.ok());
  EXPECT_EQ(ep.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ep.status().message(),
            "GLOO_SOCKET_IFNAME='^lo': '^' exclusion is NCCL syntax; Gloo/PyTorch read a "
            "comma-separated list of interface names and fail with 'Unable to find address "
            "for: ^lo'");
}

TEST(EnvTest, NcclExclusionListNamesTheFirstToken) {
  FakeSystem sys;
  EndpointRequest req;
  req.env_gloo_socket_ifname = "^docker0,lo";
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(req, sys);
  ASSERT_FALSE(ep.ok());
  EXPECT_THAT(ep.status().message(), HasSubstr("'Unable to find address for: ^docker0'"));
}

TEST(EnvTest, MissingInterfaceSaysWhatPyTorchWouldSay) {
  FakeSystem sys;
  EndpointRequest req;
  req.env_gloo_socket_ifname = "eth9";
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(req, sys);
  ASSERT_FALSE(ep.ok());
  EXPECT_EQ(ep.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(ep.status().message(), HasSubstr("interface eth9 (from GLOO_SOCKET_IFNAME)"));
  EXPECT_THAT(ep.status().message(), HasSubstr("have: lo, eth0"));
  EXPECT_THAT(ep.status().message(), HasSubstr("'Unable to find address for: eth9'"));
}

TEST(EnvTest, DownInterfaceIsAnError) {
  FakeSystem sys;
  EndpointRequest req;
  req.env_gloo_socket_ifname = "eth1";
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(req, sys);
  ASSERT_FALSE(ep.ok());
  EXPECT_EQ(ep.status().message(), "interface eth1 is down (from GLOO_SOCKET_IFNAME)");
}

TEST(EnvTest, LoopbackWithRemotePeersWarns) {
  FakeSystem sys;
  EndpointRequest req = Remote();
  req.env_gloo_socket_ifname = "lo";
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(req, sys);
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->warning,
            "Gloo would bind to loopback 127.0.0.1 (GLOO_SOCKET_IFNAME=lo) while peers are "
            "remote: set GLOO_SOCKET_IFNAME to a routable interface");
}

TEST(EnvTest, OneCharacterValueIsIgnoredLikePyTorchDoes) {
  FakeSystem sys;
  EndpointRequest req;
  req.env_gloo_socket_ifname = "e";
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(req, sys);
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->source, "hostname");
  EXPECT_EQ(ep->interface, "eth0");
  EXPECT_THAT(ep->warning, HasSubstr("GLOO_SOCKET_IFNAME='e' is ignored"));
}

TEST(EnvTest, EmptyValueIsLikeUnset) {
  FakeSystem sys;
  EndpointRequest req;
  req.env_gloo_socket_ifname = "";
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(req, sys);
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->source, "hostname");
  EXPECT_EQ(ep->warning, "");
}

// --- host name ----------------------------------------------------------------

TEST(HostnameTest, ResolvesToLocalAddress) {
  FakeSystem sys;
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(Remote(), sys);
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->source, "hostname");
  EXPECT_EQ(ep->interface, "eth0");
  EXPECT_EQ(ep->address, "10.0.0.5");
  EXPECT_FALSE(ep->is_loopback);
  EXPECT_EQ(ep->warning, "");
}

TEST(HostnameTest, DebianStyle127011WithRemotePeersWarnsLoudly) {
  FakeSystem sys;
  sys.hosts["node-1"] = {"127.0.1.1"};
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(Remote(), sys);
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->address, "127.0.1.1");
  EXPECT_EQ(ep->interface, "lo");
  EXPECT_TRUE(ep->is_loopback);
  EXPECT_EQ(ep->warning,
            "Gloo would bind to loopback 127.0.1.1 (host name resolves to it) while peers are "
            "remote: set gloo.interface / GLOO_SOCKET_IFNAME");
  EXPECT_FALSE(ep->link_speed_bytes_per_second.has_value());
  EXPECT_EQ(ep->link_speed_note, "loopback has no link speed");
  EXPECT_EQ(ep->mtu, 65536u);
}

TEST(HostnameTest, LoopbackWithLocalPeersIsFine) {
  FakeSystem sys;
  sys.hosts["node-1"] = {"127.0.1.1"};
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(EndpointRequest{}, sys);
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_TRUE(ep->is_loopback);
  EXPECT_EQ(ep->warning, "");
}

TEST(HostnameTest, FirstBindableAddressInResolverOrderWins) {
  // Like Gloo's lookupAddrForHostname: walk getaddrinfo's order, skip what
  // bind(2) would refuse, take the first that works, whatever its family.
  FakeSystem sys;
  sys.hosts["node-1"] = {"10.9.9.9", "fd00::5", "10.0.0.5"};
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(EndpointRequest{}, sys);
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->address, "fd00::5");
  EXPECT_EQ(ep->interface, "v6only");
}

TEST(HostnameTest, NoLocalAddressFallsBackToLoopbackLikePyTorch) {
  FakeSystem sys;
  sys.hosts["node-1"] = {"10.9.9.9"};
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(Remote(), sys);
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->source, "hostname");
  EXPECT_EQ(ep->address, "127.0.0.1");
  EXPECT_EQ(ep->interface, "lo");
  EXPECT_TRUE(ep->is_loopback);
  EXPECT_THAT(ep->warning,
              HasSubstr("Gloo would bind to loopback 127.0.0.1 (host name 'node-1' has no local "
                        "address) while peers are remote: set gloo.interface / "
                        "GLOO_SOCKET_IFNAME"));
  EXPECT_THAT(ep->warning, HasSubstr("it resolves to 10.9.9.9, none of them local"));
}

TEST(HostnameTest, UnresolvableFallsBackToLoopback) {
  FakeSystem sys;
  sys.hostname = "ghost";
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(EndpointRequest{}, sys);
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->address, "127.0.0.1");
  EXPECT_THAT(ep->warning, HasSubstr("Name or service not known"));
  EXPECT_THAT(ep->warning, HasSubstr("falling back to loopback 127.0.0.1"));
}

TEST(HostnameTest, AddressOnDownInterfaceIsAnError) {
  FakeSystem sys;
  sys.hosts["node-1"] = {"10.1.0.5"};
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(EndpointRequest{}, sys);
  ASSERT_FALSE(ep.ok());
  EXPECT_THAT(ep.status().message(), HasSubstr("interface eth1 is down"));
  EXPECT_THAT(ep.status().message(), HasSubstr("host name 'node-1'"));
}

TEST(ResolveTest, ListInterfacesErrorPropagates) {
  FakeSystem sys;
  sys.list_error = absl::InternalError("getifaddrs: out of memory");
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(EndpointRequest{}, sys);
  ASSERT_FALSE(ep.ok());
  EXPECT_EQ(ep.status().code(), absl::StatusCode::kInternal);
}

// --- link facts ---------------------------------------------------------------

TEST(LinkSpeedTest, OverrideWins) {
  FakeSystem sys;
  EndpointRequest req;
  req.config_interface = "eth0";
  req.link_speed_override = 1.25e9;
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(req, sys);
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->link_speed_bytes_per_second, 1.25e9);
  EXPECT_EQ(ep->link_speed_note, "from config");
}

TEST(LinkSpeedTest, OverrideWinsEvenOnLoopback) {
  FakeSystem sys;
  EndpointRequest req;
  req.config_interface = "lo";
  req.link_speed_override = 5e9;
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(req, sys);
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->link_speed_bytes_per_second, 5e9);
  EXPECT_EQ(ep->link_speed_note, "from config");
}

TEST(LinkSpeedTest, MinusOneIsUnknown) {
  FakeSystem sys;
  sys.ifaces[2].up = true;  // eth1, speed -1
  EndpointRequest req;
  req.config_interface = "eth1";
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(req, sys);
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_FALSE(ep->link_speed_bytes_per_second.has_value());
  EXPECT_EQ(ep->link_speed_note, "speed unknown (sysfs reports -1)");
  EXPECT_EQ(ep->mtu, 1500u);
}

TEST(LinkSpeedTest, MissingSpeedAndMtuAreUnknown) {
  FakeSystem sys;
  sys.sysfs.erase("v6only/mtu");
  EndpointRequest req;
  req.config_interface = "v6only";
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(req, sys);
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_FALSE(ep->link_speed_bytes_per_second.has_value());
  EXPECT_EQ(ep->link_speed_note, "speed unknown (sysfs speed unreadable)");
  EXPECT_EQ(ep->mtu, 0u);
}

TEST(LinkSpeedTest, GarbageIsUnknown) {
  FakeSystem sys;
  sys.sysfs["eth0/speed"] = "fast";
  EndpointRequest req;
  req.config_interface = "eth0";
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(req, sys);
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_FALSE(ep->link_speed_bytes_per_second.has_value());
  EXPECT_EQ(ep->link_speed_note, "speed unknown (sysfs reports 'fast')");
}

TEST(LinkSpeedTest, MbitPerSecondToBytesPerSecond) {
  FakeSystem sys;
  sys.sysfs["eth0/speed"] = "1000";
  EndpointRequest req;
  req.config_interface = "eth0";
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(req, sys);
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->link_speed_bytes_per_second, 125e6);
}

// --- ephemeral ports ----------------------------------------------------------

constexpr char kPortRange[] = "/proc/sys/net/ipv4/ip_local_port_range";

TEST(EphemeralPortRangeTest, Parses) {
  FakeSystem sys;
  sys.files[kPortRange] = "32768\t60999\n";
  absl::StatusOr<std::pair<uint32_t, uint32_t>> r = ReadEphemeralPortRange(sys);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->first, 32768u);
  EXPECT_EQ(r->second, 60999u);
}

TEST(EphemeralPortRangeTest, MissingFile) {
  FakeSystem sys;
  absl::StatusOr<std::pair<uint32_t, uint32_t>> r = ReadEphemeralPortRange(sys);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
}

TEST(EphemeralPortRangeTest, Malformed) {
  for (const char* text : {"", "32768", "a b", "60999 32768", "1024 70000", "1 2 3"}) {
    FakeSystem sys;
    sys.files[kPortRange] = text;
    absl::StatusOr<std::pair<uint32_t, uint32_t>> r = ReadEphemeralPortRange(sys);
    EXPECT_FALSE(r.ok()) << "'" << text << "'";
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << "'" << text << "'";
  }
}

// --- the real machine ---------------------------------------------------------

TEST(RealSystemTest, LoopbackInterface) {
  EndpointRequest req;
  req.config_interface = "lo";
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(req, RealSystem());
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->interface, "lo");
  EXPECT_TRUE(ep->is_loopback);
  EXPECT_GT(ep->mtu, 0u);
  EXPECT_FALSE(ep->link_speed_bytes_per_second.has_value());
  EXPECT_EQ(ep->link_speed_note, "loopback has no link speed");
}

TEST(RealSystemTest, LoopbackAddressMapsToLo) {
  EndpointRequest req;
  req.config_address = "127.0.0.1";
  absl::StatusOr<GlooEndpoint> ep = ResolveGlooEndpoint(req, RealSystem());
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->interface, "lo");
  EXPECT_EQ(ep->address, "127.0.0.1");
  EXPECT_TRUE(ep->is_loopback);
}

TEST(RealSystemTest, BasicFacts) {
  const SystemView& sys = RealSystem();
  absl::StatusOr<std::vector<InterfaceInfo>> ifaces = sys.ListInterfaces();
  ASSERT_TRUE(ifaces.ok()) << ifaces.status();
  bool have_lo = false;
  for (const InterfaceInfo& i : *ifaces) have_lo |= (i.name == "lo" && i.loopback);
  EXPECT_TRUE(have_lo);
  absl::StatusOr<std::string> host = sys.Hostname();
  ASSERT_TRUE(host.ok()) << host.status();
  EXPECT_THAT(*host, Not(IsEmpty()));
  EXPECT_FALSE(sys.ReadSysfs("../../etc", "passwd").has_value());
  EXPECT_FALSE(sys.ReadSysfs("lo", "../../../etc/passwd").has_value());
  absl::StatusOr<std::pair<uint32_t, uint32_t>> r = ReadEphemeralPortRange(sys);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_LE(r->first, r->second);
}

}  // namespace
}  // namespace gloowatch
