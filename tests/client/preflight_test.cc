// Unit tests of the preflight's pure parts: Slurm host lists, host parsing
// and the verdict / JSON builders (client/preflight_report.h).
#include "client/preflight/preflight.h"

#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/core/slurm_nodelist.h"
#include "client/preflight/preflight_report.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gloowatch::client {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> Expand(const std::string& text) {
  absl::StatusOr<std::vector<std::string>> out = ExpandNodeList(text);
  EXPECT_TRUE(out.ok()) << text << ": " << out.status();
  return out.ok() ? *out : std::vector<std::string>{};
}

TEST(SlurmNodeList, ExpandsRangesListsAndPadding) {
  EXPECT_THAT(Expand("node[01-04]"), ElementsAre("node01", "node02", "node03", "node04"));
  EXPECT_THAT(Expand("gpu[8-10,12],login"), ElementsAre("gpu8", "gpu9", "gpu10", "gpu12", "login"));
  EXPECT_THAT(Expand("n[098-101]"), ElementsAre("n098", "n099", "n100", "n101"));
  EXPECT_THAT(Expand("r[1-2]n[1-2]-ib"), ElementsAre("r1n1-ib", "r1n2-ib", "r2n1-ib", "r2n2-ib"));
  EXPECT_THAT(Expand(" a , b "), ElementsAre("a", "b"));
  EXPECT_THAT(Expand("host-7"), ElementsAre("host-7"));
}

TEST(SlurmNodeList, RejectsMalformedAndHugeLists) {
  for (const char* bad : {"node[1-", "node]1[", "n[[1-2]]", "n[4-2]", "n[a-b]", "n[1-2-3]", "n[]",
                          ",", "n[0-99999]", "a[1-100]b[1-100]"}) {
    absl::StatusOr<std::vector<std::string>> out = ExpandNodeList(bad);
    EXPECT_FALSE(out.ok()) << bad;
  }
  absl::StatusOr<std::vector<std::string>> big = ExpandNodeList("n[1-4096]");
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_EQ(big->size(), 4096u);
  EXPECT_FALSE(ExpandNodeList("n[1-4097]").ok());
  EXPECT_THAT(std::string(ExpandNodeList("n[4-2]").status().message()), HasSubstr("backwards"));
}

TEST(PreflightHosts, PortsDefaultsAndDuplicates) {
  absl::StatusOr<std::vector<DaemonTarget>> hosts =
      ParsePreflightHosts({"node[1-2],other:7700", "[::1]:7800"}, 7601);
  ASSERT_TRUE(hosts.ok()) << hosts.status();
  ASSERT_EQ(hosts->size(), 4u);
  EXPECT_EQ((*hosts)[0].endpoint.ToString(), "node1:7601");
  EXPECT_EQ((*hosts)[2].endpoint.ToString(), "other:7700");
  EXPECT_EQ((*hosts)[3].endpoint.ToString(), "[::1]:7800");
  absl::StatusOr<std::vector<DaemonTarget>> dup = ParsePreflightHosts({"a,b,a"}, 7601);
  ASSERT_FALSE(dup.ok());
  EXPECT_THAT(std::string(dup.status().message()), HasSubstr("a:7601 is listed twice"));
}

TEST(PreflightHosts, HostfileTakesTheFirstWordAndSkipsComments) {
  const std::string path = ::testing::TempDir() + "/preflight_hostfile";
  std::ofstream(path) << "# the job\nnode1 slots=8\n\n node[2-3]  # rack 2\nnode4\t4\n";
  absl::StatusOr<std::vector<std::string>> lines = ReadHostfile(path);
  ASSERT_TRUE(lines.ok()) << lines.status();
  EXPECT_THAT(*lines, ElementsAre("node1", "node[2-3]", "node4"));
  EXPECT_EQ(ReadHostfile(path + ".missing").status().code(), absl::StatusCode::kNotFound);
}

// A host whose daemon answered both phases; pairs to every other rank ok.
PreflightHost Healthy(const std::string& name, int rank, int hosts, const std::string& address) {
  PreflightHost h;
  h.target.name = name;
  h.target.endpoint.host = name;
  h.target.endpoint.port = 7601;
  v1::PreflightResolveResponse res;
  res.set_node(name);
  res.set_hostname(name);
  res.mutable_gloo()->set_address(address);
  res.mutable_gloo()->set_interface("eth0");
  res.mutable_gloo()->set_source("env:GLOO_SOCKET_IFNAME");
  res.mutable_gloo()->add_socket_ifnames("eth0");
  res.add_hostname_addresses(address);
  h.resolved = res;
  v1::PreflightConnectResponse con;
  for (int r = 0; r < hosts; ++r) {
    if (r == rank) continue;
    v1::PreflightPairResult* p = con.add_pairs();
    p->set_rank(r);
    p->set_tried(true);
    p->set_ok(true);
    p->set_seconds(0.001 * (rank + 1));
  }
  con.mutable_master()->set_checked(true);
  con.mutable_master()->set_ok(true);
  h.connected = con;
  return h;
}

PreflightInput ThreeHosts() {
  PreflightInput in;
  in.timeout = absl::Seconds(5);
  in.socket_ifname = "eth0";
  in.master_addr = "10.0.0.1";
  in.master_port = 29500;
  in.world_size = 24;
  for (int i = 0; i < 3; ++i) {
    in.hosts.push_back(
        Healthy("node" + std::to_string(i), i, 3, "10.0.0." + std::to_string(i + 1)));
  }
  return in;
}

std::vector<std::string> Checks(const PreflightReport& r, const std::string& severity) {
  std::vector<std::string> out;
  for (const PreflightFinding& f : r.findings) {
    if (f.severity == severity) out.push_back(f.check);
  }
  return out;
}

TEST(PreflightReport, AllGood) {
  PreflightReport r = BuildPreflightReport(ThreeHosts());
  EXPECT_EQ(r.verdict, "go");
  EXPECT_EQ(r.exit_code, 0);
  ASSERT_EQ(r.pairs.size(), 3u);
  for (const PreflightPair& p : r.pairs) EXPECT_TRUE(p.ok);
  // The slower side's time counts.
  EXPECT_DOUBLE_EQ(r.pairs[0].seconds, 0.002);
  EXPECT_TRUE(r.findings.empty());
  const nlohmann::json j = PreflightToJson(r);
  EXPECT_EQ(j["schema"], "gloowatch.preflight.v1");
  EXPECT_EQ(j["verdict"], "go");
  EXPECT_EQ(j["hosts"].size(), 3u);
  EXPECT_EQ(j["hosts"][1]["gloo"]["address"], "10.0.0.2");
  EXPECT_EQ(j["pairs"][2]["a"], "node1");
  EXPECT_EQ(j["pairs"][2]["b"], "node2");
  EXPECT_EQ(j["store"]["port"], 29500);
  EXPECT_THAT(RenderPreflightText(r), HasSubstr("pairs: 3 of 3 connected"));
  EXPECT_THAT(RenderPreflightText(r), HasSubstr("verdict: GO (exit 0)"));
}

TEST(PreflightReport, FailedPairNamesBothSidesAndStopsTheJob) {
  PreflightInput in = ThreeHosts();
  for (auto [host, peer] : {std::pair{0, 2}, std::pair{2, 0}}) {
    for (v1::PreflightPairResult& p : *in.hosts[host].connected->mutable_pairs()) {
      if (static_cast<int>(p.rank()) != peer) continue;
      p.set_ok(false);
      p.set_reason(v1::FAILURE_REASON_TIMEOUT);
      p.set_message("connect: Connect timeout [10.0.0.3]:41234");
    }
  }
  PreflightReport r = BuildPreflightReport(in);
  EXPECT_EQ(r.verdict, "do_not_start");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(Checks(r, "fail"), ElementsAre("pair"));
  EXPECT_THAT(r.findings[0].message, HasSubstr("node0 <-> node2: timeout: node0 saw connect"));
  EXPECT_THAT(r.findings[0].message, HasSubstr("node2 saw"));
  EXPECT_FALSE(r.pairs[1].ok);
  EXPECT_EQ(r.pairs[1].reason, "timeout");
}

TEST(PreflightReport, DownDaemonLeavesItsPairsUntried) {
  PreflightInput in = ThreeHosts();
  in.hosts[1].resolved.reset();
  in.hosts[1].connected.reset();
  in.hosts[1].resolve_error = "unavailable: Connection refused";
  for (int h : {0, 2}) {
    for (v1::PreflightPairResult& p : *in.hosts[h].connected->mutable_pairs()) {
      if (p.rank() == 1) p.set_tried(false);
    }
  }
  PreflightReport r = BuildPreflightReport(in);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(Checks(r, "fail"), ElementsAre("daemon"));
  EXPECT_THAT(r.findings[0].message, HasSubstr("node1: the daemon at node1:7601 did not answer"));
  EXPECT_FALSE(r.pairs[0].tried);
  EXPECT_THAT(r.pairs[0].message, HasSubstr("not tried: node1: its daemon did not answer"));
  EXPECT_TRUE(r.pairs[1].ok);  // node0 <-> node2
  EXPECT_THAT(RenderPreflightText(r), HasSubstr("2 not tried"));
}

TEST(PreflightReport, StoreRefusedDegradesStoreTimeoutStops) {
  PreflightInput in = ThreeHosts();
  v1::PreflightMasterResult* m = in.hosts[2].connected->mutable_master();
  m->set_ok(false);
  m->set_reason(v1::FAILURE_REASON_REFUSED);
  m->set_message("10.0.0.1:29500: Connection refused");
  PreflightReport refused = BuildPreflightReport(in);
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_EQ(refused.verdict, "degraded");
  EXPECT_THAT(Checks(refused, "warn"), ElementsAre("store"));
  EXPECT_THAT(refused.findings[0].message,
              HasSubstr("node2: nothing listens on the store 10.0.0.1:29500"));

  m->set_reason(v1::FAILURE_REASON_TIMEOUT);
  m->set_message("10.0.0.1:29500: Connection timed out");
  PreflightReport timeout = BuildPreflightReport(in);
  EXPECT_EQ(timeout.exit_code, 2);
  EXPECT_THAT(timeout.findings[0].message, HasSubstr("node2: cannot reach the store"));
}

TEST(PreflightReport, CrossHostChecks) {
  PreflightInput in = ThreeHosts();
  in.world_size = 25;
  in.hosts[1].resolved->mutable_gloo()->set_address("fd00::2");
  in.hosts[2].resolved->mutable_gloo()->set_address("127.0.1.1");
  in.hosts[2].resolved->mutable_gloo()->add_socket_ifnames("eth1");
  PreflightReport r = BuildPreflightReport(in);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(Checks(r, "fail"), ElementsAre("address_family", "ifname_count", "loopback"));
  EXPECT_THAT(Checks(r, "warn"), ElementsAre("world_size"));
  const nlohmann::json j = PreflightToJson(r);
  std::string all = j["findings"].dump();
  EXPECT_THAT(all, HasSubstr("IPv4: node0,node2; IPv6: node1"));
  EXPECT_THAT(all, HasSubstr("loopback on node2 while other hosts are remote"));
  EXPECT_THAT(all, HasSubstr("world size 25 over 3 hosts is uneven"));
}

TEST(PreflightReport, HostNameOnLoopbackWarnsOnlyWhenItDecides) {
  PreflightInput in = ThreeHosts();
  in.hosts[0].resolved->set_hostname_addresses(0, "127.0.1.1");
  EXPECT_TRUE(BuildPreflightReport(in).findings.empty());
  in.socket_ifname = "";
  PreflightReport r = BuildPreflightReport(in);
  EXPECT_THAT(Checks(r, "warn"), ElementsAre("loopback"));
  EXPECT_THAT(r.findings[0].message, HasSubstr("node0: host name 'node0' resolves to 127.0.1.1"));
}

TEST(PreflightReport, NoStoreIsInfoAndLonelyHostFails) {
  PreflightInput in = ThreeHosts();
  in.master_addr.clear();
  PreflightReport r = BuildPreflightReport(in);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(Checks(r, "info"), ElementsAre("store"));
  in.hosts[1].resolved->set_error("interface eth0 (from GLOO_SOCKET_IFNAME) does not exist");
  in.hosts[2].connected.reset();
  in.hosts[2].connect_error = "deadline exceeded";
  PreflightReport lonely = BuildPreflightReport(in);
  EXPECT_EQ(lonely.exit_code, 2);
  EXPECT_THAT(Checks(lonely, "fail"), ElementsAre("resolve", "daemon"));
}

// A mesh of n hosts h1..hn (10.0.0.1..) whose daemons report directions:
// the lower address listened to every higher one (Gloo's rule), and every
// connection, either way, formed.
PreflightInput Directed(int n) {
  PreflightInput in;
  in.timeout = absl::Seconds(3);
  in.socket_ifname = "eth0";
  in.master_addr = "10.0.0.1";
  in.master_port = 29500;
  for (int i = 0; i < n; ++i) {
    PreflightHost h = Healthy("h" + std::to_string(i + 1), i, n, "10.0.0." + std::to_string(i + 1));
    for (v1::PreflightPairResult& p : *h.connected->mutable_pairs()) {
      p.set_listened(static_cast<int>(p.rank()) > i);
      p.set_connected(true);
      p.mutable_reverse()->set_tried(true);
      p.mutable_reverse()->set_ok(true);
    }
    in.hosts.push_back(std::move(h));
  }
  return in;
}

v1::PreflightPairResult& Result(PreflightInput& in, int host, int peer) {
  for (v1::PreflightPairResult& p : *in.hosts[host].connected->mutable_pairs()) {
    if (static_cast<int>(p.rank()) == peer) return p;
  }
  ADD_FAILURE() << "no pair " << host << " -> " << peer;
  return *in.hosts[host].connected->mutable_pairs(0);
}

// Rank `from`'s connection to rank `to` fails: Gloo's pair when `to` is the
// lower address (it listened), else the reverse round.
void FailConnect(PreflightInput& in, int from, int to) {
  if (to < from) {
    for (auto [host, peer] : {std::pair{from, to}, std::pair{to, from}}) {
      v1::PreflightPairResult& p = Result(in, host, peer);
      p.set_ok(false);
      p.set_connected(false);
      p.set_reason(v1::FAILURE_REASON_TIMEOUT);
      p.set_message("connect: Connect timeout [10.0.0.1]:41234");
    }
    return;
  }
  v1::PreflightReverseResult* out = Result(in, from, to).mutable_reverse();
  out->set_ok(false);
  out->set_reason(v1::FAILURE_REASON_TIMEOUT);
  out->set_message("connect 10.0.0.9:40000: no answer within 3s (timed out)");
  v1::PreflightReverseResult* back = Result(in, to, from).mutable_reverse();
  back->set_ok(false);
  back->set_reason(v1::FAILURE_REASON_TIMEOUT);
}

std::vector<std::string> Blamed(const PreflightReport& r) {
  std::vector<std::string> out;
  for (const PreflightFinding& f : r.findings) {
    out.push_back(absl::StrCat(f.check, ":", absl::StrJoin(f.hosts, ",")));
  }
  return out;
}

TEST(PreflightLocalise, HealthyMeshHasBothDirectionsAndNoFinding) {
  PreflightReport r = BuildPreflightReport(Directed(4));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(r.findings.empty());
  for (const PreflightPair& p : r.pairs) {
    EXPECT_EQ(p.listener, p.a);  // the lower address listens
    EXPECT_TRUE(p.b_to_a.gloo && p.b_to_a.ok);
    EXPECT_TRUE(!p.a_to_b.gloo && p.a_to_b.tried && p.a_to_b.ok);
  }
  const nlohmann::json j = PreflightToJson(r);
  EXPECT_EQ(j["pairs"][0]["listener"], "h1");
  EXPECT_EQ(j["pairs"][0]["b_to_a"]["gloo"], true);
  EXPECT_EQ(j["pairs"][0]["a_to_b"]["ok"], true);
  EXPECT_EQ(j["hosts"][2]["inbound"]["ok"], 3);
  EXPECT_EQ(j["hosts"][2]["outbound"]["failed"], 0);
  EXPECT_THAT(RenderPreflightText(r), HasSubstr("pairs: 6 of 6 connected; the other way 6 of 6"));
}

// The case: h3's firewall drops every inbound connection. Gloo made
// h3 listen only for h4, so the mesh alone fails h3 <-> h4; both rounds
// together show that nobody connects to h3 while h3 connects to everyone.
TEST(PreflightLocalise, HostThatAcceptsNothingIsNamedAndItsPeersAreNot) {
  PreflightInput in = Directed(4);
  for (int from : {0, 1, 3}) FailConnect(in, from, 2);
  PreflightReport r = BuildPreflightReport(in);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(Blamed(r), ElementsAre("inbound:h3"));
  EXPECT_EQ(r.findings[0].severity, "fail");
  EXPECT_THAT(
      r.findings[0].message,
      HasSubstr("h3 accepts no inbound Gloo connection: a firewall on h3's ephemeral ports "
                "(h1, h2, h4 could not connect to it: timeout; it connects out to 3 of 3)"));
  const nlohmann::json j = PreflightToJson(r);
  EXPECT_EQ(j["findings"][0]["hosts"], nlohmann::json::array({"h3"}));
  EXPECT_EQ(j["hosts"][2]["inbound"]["failed"], 3);
  EXPECT_EQ(j["hosts"][3]["inbound"]["failed"], 0);
  EXPECT_EQ(j["hosts"][3]["outbound"]["failed"], 1);
  // h3 <-> h4: Gloo's pair failed (h4 -> h3), the reverse (h3 -> h4) worked.
  const nlohmann::json& p = j["pairs"][5];
  EXPECT_EQ(p["listener"], "h3");
  EXPECT_EQ(p["ok"], false);
  EXPECT_EQ(p["b_to_a"]["ok"], false);
  EXPECT_EQ(p["a_to_b"]["ok"], true);
}

TEST(PreflightLocalise, FirewallWhereGlooNeverListensOnlyDegrades) {
  // h4 has the highest address: in this job it connects on every pair.
  PreflightInput in = Directed(4);
  for (int from : {0, 1, 2}) FailConnect(in, from, 3);
  PreflightReport r = BuildPreflightReport(in);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(Blamed(r), ElementsAre("inbound:h4"));
  EXPECT_EQ(r.findings[0].severity, "warn");
  EXPECT_THAT(r.findings[0].message,
              HasSubstr("in this job Gloo makes h4 connect on all its pairs"));
  for (const PreflightPair& p : r.pairs) EXPECT_TRUE(p.ok);
}

TEST(PreflightLocalise, HostThatReachesNobody) {
  PreflightInput in = Directed(4);
  for (int to : {0, 1, 3}) FailConnect(in, 2, to);
  PreflightReport r = BuildPreflightReport(in);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(Blamed(r), ElementsAre("outbound:h3"));
  EXPECT_THAT(r.findings[0].message,
              HasSubstr("h3 reaches no host: its outbound path or routing (its connections to h1, "
                        "h2, h4 failed: timeout; 3 of 3 connect to it)"));
}

TEST(PreflightLocalise, HostWithNoConnectionEitherWay) {
  PreflightInput in = Directed(4);
  for (int peer : {0, 2, 3}) {
    FailConnect(in, 1, peer);
    FailConnect(in, peer, 1);
  }
  PreflightReport r = BuildPreflightReport(in);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(Blamed(r), ElementsAre("isolated:h2"));
  EXPECT_THAT(r.findings[0].message, HasSubstr("h2 has no connection with any host, either way"));
}

TEST(PreflightLocalise, SingleBadPathNamesThePathNotAHost) {
  PreflightInput in = Directed(4);
  FailConnect(in, 0, 2);
  FailConnect(in, 2, 0);
  PreflightReport r = BuildPreflightReport(in);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(Blamed(r), ElementsAre("pair:h1,h3"));
  EXPECT_THAT(r.findings[0].message, HasSubstr("h1 <-> h3: timeout: no connection either way"));
  EXPECT_THAT(r.findings[0].message, HasSubstr("the path between h1 and h3"));
}

TEST(PreflightLocalise, OneWayFailureIsADirection) {
  PreflightInput in = Directed(4);
  FailConnect(in, 3, 1);  // Gloo's own direction: h2 listens for h4
  PreflightReport r = BuildPreflightReport(in);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(Blamed(r), ElementsAre("direction:h4,h2"));
  EXPECT_THAT(r.findings[0].message,
              HasSubstr("h4 -> h2: timeout: h2 does not accept h4's connection"));
  EXPECT_THAT(r.findings[0].message, HasSubstr("while h2 -> h4 connects"));

  PreflightInput reverse = Directed(4);
  FailConnect(reverse, 1, 3);  // only the reverse round: the job's pair works
  PreflightReport degraded = BuildPreflightReport(reverse);
  EXPECT_EQ(degraded.exit_code, 1);
  EXPECT_THAT(Blamed(degraded), ElementsAre("direction:h2,h4"));
  EXPECT_EQ(degraded.findings[0].severity, "warn");
}

TEST(PreflightLocalise, TwoHostsCannotTellWhichSideIsAtFault) {
  PreflightInput in = Directed(2);
  FailConnect(in, 1, 0);
  PreflightReport r = BuildPreflightReport(in);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(Blamed(r), ElementsAre("direction:h2,h1"));
}

TEST(PreflightLocalise, TwoFaultsAtOnceNameBothHosts) {
  // h3 accepts nothing and h4 reaches nobody: h4 -> h3 fails for both
  // reasons, and nobody else is named.
  PreflightInput in = Directed(4);
  for (int from : {0, 1, 3}) FailConnect(in, from, 2);
  for (int to : {0, 1}) FailConnect(in, 3, to);
  PreflightReport r = BuildPreflightReport(in);
  EXPECT_THAT(Blamed(r), ElementsAre("inbound:h3", "outbound:h4"));
}

TEST(PreflightLocalise, ExchangeFailureAfterTheConnectIsAPair) {
  PreflightInput in = Directed(3);
  for (auto [host, peer] : {std::pair{0, 1}, std::pair{1, 0}}) {
    v1::PreflightPairResult& p = Result(in, host, peer);
    p.set_ok(false);
    p.set_reason(v1::FAILURE_REASON_RESET);
    p.set_message("exchange: Connection reset by peer");
  }
  PreflightReport r = BuildPreflightReport(in);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(Blamed(r), ElementsAre("pair:h1,h2"));
  EXPECT_THAT(r.findings[0].message,
              HasSubstr("h1 <-> h2: reset: connected, then the exchange failed"));
}

}  // namespace
}  // namespace gloowatch::client
