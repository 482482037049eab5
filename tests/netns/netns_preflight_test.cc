// `gloowatch preflight` across simulated hosts in network namespaces (root
// only): an nft drop between two hosts makes exactly their pair fail with a
// timeout at the job's timeout, while the other pairs and the store check pass.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/netns_cluster.h"

namespace gloowatch::testing {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

class NetnsPreflightTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = NetnsUnavailableReason();
    if (!reason.empty()) GTEST_SKIP() << "netns harness unavailable: " << reason;
    cluster_ = std::make_unique<NetnsCluster>();
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

TEST_F(NetnsPreflightTest, HealthyHostsAreGo) {
  CommandResult r = Preflight("3s");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  json j = json::parse(r.output.substr(r.output.find('{')), nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.output;
  for (int i = 0; i < cluster_->size(); ++i) {
    EXPECT_EQ(j["hosts"][i]["gloo"]["address"], cluster_->ip(i));
    EXPECT_EQ(j["hosts"][i]["gloo"]["interface"], "eth0");
    EXPECT_EQ(j["hosts"][i]["store"]["ok"], true);
  }
  EXPECT_EQ(j["pairs"].size(), 3u);
}

TEST_F(NetnsPreflightTest, DroppedPairTimesOutAtTheJobTimeout) {
  // h2 and h3 cannot talk; both still reach h1 (the client and the store).
  ASSERT_TRUE(cluster_->Partition(1, 2).ok());
  const absl::Time start = absl::Now();
  CommandResult r = Preflight("3s");
  const absl::Duration took = absl::Now() - start;
  ASSERT_EQ(r.exit_code, 2) << r.output;
  json j = json::parse(r.output.substr(r.output.find('{')), nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.output;
  EXPECT_EQ(j["verdict"], "do_not_start");
  const std::string h1 = cluster_->ip(0), h2 = cluster_->ip(1), h3 = cluster_->ip(2);
  const json* bad = Pair(j, h2, h3);
  ASSERT_NE(bad, nullptr) << j["pairs"].dump();
  EXPECT_EQ((*bad)["ok"], false);
  EXPECT_EQ((*bad)["reason"], "timeout") << bad->dump();
  // At the job's timeout: not before it, and not Gloo's five timeouts.
  EXPECT_GE((*bad)["seconds"].get<double>(), 2.9) << bad->dump();
  EXPECT_LT((*bad)["seconds"].get<double>(), 8.0) << bad->dump();
  for (const std::string& other : {h2, h3}) {
    const json* good = Pair(j, h1, other);
    ASSERT_NE(good, nullptr);
    EXPECT_EQ((*good)["ok"], true) << good->dump();
  }
  for (const json& h : j["hosts"]) EXPECT_EQ(h["store"]["ok"], true) << h.dump();
  ASSERT_FALSE(j["findings"].empty());
  EXPECT_EQ(j["findings"][0]["check"], "pair");
  EXPECT_THAT(j["findings"][0]["message"].get<std::string>(),
              HasSubstr(absl::StrCat(h2, " <-> ", h3, ": timeout")));
  EXPECT_LT(took, absl::Seconds(20));
}

}  // namespace
}  // namespace gloowatch::testing
