#include "daemon/api/report_admission.h"

#include "common/simulated_clock.h"
#include "gtest/gtest.h"

namespace gloowatch {
namespace {

// This host: loopback plus 10.0.0.5, fd00::5 and a link-local address.
class HostAddresses : public SystemView {
 public:
  absl::StatusOr<std::vector<InterfaceInfo>> ListInterfaces() const override {
    ++lists;
    return interfaces;
  }
  std::optional<std::string> ReadSysfs(const std::string&, const std::string&) const override {
    return std::nullopt;
  }
  std::optional<std::string> ReadFile(const std::string&) const override { return std::nullopt; }
  absl::StatusOr<std::string> Hostname() const override { return std::string("node-1"); }
  absl::StatusOr<std::vector<std::string>> ResolveHost(const std::string&) const override {
    return std::vector<std::string>{};
  }
  std::vector<InterfaceInfo> interfaces = {
      {"lo", true, true, {"127.0.0.1", "::1"}},
      {"eth0", true, false, {"10.0.0.5", "fe80::1%eth0", "FD00::5"}},
  };
  mutable int lists = 0;
};

TEST(ReportAdmission, PeerAddressParsesGrpcPeerStrings) {
  EXPECT_EQ(ReportAdmission::PeerAddress("ipv4:10.0.0.2:5555"), "10.0.0.2");
  EXPECT_EQ(ReportAdmission::PeerAddress("ipv6:[::1]:5555"), "::1");
  EXPECT_EQ(ReportAdmission::PeerAddress("ipv6:%5B::1%5D:5555"), "::1");
  EXPECT_EQ(ReportAdmission::PeerAddress("ipv6:[::ffff:127.0.0.1]:1"), "127.0.0.1");
  EXPECT_EQ(ReportAdmission::PeerAddress("ipv6:[fe80::1%25eth0]:1"), "fe80::1");
  EXPECT_EQ(ReportAdmission::PeerAddress("unix:/run/x.sock"), "unix");
  EXPECT_EQ(ReportAdmission::PeerAddress("ipv4:nonsense:1"), std::nullopt);
  EXPECT_EQ(ReportAdmission::PeerAddress("ipv6:::1:5"), std::nullopt);
  EXPECT_EQ(ReportAdmission::PeerAddress(""), std::nullopt);
}

TEST(ReportAdmission, WithoutTlsOnlyThisHost) {
  HostAddresses host;
  SimulatedClock clock;
  ReportAdmission admission(&host, &clock, /*mutual_tls=*/false);
  for (const char* peer :
       {"ipv4:127.0.0.1:1", "ipv4:127.8.9.1:1", "ipv6:[::1]:1", "ipv6:[::ffff:127.0.0.1]:1",
        "ipv4:10.0.0.5:1", "ipv6:[fd00::5]:1", "ipv6:[::ffff:10.0.0.5]:1", "unix:/x"}) {
    absl::StatusOr<std::string> client = admission.Admit(peer);
    ASSERT_TRUE(client.ok()) << peer << ": " << client.status();
    EXPECT_EQ(*client, "") << peer;  // this host: the whole cap
  }
  for (const char* peer : {"ipv4:10.0.0.6:1", "ipv6:[fd00::6]:1", "ipv4:1.2.3.4:1", "weird"}) {
    absl::Status s = admission.Admit(peer).status();
    EXPECT_TRUE(absl::IsPermissionDenied(s)) << peer << ": " << s;
    EXPECT_NE(s.message().find(peer), absl::string_view::npos) << s;
  }
}

TEST(ReportAdmission, WithMutualTlsEveryCertifiedCaller) {
  HostAddresses host;
  SimulatedClock clock;
  ReportAdmission admission(&host, &clock, /*mutual_tls=*/true);
  // A remote caller is named, for its share of the cap; this host is not.
  EXPECT_EQ(admission.Admit("ipv4:1.2.3.4:1").value_or("?"), "1.2.3.4");
  EXPECT_EQ(admission.Admit("ipv6:[fd00::9]:1").value_or("?"), "fd00::9");
  EXPECT_EQ(admission.Admit("ipv4:127.0.0.1:1").value_or("?"), "");
}

TEST(ReportAdmission, AddressesAreReReadAfterTheRefresh) {
  HostAddresses host;
  SimulatedClock clock;
  ReportAdmission admission(&host, &clock, false);
  EXPECT_FALSE(admission.Admit("ipv4:10.0.0.7:1").ok());
  host.interfaces[1].addresses.push_back("10.0.0.7");
  EXPECT_FALSE(admission.Admit("ipv4:10.0.0.7:1").ok());  // cached
  EXPECT_EQ(host.lists, 1);
  clock.Advance(ReportAdmission::kRefresh);
  EXPECT_TRUE(admission.Admit("ipv4:10.0.0.7:1").ok());
  EXPECT_EQ(host.lists, 2);
}

}  // namespace
}  // namespace gloowatch
