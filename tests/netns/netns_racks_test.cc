// The two-rack test bed: 6 namespace hosts on two bridges (rack1: h1-h3,
// rack2: h4-h6) joined through a router namespace, a real gloowatchd on each
// with its `group`. Each scenario injects random loss with nft, runs the real
// `gloowatch health --json` inside h1's namespace and asserts the suspect it
// names, that nothing else is blamed, and that the measured loss tracks the
// injected rate. Needs root; skips otherwise. See docs/testing.md.
#include <arpa/inet.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/cpu_hog.h"
#include "tests/support/fault_catalogue.h"
#include "tests/support/netns_cluster.h"

namespace gloowatch::testing {
namespace {

constexpr int kHosts = 6;
// How long the daemons measure before the health check: the 60 s loss window
// need not be full, only hold enough segments (bandwidth probes every second).
constexpr absl::Duration kMeasure = absl::Seconds(30);
// Measured loss over the lossy directions vs the injected rate.
constexpr double kLossTolerance = 0.3;
// Segments the lossy directions must carry for a ratio to be compared: the
// sd of a 2% ratio over 10,000 segments is 0.14 points, a fifth of ±30%.
constexpr double kLossySegments = 10000;

uint32_t IpValue(const std::string& ip) {
  in_addr a{};
  inet_pton(AF_INET, ip.c_str(), &a);
  return ntohl(a.s_addr);
}

class NetnsRacksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = NetnsUnavailableReason();
    if (!reason.empty()) GTEST_SKIP() << "netns harness unavailable: " << reason;
    NetnsClusterOptions options;
    options.hosts = kHosts;
    options.racks = 2;
    // A Gloo timeout well above TCP's retransmission back-off under 5% loss,
    // so the loss shows as loss rather than as broken pairs; latency
    // thresholds far above what 12 processes on 2 cores cost a round trip;
    // a veth claims 10 Gb/s, of which they move 25-40 MB/s with one segment
    // per packet, so the link ratio is judged only against a collapse.
    options.gloo_yaml = absl::StrCat("gloo:\n  interface: eth0\n  timeout: 5s\n", LinkSpeedYaml());
    options.extra_yaml = absl::StrCat(
        "schedule:\n  latency_interval: 500ms\n  skew_interval: 2s\n  bandwidth_interval: 3s\n"
        "  bandwidth_budget: 1\n"
        "probe:\n  bandwidth_bytes: ",
        BandwidthBytes(),
        "\n  bandwidth_message_bytes: 1MiB\n"
        "  backoff_initial: 200ms\n  backoff_max: 1s\n"
        "thresholds:\n  latency: 50ms\n  bandwidth_link_ratio: ",
        BandwidthLinkRatio(), "\n");
    cluster_ = std::make_unique<NetnsCluster>(options);
    absl::Status s = cluster_->Setup();
    ASSERT_TRUE(s.ok()) << s;
    for (int i = 0; i < kHosts; ++i) {
      // One segment per packet (as in netns_tcp_loss): a veth hands a whole
      // 64 KiB GSO packet on, and one drop would lose some 45 segments.
      CommandResult gso = cluster_->Exec(i, {"ip", "link", "set", "eth0", "gso_max_segs", "1"});
      ASSERT_TRUE(gso.ok()) << gso.output;
    }
  }
  // What a link is judged against: by default a veth's claimed 10 Gb/s and
  // only a collapse below it is flagged (see above).
  virtual std::string LinkSpeedYaml() const { return ""; }
  virtual double BandwidthLinkRatio() const { return 0.002; }
  virtual std::string BandwidthBytes() const { return "4MiB"; }

  void TearDown() override {
    if (cluster_ && HasFailure()) std::cerr << cluster_->AllLogs();
    cluster_.reset();
  }

  // Starts every daemon, waits until every link is up, lets them measure,
  // then asks the real CLI (inside h1's namespace: the hosts' addresses
  // exist only in these namespaces).
  // `every_figure`: first wait until every direction has each figure (a
  // fault that only bandwidth shows needs them all), then 10 s more.
  nlohmann::json MeasureAndAsk(bool every_figure = false) {
    cluster_->StartAll();
    absl::Status s = cluster_->WaitAllUp(absl::Seconds(every_figure ? 120 : 60), every_figure);
    EXPECT_TRUE(s.ok()) << s;
    absl::SleepFor(every_figure ? absl::Seconds(10) : kMeasure);
    return Ask();
  }

  nlohmann::json Ask() {
    std::vector<std::string> daemons;
    for (int i = 0; i < kHosts; ++i) daemons.push_back(cluster_->grpc(i));
    CommandResult r = cluster_->Exec(0,
                                     {BinaryPath("client/gloowatch"), "health", "--daemons",
                                      absl::StrJoin(daemons, ","), "--json", "--deadline", "5s"},
                                     absl::Seconds(30));
    EXPECT_FALSE(r.timed_out);
    nlohmann::json j = nlohmann::json::parse(r.output, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(j.is_discarded()) << r.output;
    if (j.is_discarded()) return nlohmann::json::object();
    for (const auto& x : j["suspects"]) std::cout << "suspect: " << x.dump() << "\n";
    return j;
  }

  using Direction = std::function<bool(const std::string&, const std::string&)>;

  // Measures like MeasureAndAsk, then asks again every 5 s, for up to the
  // loss window (60 s) more, until the `lossy` directions carried
  // kLossySegments: a lossy link's bandwidth probes slow down, and how fast
  // its window fills depends on the machine's load.
  nlohmann::json MeasureLossAndAsk(const Direction& lossy) {
    nlohmann::json j = MeasureAndAsk();
    const absl::Time deadline = absl::Now() + absl::Seconds(60);
    while (absl::Now() < deadline) {
      double sent = 0;
      ForEachLossView(j, [&](const std::string& from, const std::string& to, double, double n) {
        if (lossy(from, to)) sent += n;
      });
      if (sent > kLossySegments) break;
      absl::SleepFor(absl::Seconds(5));
      j = Ask();
    }
    return j;
  }

  // The directions `lossy` selects: the loss over all of them, weighted by
  // their segments, must be within kLossTolerance of `injected`; every other
  // direction that carried 1,000 segments stays below 1%.
  void ExpectLoss(const nlohmann::json& j, double injected, const Direction& lossy) {
    double lost = 0, sent = 0;
    int lossy_views = 0;
    ForEachLossView(
        j, [&](const std::string& from, const std::string& to, double ratio, double segments) {
          std::cout << absl::StrFormat("%s -> %s: loss %.4f over %.0f segments%s\n", from, to,
                                       ratio, segments, lossy(from, to) ? " (lossy)" : "");
          if (lossy(from, to)) {
            lost += ratio * segments;
            sent += segments;
            ++lossy_views;
          } else if (segments >= 1000) {
            EXPECT_LT(ratio, 0.01) << from << " -> " << to;
          }
        });
    if (injected == 0) {
      EXPECT_EQ(lossy_views, 0);
      return;
    }
    ASSERT_GT(lossy_views, 0);
    ASSERT_GT(sent, kLossySegments) << "too little traffic on the lossy directions";
    std::cout << absl::StrFormat("lossy directions: %.4f over %.0f segments, injected %.4f\n",
                                 lost / sent, sent, injected);
    EXPECT_NEAR(lost / sent, injected, kLossTolerance * injected);
  }

  // In the rack's bridge, both ways: what a bad NIC or cable does (the
  // host's own sends are lost on the wire; a drop in its output hook would
  // fail the send at once instead).
  absl::Status NicLoss(int host, int percent) const {
    const std::string port = cluster_->switch_port(host);
    return cluster_->SwitchNft(
        host, absl::StrCat("add table bridge gwfault\n",
                           "add chain bridge gwfault forward { type filter hook forward priority "
                           "-10 ; policy accept ; }\n",
                           "add rule bridge gwfault forward iifname \"", port,
                           "\" numgen random mod 100 < ", percent, " drop\n",
                           "add rule bridge gwfault forward oifname \"", port,
                           "\" numgen random mod 100 < ", percent, " drop\n"));
  }

  void NicScenario(int victim, int percent) {
    absl::Status s = NicLoss(victim, percent);
    ASSERT_TRUE(s.ok()) << s;
    const std::string v = cluster_->name(victim);
    const Direction lossy = [&](const std::string& a, const std::string& b) {
      return a == v || b == v;
    };
    const nlohmann::json j = MeasureLossAndAsk(lossy);
    EXPECT_EQ(SuspectsOf(j), std::vector<std::string>{absl::StrCat("node:", v)});
    ExpectLoss(j, percent / 100.0, lossy);
  }

  std::unique_ptr<NetnsCluster> cluster_;
};

// Asks after the first 30 s, then every 30 s for three minutes more: not
// one suspect on a healthy bed. GLOOWATCH_RACKS_HEALTHY_SECONDS=N asks for N
// seconds instead (a longer run by hand, up to an hour).
TEST_F(NetnsRacksTest, HealthyRacksBlameNobody) {
  const char* env = std::getenv("GLOOWATCH_RACKS_HEALTHY_SECONDS");
  const absl::Duration longer = absl::Seconds(env ? std::min(3600, std::atoi(env)) : 180);
  nlohmann::json j = MeasureAndAsk();
  const absl::Time until = absl::Now() + longer;
  int asked = 1;
  while (true) {
    EXPECT_EQ(SuspectsOf(j), std::vector<std::string>{}) << "ask " << asked;
    EXPECT_EQ(j.value("verdict", ""), "healthy") << "ask " << asked;
    ExpectLoss(j, 0, [](const std::string&, const std::string&) { return false; });
    if (absl::Now() + absl::Seconds(30) > until) break;
    absl::SleepFor(absl::Seconds(30));
    j = Ask();
    ++asked;
  }
  std::cout << "asked " << asked << " times, no suspect expected\n";
}

TEST_F(NetnsRacksTest, FivePercentLossOnOneNicNamesThatNode) { NicScenario(1, 5); }  // h2

TEST_F(NetnsRacksTest, TwoPercentLossOnOneNicNamesThatNode) { NicScenario(4, 2); }  // h5

// 5% each way on the router's port towards rack1: every link between the
// racks loses, none inside them. With two racks the uplink of either (or
// the path between them) explains it: the suspect names both.
TEST_F(NetnsRacksTest, LossOnOneRackUplinkNamesTheUplink) {
  const std::string port = cluster_->router_port(0);
  absl::Status s = cluster_->RouterNft(absl::StrCat(
      "add table inet gwfault\n",
      "add chain inet gwfault forward { type filter hook forward priority -10 ; policy accept ; "
      "}\n",
      "add rule inet gwfault forward iifname \"", port, "\" numgen random mod 100 < 5 drop\n",
      "add rule inet gwfault forward oifname \"", port, "\" numgen random mod 100 < 5 drop\n"));
  ASSERT_TRUE(s.ok()) << s;
  const Direction between_racks = [](const std::string& a, const std::string& b) {
    return (a < "h4") != (b < "h4");  // h1-h3 are rack1
  };
  const nlohmann::json j = MeasureLossAndAsk(between_racks);
  ASSERT_EQ(SuspectsOf(j), std::vector<std::string>{"group_uplink:rack1 <-> rack2"});
  EXPECT_EQ(j["suspects"][0]["groups"], nlohmann::json({"rack1", "rack2"}));
  // All 9 links between the racks are bad; a link whose window holds too
  // few segments yet (a lossy link's bandwidth probes slow down) is no
  // evidence either way, so at least most of them, and no fine one.
  EXPECT_GE(j["suspects"][0]["bad_links"].get<int>(), 5) << j["suspects"][0];
  EXPECT_LE(j["suspects"][0]["bad_links"].get<int>(), 9) << j["suspects"][0];
  EXPECT_EQ(j["suspects"][0]["fine_links"], 0) << j["suspects"][0];
  ExpectLoss(j, 0.05, between_racks);
}

// h3's host is saturated: its daemon and transport share a CPU quota of 5%
// of one core (a cgroup: a container's limit, systemd's CPUQuota=) with
// three busy loops. Probes to and from it are answered late, so its links look
// slow; the one to blame is the host, not the network.
TEST_F(NetnsRacksTest, CpuHogOnOneHostNamesTheOverloadedHost) {
  constexpr int kVictim = 2;  // h3
  cluster_->StartAll();
  absl::Status s = cluster_->WaitAllUp(absl::Seconds(60), /*measured=*/false);
  ASSERT_TRUE(s.ok()) << s;
  absl::StatusOr<std::unique_ptr<CpuHog>> hog =
      CpuHog::Start(cluster_->daemon(kVictim)->pid(), /*quota_percent=*/5, /*loops=*/3);
  if (!hog.ok()) GTEST_SKIP() << "no CPU cgroup to confine the host in: " << hog.status();
  absl::SleepFor(kMeasure);
  const nlohmann::json j = Ask();
  EXPECT_EQ(SuspectsOf(j), std::vector<std::string>{"overloaded_host:h3"});
  for (const auto& n : j["nodes"]) {
    const nlohmann::json& delay = n["host_load"]["scheduling_delay_seconds"];
    std::cout << n["name"] << ": scheduling delay " << delay << "\n";
    ASSERT_TRUE(delay.is_number()) << n;
    if (n["name"] == "h3") {
      EXPECT_GE(delay.get<double>(), 0.01);  // thresholds.scheduling_delay's default
    } else {
      EXPECT_LT(delay.get<double>(), 0.01) << n["name"];
    }
  }
}

// What h3 receives from h4 (another rack) loses 5%: that link alone.
TEST_F(NetnsRacksTest, LossOnOneLinkNamesThatLink) {
  constexpr int kTo = 2, kFrom = 3;  // h4 -> h3
  absl::Status s =
      cluster_->Nft(kTo, absl::StrCat("add table inet gwfault\n"
                                      "add chain inet gwfault input { type filter hook input "
                                      "priority -10 ; policy accept ; }\n"
                                      "add rule inet gwfault input ip saddr ",
                                      cluster_->ip(kFrom), " numgen random mod 100 < 5 drop\n"));
  ASSERT_TRUE(s.ok()) << s;
  const Direction h4_to_h3 = [](const std::string& a, const std::string& b) {
    return a == "h4" && b == "h3";
  };
  const nlohmann::json j = MeasureLossAndAsk(h4_to_h3);
  EXPECT_EQ(SuspectsOf(j), std::vector<std::string>{"link:h3 <-> h4"});
  ExpectLoss(j, 0.05, h4_to_h3);
}

// h6's host firewall lets in its gRPC port and what it connected itself,
// and rejects the rest: the ephemeral ports its Gloo pairs listen on. Pairs
// it opens work; pairs others open to it are refused although its gRPC
// answers. The node is to blame, and the evidence says why.
TEST_F(NetnsRacksTest, FirewallOnOneHostsEphemeralPortsNamesThatNode) {
  // Of a pair, Gloo's lower address listens and the higher one connects
  // (gloo/transport/tcp/pair.cc): the lowest host's listeners serve all its
  // pairs, so a firewall there breaks every link of that host.
  int victim = 0;
  for (int i = 1; i < kHosts; ++i) {
    if (IpValue(cluster_->ip(i)) < IpValue(cluster_->ip(victim))) victim = i;
  }
  const std::string v = cluster_->name(victim);
  absl::Status s =
      cluster_->Nft(victim,
                    "add table inet gwfault\n"
                    "add chain inet gwfault input { type filter hook input priority -10 ; policy "
                    "accept ; }\n"
                    "add rule inet gwfault input ct state established,related accept\n"
                    "add rule inet gwfault input tcp dport 7601 accept\n"
                    "add rule inet gwfault input tcp dport 1024-65535 reject with tcp reset\n");
  ASSERT_TRUE(s.ok()) << s;
  cluster_->StartAll();
  absl::SleepFor(absl::Seconds(20));
  const nlohmann::json j = Ask();
  ASSERT_EQ(SuspectsOf(j), std::vector<std::string>{absl::StrCat("node:", v)});
  EXPECT_GE(j["suspects"][0]["bad_links"].get<int>(), 4) << j["suspects"][0];
  EXPECT_EQ(j["suspects"][0]["fine_links"], 0) << j["suspects"][0];
  // What the peers saw: refused (the reject), not a timeout or reset.
  EXPECT_THAT(j["suspects"][0]["evidence"].dump(), ::testing::HasSubstr("(last: refused)"));
}

// A declared link speed of 400 Mb/s (50 MB/s), of which the unshaped veths
// move 25-40 MB/s with one segment per packet: flagged below 30% (15 MB/s).
class NetnsRacksShapedTest : public NetnsRacksTest {
 protected:
  std::string LinkSpeedYaml() const override { return "  link_speed: 400Mbit\n"; }
  double BandwidthLinkRatio() const override { return 0.3; }
  // Transfers that cross the capped uplink quickly, so every link has its
  // bandwidth figure within a minute.
  std::string BandwidthBytes() const override { return "1MiB"; }
};

// rack1's uplink capped at 40 Mb/s (5 MB/s, 10% of the declared speed) both
// ways: every link between the racks is slow (and loses what overflows the
// tbf queue), none inside them. The suspect is the uplink, as with loss.
TEST_F(NetnsRacksShapedTest, TbfCapOnOneRackUplinkNamesTheUplink) {
  absl::Status s = cluster_->ShapeUplink(/*rack=*/0, "40mbit");
  ASSERT_TRUE(s.ok()) << s;
  const nlohmann::json j = MeasureAndAsk(/*every_figure=*/true);
  ASSERT_EQ(SuspectsOf(j), std::vector<std::string>{"group_uplink:rack1 <-> rack2"});
  EXPECT_EQ(j["suspects"][0]["bad_links"], 9) << j["suspects"][0];
  EXPECT_EQ(j["suspects"][0]["fine_links"], 0) << j["suspects"][0];
  // Between the racks the measured bandwidth stays near the cap (a 1 MiB
  // transfer may read up to 1.33x of it: tbf lets its 256 KB burst through
  // at once), inside them above the threshold.
  int across = 0, inside = 0;
  for (const auto& l : j["links"]) {
    const bool crosses = (l["a"].get<std::string>() < "h4") != (l["b"].get<std::string>() < "h4");
    for (const char* key : {"a_to_b", "b_to_a"}) {
      const auto& v = l[key];
      if (v.is_null() || v["tx_bytes_per_second"].is_null()) continue;
      const double rate = v["tx_bytes_per_second"].get<double>();
      std::cout << l["a"] << " " << key << " " << l["b"] << ": " << rate / 1e6 << " MB/s\n";
      if (crosses) {
        EXPECT_LT(rate, 5e6 * 1.4) << l;
        ++across;
      } else {
        EXPECT_GT(rate, 50e6 * 0.3) << l;
        ++inside;
      }
    }
  }
  EXPECT_GT(across, 0);
  EXPECT_GT(inside, 0);
}

}  // namespace
}  // namespace gloowatch::testing
