// `gloowatch preflight` across four simulated hosts in network namespaces
// (root only): a healthy mesh is GO with no finding and every pair proven
// both ways; an nft drop between two hosts makes exactly their pair fail,
// both ways, with a timeout at the job's timeout, while the other pairs and
// the store check pass; a host firewall that drops inbound connections
// (except the daemon's ports and 29500-29600) names that host, not the peer
// whose pair Gloo made it accept; egress SYNs of one host dropped at the
// switch name that host as reaching nobody.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/netns_cluster.h"

namespace gloowatch::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using json = nlohmann::json;

class NetnsPreflightTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = NetnsUnavailableReason();
    if (!reason.empty()) GTEST_SKIP() << "netns harness unavailable: " << reason;
    NetnsClusterOptions options;
    options.hosts = 4;
    cluster_ = std::make_unique<NetnsCluster>(options);
    absl::Status s = cluster_->Setup();
    ASSERT_TRUE(s.ok()) << s;
    cluster_->StartAll();
    for (int i = 0; i < cluster_->size(); ++i) {
      ASSERT_TRUE(WaitFor([&] { return cluster_->Status(i).ok(); }, absl::Seconds(30)))
          << cluster_->name(i) << " does not answer";
    }
  }
  void TearDown() override {
    if (cluster_ && HasFailure()) std::cerr << cluster_->AllLogs();
    cluster_.reset();
  }
  // The CLI in host 0's namespace; the job's store is host 0's daemon port
  // (something listens there, reachable from every host).
  CommandResult Preflight(const std::string& timeout) {
    std::vector<std::string> hosts;
    for (int i = 0; i < cluster_->size(); ++i) hosts.push_back(cluster_->ip(i));
    return cluster_->Exec(
        0,
        {BinaryPath("client/gloowatch"), "preflight", "--hosts", absl::StrJoin(hosts, ","),
         "--ifname", "eth0", "--master", cluster_->grpc(0), "--timeout", timeout, "--json"},
        absl::Seconds(60));
  }
  std::unique_ptr<NetnsCluster> cluster_;
};

const json* Pair(const json& j, const std::string& a, const std::string& b) {
  for (const json& p : j["pairs"]) {
    if (p["a"] == a && p["b"] == b) return &p;
  }
  return nullptr;
}

json Parse(const CommandResult& r) {
  const size_t brace = r.output.find('{');
  return brace == std::string::npos ? json() : json::parse(r.output.substr(brace), nullptr, false);
}

// "check:host,host" for every finding.
std::vector<std::string> Blamed(const json& j) {
  std::vector<std::string> out;
  for (const json& f : j["findings"]) {
    std::vector<std::string> hosts;
    for (const json& h : f["hosts"]) hosts.push_back(h.get<std::string>());
    out.push_back(absl::StrCat(f["check"].get<std::string>(), ":", absl::StrJoin(hosts, ",")));
  }
  return out;
}

TEST_F(NetnsPreflightTest, HealthyHostsAreGo) {
  CommandResult r = Preflight("3s");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  json j = Parse(r);
  ASSERT_TRUE(j.is_object()) << r.output;
  for (int i = 0; i < cluster_->size(); ++i) {
    EXPECT_EQ(j["hosts"][i]["gloo"]["address"], cluster_->ip(i));
    EXPECT_EQ(j["hosts"][i]["gloo"]["interface"], "eth0");
    EXPECT_EQ(j["hosts"][i]["store"]["ok"], true);
    EXPECT_EQ(j["hosts"][i]["inbound"]["ok"], 3) << j["hosts"][i].dump();
    EXPECT_EQ(j["hosts"][i]["outbound"]["ok"], 3) << j["hosts"][i].dump();
  }
  EXPECT_EQ(j["pairs"].size(), 6u);
  for (const json& p : j["pairs"]) {
    EXPECT_EQ(p["ok"], true) << p.dump();
    EXPECT_EQ(p["listener"], p["a"]) << p.dump();  // the lower address
    EXPECT_EQ(p["a_to_b"]["ok"], true) << p.dump();
    EXPECT_EQ(p["b_to_a"]["ok"], true) << p.dump();
  }
  EXPECT_TRUE(j["findings"].empty()) << j["findings"].dump();
}

TEST_F(NetnsPreflightTest, DroppedPairTimesOutAtTheJobTimeout) {
  // h2 and h3 cannot talk; both still reach h1 (the client and the store).
  ASSERT_TRUE(cluster_->Partition(1, 2).ok());
  const absl::Time start = absl::Now();
  CommandResult r = Preflight("3s");
  const absl::Duration took = absl::Now() - start;
  ASSERT_EQ(r.exit_code, 2) << r.output;
  json j = Parse(r);
  ASSERT_TRUE(j.is_object()) << r.output;
  EXPECT_EQ(j["verdict"], "do_not_start");
  const std::string h1 = cluster_->ip(0), h2 = cluster_->ip(1), h3 = cluster_->ip(2);
  const json* bad = Pair(j, h2, h3);
  ASSERT_NE(bad, nullptr) << j["pairs"].dump();
  EXPECT_EQ((*bad)["ok"], false);
  EXPECT_EQ((*bad)["reason"], "timeout") << bad->dump();
  // At the job's timeout: not before it, and not Gloo's five timeouts.
  EXPECT_GE((*bad)["seconds"].get<double>(), 2.9) << bad->dump();
  EXPECT_LT((*bad)["seconds"].get<double>(), 8.0) << bad->dump();
  // Dropped both ways: Gloo's pair and the reverse round.
  EXPECT_EQ((*bad)["a_to_b"]["ok"], false) << bad->dump();
  EXPECT_EQ((*bad)["b_to_a"]["ok"], false) << bad->dump();
  EXPECT_EQ((*bad)["a_to_b"]["reason"], "timeout") << bad->dump();
  for (const std::string& other : {h2, h3}) {
    const json* good = Pair(j, h1, other);
    ASSERT_NE(good, nullptr);
    EXPECT_EQ((*good)["ok"], true) << good->dump();
    EXPECT_EQ((*good)["a_to_b"]["ok"], true) << good->dump();
  }
  for (const json& h : j["hosts"]) EXPECT_EQ(h["store"]["ok"], true) << h.dump();
  // One finding: the path between them, not either host.
  EXPECT_THAT(Blamed(j), ElementsAre(absl::StrCat("pair:", h2, ",", h3)));
  ASSERT_FALSE(j["findings"].empty());
  EXPECT_EQ(j["findings"][0]["check"], "pair");
  const std::string message = j["findings"][0]["message"].get<std::string>();
  EXPECT_THAT(message, HasSubstr(absl::StrCat(h2, " <-> ", h3, ": timeout")));
  EXPECT_THAT(message, HasSubstr(absl::StrCat("the path between ", h2, " and ", h3)));
  EXPECT_LT(took, absl::Seconds(20));
}

// The bed: h3's firewall accepts the daemon's ports and
// 29500-29600 (as the usual advice goes) and drops every other inbound
// connection. Gloo makes the lower address listen, so in the job's mesh h3
// accepts only h4's pair; the reverse round shows that nobody reaches h3
// while h3 reaches everyone, and h4 is not blamed.
TEST_F(NetnsPreflightTest, FirewallOnOneHostNamesThatHostNotItsPeer) {
  const std::string h3 = cluster_->ip(2), h4 = cluster_->ip(3);
  absl::Status s =
      cluster_->Nft(2,
                    "add table inet gwfault\n"
                    "add chain inet gwfault input { type filter hook input priority -10 ; policy "
                    "accept ; }\n"
                    "add rule inet gwfault input ct state established,related accept\n"
                    "add rule inet gwfault input iifname \"lo\" accept\n"
                    "add rule inet gwfault input tcp dport { 7601, 9601, 29500-29600 } accept\n"
                    "add rule inet gwfault input meta l4proto tcp drop\n");
  ASSERT_TRUE(s.ok()) << s;
  CommandResult r = Preflight("3s");
  ASSERT_EQ(r.exit_code, 2) << r.output;
  json j = Parse(r);
  ASSERT_TRUE(j.is_object()) << r.output;
  EXPECT_THAT(Blamed(j), ElementsAre(absl::StrCat("inbound:", h3))) << j["findings"].dump();
  ASSERT_FALSE(j["findings"].empty());
  EXPECT_EQ(j["findings"][0]["severity"], "fail");
  EXPECT_THAT(j["findings"][0]["message"].get<std::string>(),
              HasSubstr(absl::StrCat(h3, " accepts no inbound Gloo connection: a firewall on ", h3,
                                     "'s ephemeral ports")));
  // The mesh alone fails only h3 <-> h4, where Gloo made h3 listen.
  const json* pair = Pair(j, h3, h4);
  ASSERT_NE(pair, nullptr);
  EXPECT_EQ((*pair)["listener"], h3) << pair->dump();
  EXPECT_EQ((*pair)["ok"], false) << pair->dump();
  EXPECT_EQ((*pair)["b_to_a"]["reason"], "timeout") << pair->dump();
  EXPECT_EQ((*pair)["a_to_b"]["ok"], true) << pair->dump();
  int failed_pairs = 0;
  for (const json& p : j["pairs"]) failed_pairs += p["ok"] == false ? 1 : 0;
  EXPECT_EQ(failed_pairs, 1) << j["pairs"].dump();
  EXPECT_EQ(j["hosts"][2]["inbound"]["failed"], 3) << j["hosts"][2].dump();
  EXPECT_EQ(j["hosts"][2]["outbound"]["ok"], 3) << j["hosts"][2].dump();
  EXPECT_EQ(j["hosts"][3]["inbound"]["ok"], 3) << j["hosts"][3].dump();
}

// h3's new outgoing TCP connections (SYN without ACK), except to the
// daemons' ports, are dropped at the switch: an egress ACL. Its answers to
// others' connects pass, so it is named as reaching nobody.
TEST_F(NetnsPreflightTest, HostWhoseOutboundIsDroppedReachesNobody) {
  const std::string h3 = cluster_->ip(2);
  absl::Status s = cluster_->SwitchNft(
      2, absl::StrCat("add table bridge gwfault\n"
                      "add chain bridge gwfault forward { type filter hook forward priority -10 ; "
                      "policy accept ; }\n"
                      "add rule bridge gwfault forward iifname \"",
                      cluster_->switch_port(2),
                      "\" tcp flags & (syn | ack) == syn tcp dport != { 7601, 9601 } drop\n"));
  ASSERT_TRUE(s.ok()) << s;
  CommandResult r = Preflight("3s");
  ASSERT_EQ(r.exit_code, 2) << r.output;
  json j = Parse(r);
  ASSERT_TRUE(j.is_object()) << r.output;
  EXPECT_THAT(Blamed(j), ElementsAre(absl::StrCat("outbound:", h3))) << j["findings"].dump();
  ASSERT_FALSE(j["findings"].empty());
  EXPECT_THAT(j["findings"][0]["message"].get<std::string>(),
              HasSubstr(absl::StrCat(h3, " reaches no host: its outbound path or routing")));
  EXPECT_EQ(j["hosts"][2]["outbound"]["failed"], 3) << j["hosts"][2].dump();
  EXPECT_EQ(j["hosts"][2]["inbound"]["ok"], 3) << j["hosts"][2].dump();
}

}  // namespace
}  // namespace gloowatch::testing
