#include "client/health/cluster.h"

#include "client/health/render.h"
#include "common/proto_time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gloowatch::client {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

FetchResult Node(const std::string& name, uint16_t port) {
  FetchResult r;
  r.target = {name, {"127.0.0.1", port}};
  v1::NodeStatus s;
  s.set_node(name);
  s.set_version("0.1.0");
  auto* t = s.mutable_thresholds();
  t->set_latency_seconds(0.002);
  t->set_bandwidth_link_ratio(0.8);
  t->set_clock_offset_seconds(0.1);
  t->set_communication_share(0.3);
  r.status = s;
  return r;
}

v1::PeerStatus* Peer(FetchResult& n, const std::string& name, double p50, double ratio,
                     double offset, double error = 0.0001) {
  auto* p = n.status->add_peers();
  p->set_name(name);
  p->set_state(v1::PEER_STATE_UP);
  p->mutable_latency()->set_p50_seconds(p50);
  p->mutable_latency()->set_p99_seconds(p50 * 2);
  p->mutable_bandwidth()->set_link_ratio(ratio);
  p->mutable_bandwidth()->set_tx_bytes_per_second(1e9);
  p->mutable_clock()->set_offset_seconds(offset);
  p->mutable_clock()->set_error_seconds(error);
  return p;
}

FetchResult Unreachable(const std::string& name) {
  FetchResult r;
  r.target = {name, {"127.0.0.1", 9}};
  r.error_code = "DEADLINE_EXCEEDED";
  r.error = "timeout: no answer within 3s";
  return r;
}

HealthTextOptions Colored() {
  HealthTextOptions o;
  o.color = true;
  return o;
}

TEST(Cluster, HealthyTriangle) {
  FetchResult a = Node("a", 1), b = Node("b", 2), c = Node("c", 3);
  Peer(a, "b", 0.0003, 0.95, 0.001);
  Peer(b, "a", 0.0003, 0.95, -0.001);
  Peer(a, "c", 0.0004, 0.9, 0.0);
  Peer(c, "a", 0.0004, 0.9, 0.0);
  Peer(b, "c", 0.0005, 0.9, 0.0);
  Peer(c, "b", 0.0005, 0.9, 0.0);
  ClusterPicture p = BuildCluster({a, b, c});
  EXPECT_EQ(p.verdict, Health::kHealthy);
  EXPECT_EQ(p.ExitCode(), 0);
  EXPECT_EQ(p.nodes, (std::vector<std::string>{"a", "b", "c"}));
  ASSERT_EQ(p.links.size(), 3u);
  ASSERT_NE(p.View(0, 1), nullptr);
  EXPECT_DOUBLE_EQ(p.View(0, 1)->clock().offset_seconds(), 0.001);
  EXPECT_EQ(p.View(0, 0), nullptr);
  nlohmann::json j = HealthToJson(p);
  EXPECT_EQ(j["schema"], "gloowatch.health.v1");
  EXPECT_EQ(j["verdict"], "healthy");
  EXPECT_DOUBLE_EQ(j["matrices"]["latency_p50_ms"][0][1].get<double>(), 0.3);
  EXPECT_DOUBLE_EQ(j["matrices"]["latency_p99_ms"][1][2].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j["matrices"]["clock_offset_ms"][1][0].get<double>(), -1.0);
  EXPECT_TRUE(j["matrices"]["link_ratio"][0][0].is_null());
}

TEST(Cluster, ThresholdsAndWorstFirst) {
  FetchResult a = Node("a", 1), b = Node("b", 2), c = Node("c", 3);
  Peer(a, "b", 0.0003, 0.95, 0.0);
  Peer(b, "a", 0.0003, 0.95, 0.0);
  Peer(a, "c", 0.005, 0.5, 0.0);  // slow and thin
  Peer(c, "a", 0.0004, 0.9, 0.0);
  Peer(b, "c", 0.0005, 0.9, 0.2);   // offset too large ...
  Peer(c, "b", 0.0005, 0.9, -0.2);  // ... but consistent
  ClusterPicture p = BuildCluster({a, b, c});
  EXPECT_EQ(p.verdict, Health::kDegraded);
  EXPECT_EQ(p.ExitCode(), 1);
  ASSERT_EQ(p.links.size(), 3u);
  // Both degraded links precede the healthy one; more problems first.
  EXPECT_EQ(p.links[0].health, Health::kDegraded);
  EXPECT_EQ(p.links[1].health, Health::kDegraded);
  EXPECT_EQ(p.links[2].a + p.links[2].b, "ab");
  std::vector<std::string> all;
  for (const auto& l : p.links) all.insert(all.end(), l.problems.begin(), l.problems.end());
  EXPECT_THAT(all, Contains("a->c: latency p50 5.000 ms >= 2.000 ms"));
  EXPECT_THAT(all, Contains("a->c: link ratio 0.50 < 0.80"));
  EXPECT_THAT(all, Contains("b->c: clock offset +200.0 ms, |offset| >= 100.0 ms"));
  for (const auto& s : all) EXPECT_THAT(s, ::testing::Not(HasSubstr("disagree")));
}

TEST(Cluster, AsymmetryAndOffsetDisagreement) {
  FetchResult a = Node("a", 1), b = Node("b", 2);
  Peer(a, "b", 0.0003, 0.95, 0.010, 0.001);
  auto* ba = Peer(b, "a", 0.0003, 0.95, 0.010, 0.001);  // should be ~ -10 ms
  ba->set_state(v1::PEER_STATE_DOWN);
  ba->mutable_last_failure()->set_message("Connect timeout");
  ClusterPicture p = BuildCluster({a, b});
  EXPECT_EQ(p.verdict, Health::kFailed);
  ASSERT_EQ(p.links.size(), 1u);
  EXPECT_THAT(p.links[0].problems, Contains("b->a: down (Connect timeout)"));
  EXPECT_THAT(p.links[0].problems, Contains("asymmetric: a sees b up, b sees a down"));
  EXPECT_THAT(p.links[0].problems,
              Contains(HasSubstr("clock offsets disagree: a->b +10.000 ms, b->a +10.000 ms")));
  // Within bounds: +10 and -9.5 with 0.1+0.1+1 ms allowance.
  FetchResult c = Node("a", 1), d = Node("b", 2);
  Peer(c, "b", 0.0003, 0.95, 0.010, 0.0001);
  Peer(d, "a", 0.0003, 0.95, -0.0095, 0.0001);
  EXPECT_EQ(BuildCluster({c, d}).verdict, Health::kHealthy);
}

TEST(Cluster, UnreachableReportedRestShown) {
  FetchResult a = Node("a", 1);
  Peer(a, "b", 0.0003, 0.95, 0.0);
  ClusterPicture p = BuildCluster({a, Unreachable("b")});
  EXPECT_EQ(p.verdict, Health::kFailed);
  EXPECT_EQ(p.ExitCode(), 2);
  ASSERT_EQ(p.node_reports.size(), 2u);
  EXPECT_FALSE(p.node_reports[1].reachable);
  EXPECT_THAT(p.node_reports[1].problems[0], HasSubstr("timeout"));
  // The link is still shown from a's side and not called one-sided.
  ASSERT_EQ(p.links.size(), 1u);
  EXPECT_EQ(p.links[0].health, Health::kHealthy);
  std::string text = RenderHealthText(p, {});
  EXPECT_THAT(text, HasSubstr("UNREACHABLE"));
  EXPECT_THAT(text, HasSubstr("0.300"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("\033[")));
  EXPECT_THAT(RenderHealthText(p, Colored()), HasSubstr("\033[31m"));
  nlohmann::json j = HealthToJson(p);
  EXPECT_EQ(j["nodes"][1]["reachable"], false);
  EXPECT_EQ(j["nodes"][1]["error"], "timeout: no answer within 3s");
}

TEST(Cluster, UnreachableGivenByAddressTakesThePeerName) {
  // `--daemons 127.0.0.1:1,127.0.0.1:9`: the target has no name but its
  // address; a knows the peer at that address as "b".
  FetchResult a = Node("a", 1);
  Peer(a, "b", 0.0003, 0.95, 0.0)->set_grpc_address("127.0.0.1:9");
  ClusterPicture p = BuildCluster({a, Unreachable("127.0.0.1:9")});
  EXPECT_EQ(p.nodes, (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(p.node_reports.size(), 2u);
  EXPECT_EQ(p.node_reports[1].name, "b");
  EXPECT_EQ(p.node_reports[1].address, "127.0.0.1:9");
  // An explicit name (--cluster, --config) is kept even if it differs.
  ClusterPicture q = BuildCluster({a, Unreachable("other")});
  EXPECT_EQ(q.node_reports[1].name, "other");
}

TEST(Cluster, OneSidedLink) {
  FetchResult a = Node("a", 1), b = Node("b", 2);
  Peer(a, "b", 0.0003, 0.95, 0.0);
  ClusterPicture p = BuildCluster({a, b});
  EXPECT_EQ(p.verdict, Health::kDegraded);
  EXPECT_THAT(p.links[0].problems, Contains("one-sided: b does not list a as a peer"));
}

TEST(Cluster, TrainingShare) {
  FetchResult a = Node("a", 1);
  auto* j = a.status->add_training();
  j->set_job("llm");
  j->set_rank(0);
  j->set_steps(100);
  j->set_communication_share(0.45);
  auto* k = a.status->add_training();
  k->set_job("small");
  k->set_rank(1);
  k->set_communication_share(0.1);
  ClusterPicture p = BuildCluster({a});
  // A job signal: reported on the job, never a problem of the host or the
  // cluster (`preflight`, `health` and `health --prometheus` agree).
  EXPECT_EQ(p.verdict, Health::kHealthy);
  ASSERT_EQ(p.training.size(), 2u);
  EXPECT_TRUE(p.training[0].over_threshold);
  EXPECT_FALSE(p.training[1].over_threshold);
  EXPECT_THAT(p.node_reports[0].problems, IsEmpty());
  EXPECT_THAT(RenderHealthText(p, {}), HasSubstr("training jobs (job signals;"));
  nlohmann::json js = HealthToJson(p);
  EXPECT_DOUBLE_EQ(js["training"][0]["communication_share"].get<double>(), 0.45);
  EXPECT_EQ(js["training"][0]["over_threshold"], true);
}

TEST(Cluster, DefaultThresholdsWhenUnset) {
  v1::NodeStatus s;
  EffectiveThresholds t = ThresholdsOf(s);
  EXPECT_DOUBLE_EQ(t.latency_seconds, 0.002);
  EXPECT_DOUBLE_EQ(t.link_ratio, 0.8);
  EXPECT_DOUBLE_EQ(t.clock_offset_seconds, 0.1);
}

// --- sampled meshes: coverage, and what is (not) a problem ------------------

void Sampled(FetchResult& n, uint32_t cluster_nodes, uint32_t probed) {
  auto* t = n.status->mutable_topology();
  t->set_mode("sampled");
  t->set_cluster_nodes(cluster_nodes);
  t->set_probed_peers(probed);
}

// a..d each probing its ring successor: a-b, b-c, c-d, d-a measured one way;
// a-c and b-d by nobody.
std::vector<FetchResult> Ring() {
  std::vector<FetchResult> n = {Node("a", 1), Node("b", 2), Node("c", 3), Node("d", 4)};
  for (size_t i = 0; i < n.size(); ++i) {
    Sampled(n[i], 4, 1);
    Peer(n[i], std::string(1, static_cast<char>('a' + (i + 1) % 4)), 0.0003, 0.9, 0.0)
        ->set_selection("ring");
  }
  return n;
}

TEST(Cluster, SampledMeshUnprobedPairsAreNotMeasuredAndNotAProblem) {
  ClusterPicture p = BuildCluster(Ring());
  EXPECT_EQ(p.verdict, Health::kHealthy);  // no "one-sided", no missing-pair penalty
  EXPECT_TRUE(p.coverage.sampled);
  EXPECT_EQ(p.coverage.node_pairs, 6u);
  EXPECT_EQ(p.coverage.measured_pairs, 4u);
  EXPECT_EQ(p.coverage.measured_both_ways, 0u);
  EXPECT_TRUE(p.Measured(0, 1));
  EXPECT_TRUE(p.Measured(1, 0));
  EXPECT_FALSE(p.Measured(0, 2));
  for (const auto& l : p.links) EXPECT_TRUE(l.problems.empty()) << l.a << "-" << l.b;

  const std::string text = RenderHealthText(p, {});
  EXPECT_THAT(text, HasSubstr("coverage: 4 of 6 node pairs measured directly (sampled mesh; ~ = "
                              "not probed by either node, not a failure)"));
  // Latency matrix row a: "-" self, b measured, c not measured by anyone,
  // d measured by d (a has no view: ".").
  EXPECT_THAT(text, ::testing::ContainsRegex("\na +- +0\\.300 +~ +\\.\n"));

  nlohmann::json j = HealthToJson(p);
  EXPECT_EQ(j["coverage"]["mode"], "sampled");
  EXPECT_EQ(j["coverage"]["node_pairs"], 6);
  EXPECT_EQ(j["coverage"]["measured_pairs"], 4);
  EXPECT_EQ(j["coverage"]["not_measured_pairs"], 2);
  EXPECT_EQ(j["coverage"]["not_measured"], nlohmann::json::parse(R"([["a","c"],["b","d"]])"));
  ASSERT_EQ(j["links"].size(), 4u);
  for (const auto& l : j["links"]) {
    EXPECT_EQ(l["measured"], true);
    EXPECT_EQ(l["measured_both_ways"], false);
    const auto& view = l["a_to_b"].is_null() ? l["b_to_a"] : l["a_to_b"];
    EXPECT_EQ(view["selection"], "ring") << l.dump();
  }
  EXPECT_TRUE(j["matrices"]["latency_p50_ms"][0][2].is_null());
}

TEST(Cluster, SampledMeshStillReportsRealFailures) {
  std::vector<FetchResult> n = Ring();
  n[1].status->mutable_peers(0)->set_state(v1::PEER_STATE_DOWN);  // b->c
  n[3] = Unreachable("d");
  ClusterPicture p = BuildCluster(std::move(n));
  EXPECT_EQ(p.verdict, Health::kFailed);
  EXPECT_EQ(p.links[0].health, Health::kFailed);
  EXPECT_EQ(p.links[0].a, "b");
  EXPECT_EQ(p.links[0].b, "c");
}

TEST(Cluster, FullMeshKeepsOneSidedAndMissingPairBehaviour) {
  // a lists b and c; b lists a; c lists a (no topology: an older daemon,
  // read as a full mesh). b-c: nobody; a-c and a-b fine.
  FetchResult a = Node("a", 1), b = Node("b", 2), c = Node("c", 3);
  Peer(a, "b", 0.0003, 0.9, 0.0)->set_selection("mesh");
  Peer(b, "a", 0.0003, 0.9, 0.0)->set_selection("mesh");
  Peer(a, "c", 0.0003, 0.9, 0.0);
  Peer(c, "a", 0.0003, 0.9, 0.0);
  ClusterPicture p = BuildCluster({a, b, c});
  EXPECT_EQ(p.verdict, Health::kHealthy);  // a pair no one lists is no link (as before)
  EXPECT_FALSE(p.coverage.sampled);
  EXPECT_EQ(p.coverage.measured_pairs, 2u);
  EXPECT_EQ(p.coverage.measured_both_ways, 2u);
  const std::string text = RenderHealthText(p, {});
  EXPECT_THAT(text, HasSubstr("coverage: 2 of 3 node pairs measured directly\n"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("~")));
  nlohmann::json j = HealthToJson(p);
  EXPECT_EQ(j["coverage"]["mode"], "full_mesh");
  EXPECT_EQ(j["links"][0]["measured_both_ways"], true);
  EXPECT_EQ(j["links"][0]["a_to_b"]["selection"], "mesh");
  EXPECT_EQ(j["links"][1]["a_to_b"]["selection"], "unknown");

  // One end only, in a full mesh: a config gap, degraded as before.
  FetchResult a2 = Node("a", 1), b2 = Node("b", 2);
  Peer(a2, "b", 0.0003, 0.9, 0.0);
  ClusterPicture q = BuildCluster({a2, b2});
  EXPECT_EQ(q.verdict, Health::kDegraded);
  EXPECT_THAT(q.links[0].problems, Contains("one-sided: b does not list a as a peer"));
  // The same with b sampling: normal.
  Sampled(b2, 2, 0);
  EXPECT_EQ(BuildCluster({a2, b2}).verdict, Health::kHealthy);
}

// Two racks of three; every link healthy except what the test spoils.
std::vector<FetchResult> TwoRacks() {
  std::vector<FetchResult> nodes;
  const std::vector<std::string> names = {"h1", "h2", "h3", "h4", "h5", "h6"};
  for (size_t i = 0; i < names.size(); ++i) {
    nodes.push_back(Node(names[i], static_cast<uint16_t>(i + 1)));
    nodes.back().status->mutable_topology()->set_group(i < 3 ? "rack-a" : "rack-b");
    for (size_t j = 0; j < names.size(); ++j) {
      if (i == j) continue;
      v1::PeerStatus* p = Peer(nodes.back(), names[j], 0.0003, 0.95, 0.0);
      p->set_group(j < 3 ? "rack-a" : "rack-b");
      p->mutable_tcp()->set_loss_ratio(0.0005);
    }
  }
  return nodes;
}

v1::PeerStatus* View(std::vector<FetchResult>& nodes, const std::string& from,
                     const std::string& to) {
  for (auto& n : nodes) {
    if (n.target.name != from) continue;
    for (auto& p : *n.status->mutable_peers()) {
      if (p.name() == to) return &p;
    }
  }
  ADD_FAILURE() << from << "->" << to;
  return nullptr;
}

TEST(Cluster, HealthyRacksHaveNoSuspects) {
  ClusterPicture c = BuildCluster(TwoRacks());
  EXPECT_EQ(c.verdict, Health::kHealthy);
  EXPECT_TRUE(c.suspects.empty());
  EXPECT_EQ(HealthToJson(c)["suspects"], nlohmann::json::array());
  EXPECT_THAT(RenderHealthText(c, {}), ::testing::Not(HasSubstr("suspects")));
}

TEST(Cluster, LossyNodeLeadsTheReport) {
  auto nodes = TwoRacks();
  for (const char* p : {"h1", "h2", "h4", "h5", "h6"}) {
    View(nodes, "h3", p)->mutable_tcp()->set_loss_ratio(0.048);
    View(nodes, p, "h3")->mutable_tcp()->set_loss_ratio(0.051);
  }
  ClusterPicture c = BuildCluster(std::move(nodes));
  EXPECT_EQ(c.verdict, Health::kDegraded);
  ASSERT_EQ(c.suspects.size(), 1u);
  EXPECT_EQ(c.suspects[0].kind, SuspectKind::kNode);
  EXPECT_EQ(c.suspects[0].name, "h3");
  const std::string text = RenderHealthText(c, {});
  // The suspects come right after the one-line verdict.
  EXPECT_THAT(text.substr(text.find('\n') + 1),
              ::testing::StartsWith("suspects (most likely first)\n  1. node h3  (confidence 0.83, "
                                    "5 bad links)\n"));
  EXPECT_THAT(text, HasSubstr("h3->h1: TCP loss 4.80%"));
  const nlohmann::json j = HealthToJson(c);
  ASSERT_EQ(j["suspects"].size(), 1u);
  EXPECT_EQ(j["suspects"][0]["kind"], "node");
  EXPECT_EQ(j["suspects"][0]["name"], "h3");
  EXPECT_EQ(j["suspects"][0]["rank"], 1);
  EXPECT_EQ(j["suspects"][0]["links"].size(), 5u);
  // The loss is a problem of the link too.
  EXPECT_THAT(c.links[0].problems, Contains(HasSubstr("TCP loss 4.80% > 1.00%")));
}

// The same slow links, but h3 says its own threads wait 45 ms for a CPU:
// the host is to blame, not its NIC; a host below the threshold is not.
TEST(Cluster, OverloadedHostTakesTheBlameForItsLinks) {
  auto nodes = TwoRacks();
  for (const char* p : {"h1", "h2", "h4", "h5", "h6"}) {
    View(nodes, "h3", p)->mutable_latency()->set_p50_seconds(0.04);
    View(nodes, p, "h3")->mutable_latency()->set_p50_seconds(0.03);
  }
  nodes[2].status->mutable_host_load()->set_scheduling_delay_seconds(0.045);
  nodes[2].status->mutable_host_load()->set_cpu_pressure_ratio(0.62);
  nodes[4].status->mutable_host_load()->set_scheduling_delay_seconds(0.0004);
  ClusterPicture c = BuildCluster(std::move(nodes));
  ASSERT_EQ(c.suspects.size(), 1u);
  EXPECT_EQ(c.suspects[0].kind, SuspectKind::kOverloadedHost);
  EXPECT_EQ(c.suspects[0].name, "h3");
  EXPECT_THAT(c.suspects[0].evidence,
              Contains("scheduling delay 45.0 ms >= 10.0 ms, CPU pressure 62%"));
  EXPECT_THAT(c.node_reports[2].problems,
              Contains("host overloaded: scheduling delay 45.0 ms >= 10.0 ms, CPU pressure 62%"));
  EXPECT_EQ(c.node_reports[4].health, Health::kHealthy);
  const nlohmann::json j = HealthToJson(c);
  EXPECT_EQ(j["suspects"][0]["kind"], "overloaded_host");
  EXPECT_EQ(j["nodes"][2]["host_load"]["scheduling_delay_seconds"], 0.045);
  EXPECT_TRUE(j["nodes"][0]["host_load"]["scheduling_delay_seconds"].is_null());
  EXPECT_EQ(j["nodes"][2]["thresholds"]["scheduling_delay_seconds"], 0.01);

  // A node's own threshold (thresholds.scheduling_delay) is the one used.
  auto relaxed = TwoRacks();
  relaxed[2].status->mutable_host_load()->set_scheduling_delay_seconds(0.045);
  relaxed[2].status->mutable_thresholds()->set_scheduling_delay_seconds(0.1);
  EXPECT_TRUE(BuildCluster(std::move(relaxed)).suspects.empty());
}

// An overload that starts: a peer's slow transfer to the host shows before
// the host's mean over every thread crosses the threshold. While its main
// threads' recent delay is at or above it, the link is not named alone (nor
// is the host: two threads over 3 s are no evidence against it).
TEST(Cluster, ALinkToAHostStarvedNowIsNotNamedAlone) {
  for (const bool starved : {false, true}) {
    auto nodes = TwoRacks();
    View(nodes, "h1", "h3")->mutable_latency()->set_p50_seconds(0.04);
    v1::HostLoad* load = nodes[2].status->mutable_host_load();
    load->set_scheduling_delay_seconds(0.002);
    load->set_recent_scheduling_delay_seconds(starved ? 0.05 : 0.001);
    ClusterPicture c = BuildCluster(std::move(nodes));
    if (starved) {
      EXPECT_TRUE(c.suspects.empty());
      EXPECT_EQ(HealthToJson(c)["nodes"][2]["host_load"]["recent_scheduling_delay_seconds"], 0.05);
    } else {
      ASSERT_EQ(c.suspects.size(), 1u);
      EXPECT_EQ(c.suspects[0].kind, SuspectKind::kLink);
    }
  }
}

// An overload that ended: the transfers measured while it lasted crawled
// for the host's reason. Until the next transfer, the link is not named on
// them; a transfer measured after the host's last starved read is the
// link's again.
TEST(Cluster, ATransferMeasuredWhileAnEndWasStarvedIsNotTheLinks) {
  const absl::Time starved_until = absl::FromUnixSeconds(1'700'000'100);
  for (const int measured_after : {-5, 10}) {
    auto nodes = TwoRacks();
    nodes[1].status->mutable_host_load()->set_scheduling_delay_seconds(0.002);
    *nodes[1].status->mutable_host_load()->mutable_starved_until() =
        ToProtoTimestamp(starved_until);
    v1::PeerStatus* slow = View(nodes, "h6", "h2");
    slow->mutable_bandwidth()->set_link_ratio(0.01);
    *slow->mutable_bandwidth()->mutable_measured_at() =
        ToProtoTimestamp(starved_until + absl::Seconds(measured_after));
    ClusterPicture c = BuildCluster(std::move(nodes));
    if (measured_after < 0) {
      EXPECT_TRUE(c.suspects.empty());
      EXPECT_EQ(c.verdict, Health::kHealthy);
    } else {
      ASSERT_EQ(c.suspects.size(), 1u);
      EXPECT_EQ(c.suspects[0].name, "h2 <-> h6");
    }
  }
}

// A node's topology labels (its config's labels:) in --json and the text;
// a link view's jitter.
TEST(Cluster, NodeLabelsAndLinkJitterAreShown) {
  auto nodes = TwoRacks();
  (*nodes[0].status->mutable_labels())["zone"] = "eu-1a";
  (*nodes[0].status->mutable_labels())["rack"] = "r12";
  View(nodes, "h1", "h2")->mutable_latency()->set_jitter_seconds(0.0004);
  ClusterPicture c = BuildCluster(std::move(nodes));
  const nlohmann::json j = HealthToJson(c);
  EXPECT_EQ(j["nodes"][0]["labels"], (nlohmann::json{{"rack", "r12"}, {"zone", "eu-1a"}}));
  EXPECT_EQ(j["nodes"][1]["labels"], nlohmann::json::object());
  bool found = false;
  for (const nlohmann::json& link : j["links"]) {
    if (link["a"] == "h1" && link["b"] == "h2") {
      found = true;
      EXPECT_DOUBLE_EQ(link["a_to_b"]["latency_jitter_ms"].get<double>(), 0.4);
      EXPECT_TRUE(link["b_to_a"]["latency_jitter_ms"].is_null());
    }
  }
  EXPECT_TRUE(found) << j["links"].dump();
  HealthTextOptions wide;
  wide.wide = true;
  const std::string text = RenderHealthText(c, wide);
  EXPECT_THAT(text, HasSubstr(", labels rack=r12,zone=eu-1a\n"));
  EXPECT_THAT(RenderHealthText(c, {}), Not(HasSubstr("labels")));
  EXPECT_EQ(text.find("labels", text.find("labels") + 1), std::string::npos) << text;
}

TEST(Cluster, UplinkBetweenRacksFromLatency) {
  auto nodes = TwoRacks();
  for (const char* a : {"h1", "h2", "h3"}) {
    for (const char* b : {"h4", "h5", "h6"}) {
      View(nodes, a, b)->mutable_latency()->set_p50_seconds(0.004);
      View(nodes, b, a)->mutable_latency()->set_p50_seconds(0.004);
    }
  }
  ClusterPicture c = BuildCluster(std::move(nodes));
  ASSERT_EQ(c.suspects.size(), 1u);
  EXPECT_EQ(c.suspects[0].kind, SuspectKind::kGroupUplink);
  EXPECT_EQ(c.suspects[0].name, "rack-a <-> rack-b");
}

// The unreachable daemon's group comes from its peers' configs; its peers
// see it down, and nothing else is blamed.
TEST(Cluster, DeadDaemonIsTheNode) {
  auto nodes = TwoRacks();
  nodes.erase(nodes.begin() + 4);  // h5
  nodes.push_back(Unreachable("h5"));
  for (const char* p : {"h1", "h2", "h3", "h4", "h6"}) {
    View(nodes, p, "h5")->set_state(v1::PEER_STATE_DOWN);
  }
  ClusterPicture c = BuildCluster(std::move(nodes));
  ASSERT_EQ(c.suspects.size(), 1u);
  EXPECT_EQ(c.suspects[0].kind, SuspectKind::kNode);
  EXPECT_EQ(c.suspects[0].name, "h5");
  EXPECT_THAT(c.suspects[0].evidence, Contains("its daemon does not answer"));
}

// 3 retransmissions out of 150 segments are 2%, and mean nothing; the same
// ratio over 20,000 segments is a loss.
TEST(Cluster, LossOverFewSegmentsIsNoEvidence) {
  auto nodes = TwoRacks();
  View(nodes, "h1", "h2")->mutable_tcp()->set_loss_ratio(0.02);
  View(nodes, "h1", "h2")->mutable_tcp()->set_window_sent_segments(150);
  ClusterPicture quiet = BuildCluster(nodes);
  EXPECT_EQ(quiet.verdict, Health::kHealthy);
  EXPECT_TRUE(quiet.suspects.empty());
  // Nor is it evidence that the direction is fine: h3's other four links
  // are lossy, and this weak reading does not count against blaming h3.
  for (const char* p : {"h2", "h4", "h5", "h6"}) {
    View(nodes, p, "h3")->mutable_tcp()->set_loss_ratio(0.05);
  }
  View(nodes, "h1", "h3")->mutable_tcp()->set_loss_ratio(0.07);
  View(nodes, "h1", "h3")->mutable_tcp()->set_window_sent_segments(300);
  View(nodes, "h3", "h1")->mutable_tcp()->set_loss_ratio(0.06);
  View(nodes, "h3", "h1")->mutable_tcp()->set_window_sent_segments(200);
  ClusterPicture weak = BuildCluster(nodes);
  ASSERT_EQ(weak.suspects.size(), 1u);
  EXPECT_EQ(weak.suspects[0].name, "h3");
  EXPECT_EQ(weak.suspects[0].bad_links, 4u);
  EXPECT_EQ(weak.suspects[0].fine_links, 0u);
  for (const char* p : {"h2", "h4", "h5", "h6"}) {
    View(nodes, p, "h3")->mutable_tcp()->set_loss_ratio(0.0005);
  }
  View(nodes, "h1", "h3")->mutable_tcp()->set_loss_ratio(0.0005);
  View(nodes, "h3", "h1")->mutable_tcp()->set_loss_ratio(0.0005);
  View(nodes, "h1", "h2")->mutable_tcp()->set_window_sent_segments(20000);
  ClusterPicture busy = BuildCluster(std::move(nodes));
  EXPECT_EQ(busy.verdict, Health::kDegraded);
  ASSERT_EQ(busy.suspects.size(), 1u);
  EXPECT_EQ(busy.suspects[0].name, "h1 <-> h2");
}

// Still connecting is no evidence either way; a clock offset is no network fault.
TEST(Cluster, ConnectingAndClockOffsetBlameNobody) {
  auto nodes = TwoRacks();
  View(nodes, "h1", "h2")->set_state(v1::PEER_STATE_CONNECTING);
  View(nodes, "h4", "h6")->mutable_clock()->set_offset_seconds(0.5);
  ClusterPicture c = BuildCluster(std::move(nodes));
  EXPECT_NE(c.verdict, Health::kHealthy);
  EXPECT_TRUE(c.suspects.empty());
}

// The state model (docs/design.md, "Now, history and jobs").
const absl::Time kModelNow = absl::FromUnixSeconds(1'800'000'000);

std::vector<FetchResult> TwoRacksAt(absl::Time now) {
  auto nodes = TwoRacks();
  for (auto& n : nodes) {
    *n.status->mutable_now() = ToProtoTimestamp(now);
    *n.status->mutable_started_at() = ToProtoTimestamp(now - absl::Hours(5));
  }
  return nodes;
}

// node-c was killed and restarted: its links are up again. The failures of
// that hour are history: shown, with their age, and they blame nobody.
TEST(Cluster, RecoveredFailuresAreHistoryAndBlameNobody) {
  auto nodes = TwoRacksAt(kModelNow);
  for (const char* p : {"h1", "h2", "h4", "h5", "h6"}) {
    v1::PeerStatus* v = View(nodes, p, "h3");
    v->set_failures_in_window(5);
    v->set_drops_in_window(1);
    v->mutable_last_failure()->set_reason(v1::FAILURE_REASON_REFUSED);
    *v->mutable_last_failure()->mutable_time() = ToProtoTimestamp(kModelNow - absl::Minutes(3));
    *v->mutable_up_since() = ToProtoTimestamp(kModelNow - absl::Minutes(3));
  }
  *nodes[2].status->mutable_started_at() = ToProtoTimestamp(kModelNow - absl::Minutes(3));
  ClusterPicture c = BuildCluster(std::move(nodes));
  EXPECT_EQ(c.verdict, Health::kHealthy);
  EXPECT_TRUE(c.suspects.empty());
  EXPECT_TRUE(c.reasons.empty());
  const std::string text = RenderHealthText(c, {});
  EXPECT_THAT(text, HasSubstr("cluster: healthy (6 daemons asked"));
  EXPECT_THAT(text, HasSubstr("history (within the failure window; not counted in the verdict)"));
  EXPECT_THAT(text, HasSubstr("h1->h3: recovered 3m ago after 5 failures (last: refused)"));
  EXPECT_THAT(text, HasSubstr("node h3: daemon started 3m ago"));
  const nlohmann::json j = HealthToJson(c);
  EXPECT_EQ(j["verdict"], "healthy");
  EXPECT_EQ(j["reasons"], nlohmann::json::array());
}

// A link that keeps dropping is a present fault although it is up right now;
// once its last drop is old, it is history again.
TEST(Cluster, FlappingIsNowUntilItStops) {
  auto nodes = TwoRacksAt(kModelNow);
  for (const auto& [a, b] : {std::pair{"h1", "h2"}, std::pair{"h2", "h1"}}) {
    v1::PeerStatus* v = View(nodes, a, b);
    v->set_failures_in_window(4);
    v->set_drops_in_window(4);
    v->mutable_last_failure()->set_reason(v1::FAILURE_REASON_RESET);
    *v->mutable_last_failure()->mutable_time() = ToProtoTimestamp(kModelNow - absl::Minutes(2));
  }
  ClusterPicture flapping = BuildCluster(nodes);
  EXPECT_EQ(flapping.verdict, Health::kDegraded);
  ASSERT_EQ(flapping.suspects.size(), 1u);
  EXPECT_EQ(flapping.suspects[0].name, "h1 <-> h2");
  EXPECT_THAT(flapping.reasons, ElementsAre("1 link flapping (h1<->h2 4 drops)"));
  for (const auto& [a, b] : {std::pair{"h1", "h2"}, std::pair{"h2", "h1"}}) {
    *View(nodes, a, b)->mutable_last_failure()->mutable_time() =
        ToProtoTimestamp(kModelNow - absl::Minutes(20));
  }
  ClusterPicture settled = BuildCluster(std::move(nodes));
  EXPECT_EQ(settled.verdict, Health::kHealthy);
  EXPECT_TRUE(settled.suspects.empty());
}

// The verdict's first line says why; latency is judged on the last minute.
TEST(Cluster, VerdictSaysWhyAndJudgesTheRecentLatency) {
  auto nodes = TwoRacksAt(kModelNow);
  View(nodes, "h1", "h3")->mutable_tcp()->set_loss_ratio(0.048);
  View(nodes, "h1", "h3")->mutable_tcp()->set_window_sent_segments(20000);
  // A slow spell five minutes ago: the window's p50 still shows it, the
  // last minute's does not.
  View(nodes, "h4", "h5")->mutable_latency()->set_p50_seconds(0.009);
  View(nodes, "h4", "h5")->mutable_latency()->set_recent_p50_seconds(0.0003);
  ClusterPicture c = BuildCluster(std::move(nodes));
  EXPECT_EQ(c.verdict, Health::kDegraded);
  EXPECT_THAT(c.reasons, ElementsAre("1 link lossy (h1<->h3 4.8%)"));
  EXPECT_THAT(RenderHealthText(c, {}),
              HasSubstr("cluster: degraded: 1 link lossy (h1<->h3 4.8%) (6 daemons asked, 6 "
                        "nodes, 15 links)\n"));
}

// A daemon that does not answer us while its transport still answers its
// peers, who hear the daemon is silent: the daemon is stuck, not the network.
TEST(Cluster, FrozenDaemonWhoseTransportAnswersIsNamed) {
  auto nodes = TwoRacksAt(kModelNow);
  nodes.erase(nodes.begin() + 1);  // h2
  nodes.push_back(Unreachable("h2"));
  for (const char* p : {"h1", "h3", "h4", "h5", "h6"}) {
    View(nodes, p, "h2")->mutable_peer_daemon()->set_silent_seconds(12);
  }
  ClusterPicture c = BuildCluster(std::move(nodes));
  EXPECT_EQ(c.verdict, Health::kFailed);
  ASSERT_EQ(c.suspects.size(), 1u);
  EXPECT_EQ(c.suspects[0].kind, SuspectKind::kDaemon);
  EXPECT_EQ(c.suspects[0].name, "h2");
  EXPECT_GE(c.suspects[0].confidence, 0.9);
  EXPECT_THAT(c.suspects[0].evidence_self, ElementsAre("its daemon does not answer"));
  EXPECT_THAT(c.suspects[0].evidence_peers,
              Contains(HasSubstr("its transport says the daemon has been silent for 12 s")));
  EXPECT_THAT(c.reasons, Contains("1 daemon silent while its transport answers (h2)"));
}

// Every peer sees the node down and its daemon does not answer: the
// clearest case there is, named at once and surely.
TEST(Cluster, KilledNodeIsNamedWithConfidenceNearOne) {
  FetchResult a = Node("a", 1), b = Node("b", 2);
  Peer(a, "b", 0.0003, 0.95, 0);
  Peer(b, "a", 0.0003, 0.95, 0);
  for (FetchResult* n : {&a, &b}) {
    v1::PeerStatus* c = Peer(*n, "c", 0.0003, 0.95, 0);
    c->set_state(v1::PEER_STATE_DOWN);
    c->mutable_last_failure()->set_reason(v1::FAILURE_REASON_REFUSED);
  }
  ClusterPicture p = BuildCluster({a, b, Unreachable("c")});
  ASSERT_FALSE(p.suspects.empty());
  EXPECT_EQ(p.suspects[0].kind, SuspectKind::kNode);
  EXPECT_EQ(p.suspects[0].name, "c");
  EXPECT_GE(p.suspects[0].confidence, 0.95);
  EXPECT_THAT(p.suspects[0].evidence[0],
              HasSubstr("its daemon does not answer and all 2 peers probing it see it down"));
  EXPECT_THAT(p.reasons[0], HasSubstr("1 node unreachable (c)"));
}

// We cannot reach h2, but its peers disagree: h1 (where we stand) sees it
// down, the others up with its daemon alive. That is a path, not the node.
TEST(Cluster, UnreachableFromOurSideOfAPartitionIsNoDeadNode) {
  auto nodes = TwoRacksAt(kModelNow);
  nodes.erase(nodes.begin() + 1);  // h2
  nodes.push_back(Unreachable("h2"));
  View(nodes, "h1", "h2")->set_state(v1::PEER_STATE_DOWN);
  for (const char* p : {"h3", "h4", "h5", "h6"}) {
    View(nodes, p, "h2")->mutable_peer_daemon()->set_silent_seconds(0.4);
  }
  ClusterPicture c = BuildCluster(std::move(nodes));
  for (const Suspect& s : c.suspects) {
    EXPECT_NE(s.kind, SuspectKind::kNode) << s.name;
    EXPECT_NE(s.kind, SuspectKind::kDaemon) << s.name;
  }
  ASSERT_FALSE(c.suspects.empty());
  EXPECT_EQ(c.suspects[0].name, "h1 <-> h2");
}

// Killed a moment ago: its port refuses us, two peers have probed it since
// and see it down, three have not yet. The node at once, not two links.
TEST(Cluster, RefusingDaemonSeenDownByTheFirstPeersIsTheNode) {
  auto nodes = TwoRacksAt(kModelNow);
  nodes.erase(nodes.begin() + 2);  // h3
  FetchResult dead = Unreachable("h3");
  dead.error_code = "UNAVAILABLE";
  dead.error =
      "unavailable: failed to connect to all addresses; last error: UNKNOWN: "
      "ipv4:127.0.0.1:9: Failed to connect to remote host: Connection refused";
  nodes.push_back(dead);
  for (const char* p : {"h1", "h5"}) {
    View(nodes, p, "h3")->set_state(v1::PEER_STATE_DOWN);
    View(nodes, p, "h3")->mutable_last_failure()->set_reason(v1::FAILURE_REASON_RESET);
  }
  ClusterPicture c = BuildCluster(std::move(nodes));
  ASSERT_EQ(c.suspects.size(), 1u);
  EXPECT_EQ(c.suspects[0].kind, SuspectKind::kNode);
  EXPECT_EQ(c.suspects[0].name, "h3");
  EXPECT_THAT(c.suspects[0].evidence[0], HasSubstr("refuses connections"));
}

// A partition, before the probe in flight times out (5 s) and once past the
// settle time (2 s): what both ends sent is
// unacknowledged. Failed now, the link named, nobody else.
TEST(Cluster, UnacknowledgedBothWaysIsTheLinkAtOnce) {
  auto nodes = TwoRacksAt(kModelNow);
  for (auto [from, to] : {std::pair{"h2", "h6"}, std::pair{"h6", "h2"}}) {
    v1::PeerUnacknowledged* u = View(nodes, from, to)->mutable_unacknowledged();
    u->set_retransmissions(3);
    u->set_seconds(2.6);
  }
  ClusterPicture c = BuildCluster(std::move(nodes));
  EXPECT_EQ(c.verdict, Health::kFailed);
  ASSERT_EQ(c.suspects.size(), 1u);
  EXPECT_EQ(c.suspects[0].name, "h2 <-> h6");
  EXPECT_THAT(c.suspects[0].evidence,
              Contains(HasSubstr("not answering: sent data unacknowledged for 2.6 s")));
  EXPECT_THAT(c.reasons, Contains(HasSubstr("1 link not answering (h2<->h6)")));
  EXPECT_EQ(HealthToJson(c)["links"][0]["a_to_b"]["unacknowledged_seconds"], 2.6);
}

// h4's transport was killed and restarted 2 s ago: its peers that have not
// sent since still show the pair to the dead process up. Broken now; the node.
TEST(Cluster, PairsOlderThanThePeersTransportAreBroken) {
  auto nodes = TwoRacksAt(kModelNow);
  for (auto& n : nodes) {
    *n.status->mutable_transport()->mutable_started_at() =
        ToProtoTimestamp(kModelNow - absl::Hours(5));
    for (auto& p : *n.status->mutable_peers()) {
      *p.mutable_up_since() = ToProtoTimestamp(kModelNow - absl::Hours(4));
    }
  }
  v1::TransportStatus* t = nodes[3].status->mutable_transport();  // h4
  *t->mutable_started_at() = ToProtoTimestamp(kModelNow - absl::Seconds(2));
  t->set_restarts(1);
  t->set_last_exit("probe transport exited: killed by signal 9");
  *t->mutable_last_exit_time() = ToProtoTimestamp(kModelNow - absl::Seconds(2.5));
  View(nodes, "h1", "h4")->set_state(v1::PEER_STATE_DOWN);  // noticed already
  ClusterPicture c = BuildCluster(std::move(nodes));
  EXPECT_EQ(c.verdict, Health::kFailed);
  ASSERT_EQ(c.suspects.size(), 1u);
  EXPECT_EQ(c.suspects[0].kind, SuspectKind::kNode);
  EXPECT_EQ(c.suspects[0].name, "h4");
  EXPECT_EQ(c.suspects[0].bad_links, 5u);
  EXPECT_THAT(c.suspects[0].evidence,
              Contains(HasSubstr("pair broken: h4's transport restarted 2s ago")));
  for (const auto& n : c.node_reports) {
    if (n.name == "h4") {
      EXPECT_THAT(n.history,
                  Contains("transport restarted 2s ago (probe transport exited: killed by "
                           "signal 9)"));
    }
  }
  // Once every peer has a pair to the new process: history only.
  auto again = TwoRacksAt(kModelNow);
  *again[3].status->mutable_transport() = *t;
  for (auto& n : again) {
    for (auto& p : *n.status->mutable_peers()) {
      *p.mutable_up_since() = ToProtoTimestamp(kModelNow - absl::Seconds(1));
    }
  }
  ClusterPicture healed = BuildCluster(std::move(again));
  EXPECT_EQ(healed.verdict, Health::kHealthy);
  EXPECT_TRUE(healed.suspects.empty());
}

// Every transport started hours ago, every view up since then.
std::vector<FetchResult> SettledRacks() {
  auto nodes = TwoRacksAt(kModelNow);
  for (auto& n : nodes) {
    *n.status->mutable_transport()->mutable_started_at() =
        ToProtoTimestamp(kModelNow - absl::Hours(5));
    for (auto& p : *n.status->mutable_peers()) {
      *p.mutable_up_since() = ToProtoTimestamp(kModelNow - absl::Hours(4));
    }
  }
  return nodes;
}

// A failed attempt; the first one after the view was up is the drop.
void FailedAt(v1::PeerStatus* v, absl::Duration ago, v1::FailureReason reason) {
  if (v->state() != v1::PEER_STATE_DOWN) {
    *v->mutable_down_since() = ToProtoTimestamp(kModelNow - ago);
  }
  v->set_state(v1::PEER_STATE_DOWN);
  v->set_failures_in_window(v->failures_in_window() + 1);
  v->mutable_last_failure()->set_reason(reason);
  *v->mutable_last_failure()->mutable_time() = ToProtoTimestamp(kModelNow - ago);
}

void RecoveredAt(v1::PeerStatus* v, absl::Duration ago) {
  v->set_state(v1::PEER_STATE_UP);
  v->set_failures_in_window(3);
  *v->mutable_up_since() = ToProtoTimestamp(kModelNow - ago);
}

// h3 was killed for a minute and restarted 4 s ago: two peers are up again,
// three wait out their reconnect backoff, their last failure (refused, by
// the dead node) older than h3's new transport. Nobody is to blame: no
// suspect, degraded until they are up, saying why.
TEST(Cluster, PeersReconnectingToARestartedNodeBlameNobody) {
  auto nodes = SettledRacks();
  *nodes[2].status->mutable_started_at() = ToProtoTimestamp(kModelNow - absl::Seconds(5));
  *nodes[2].status->mutable_transport()->mutable_started_at() =
      ToProtoTimestamp(kModelNow - absl::Seconds(4));
  for (const char* p : {"h1", "h2", "h5"}) {
    FailedAt(View(nodes, p, "h3"), absl::Seconds(9), v1::FAILURE_REASON_REFUSED);
  }
  for (const char* p : {"h4", "h6"}) RecoveredAt(View(nodes, p, "h3"), absl::Seconds(3));
  for (auto& p : *nodes[2].status->mutable_peers()) {
    *p.mutable_up_since() = ToProtoTimestamp(kModelNow - absl::Seconds(3));
  }
  ClusterPicture c = BuildCluster(nodes);
  EXPECT_THAT(c.suspects, IsEmpty());
  EXPECT_EQ(c.verdict, Health::kDegraded);
  EXPECT_THAT(c.reasons, Contains(HasSubstr("3 links connecting")));
  const nlohmann::json j = HealthToJson(c);
  EXPECT_THAT(j.dump(), HasSubstr("h1->h3: reconnecting: down since before a session of either "
                                  "end recovered 3s ago, no failed attempt since (last: refused)"));
  // Before any peer is back, the restart alone says so.
  auto none_back = nodes;
  for (const char* p : {"h4", "h6"}) {
    FailedAt(View(none_back, p, "h3"), absl::Seconds(9), v1::FAILURE_REASON_REFUSED);
  }
  ClusterPicture waiting = BuildCluster(std::move(none_back));
  EXPECT_THAT(waiting.suspects, IsEmpty());
  EXPECT_THAT(HealthToJson(waiting).dump(),
              HasSubstr("h4->h3: reconnecting: down since before h3's transport started 4s ago"));

  // An attempt that failed after the restart is evidence again: the link.
  FailedAt(View(nodes, "h1", "h3"), absl::Seconds(1), v1::FAILURE_REASON_TIMEOUT);
  ClusterPicture failed = BuildCluster(nodes);
  ASSERT_EQ(failed.suspects.size(), 1u);
  EXPECT_EQ(failed.suspects[0].name, "h1 <-> h3");
  EXPECT_EQ(failed.verdict, Health::kFailed);

  // Every peer reconnected: healthy, the failures history.
  auto healed = SettledRacks();
  *healed[2].status->mutable_transport()->mutable_started_at() =
      ToProtoTimestamp(kModelNow - absl::Seconds(40));
  for (const char* p : {"h1", "h2", "h4", "h5", "h6"}) {
    RecoveredAt(View(healed, p, "h3"), absl::Seconds(30));
  }
  ClusterPicture clear = BuildCluster(std::move(healed));
  EXPECT_THAT(clear.suspects, IsEmpty());
  EXPECT_EQ(clear.verdict, Health::kHealthy);
}

// h3 restarted a second ago and h1's first attempt after it failed (h3's
// daemon was not accepting pairs yet): h1->h3 has been cut only since h3
// came back, too short to tell from the restart; the link once it lasts.
TEST(Cluster, AnAttemptDuringARestartIsNoLinkUntilItLasts) {
  auto nodes = SettledRacks();
  *nodes[2].status->mutable_started_at() = ToProtoTimestamp(kModelNow - absl::Seconds(2));
  *nodes[2].status->mutable_transport()->mutable_started_at() =
      ToProtoTimestamp(kModelNow - absl::Seconds(1));
  for (const char* p : {"h1", "h2", "h4", "h5", "h6"}) {
    FailedAt(View(nodes, p, "h3"), absl::Seconds(30), v1::FAILURE_REASON_REFUSED);
  }
  for (const char* p : {"h2", "h4", "h5", "h6"}) {
    RecoveredAt(View(nodes, p, "h3"), absl::Milliseconds(800));
  }
  FailedAt(View(nodes, "h1", "h3"), absl::Milliseconds(900), v1::FAILURE_REASON_REFUSED);
  for (auto& p : *nodes[2].status->mutable_peers()) {
    *p.mutable_up_since() = ToProtoTimestamp(kModelNow - absl::Milliseconds(800));
  }
  EXPECT_THAT(BuildCluster(nodes).suspects, IsEmpty());

  // Its attempt refused half a second after h3's transport started, 4 s
  // ago, and its backoff runs: h3's start-up refused it, not the link.
  auto starting = SettledRacks();
  *starting[2].status->mutable_transport()->mutable_started_at() =
      ToProtoTimestamp(kModelNow - absl::Seconds(4));
  for (const char* p : {"h1", "h2", "h4", "h5", "h6"}) {
    FailedAt(View(starting, p, "h3"), absl::Seconds(30), v1::FAILURE_REASON_REFUSED);
  }
  FailedAt(View(starting, "h1", "h3"), absl::Milliseconds(3500), v1::FAILURE_REASON_REFUSED);
  ClusterPicture waiting = BuildCluster(std::move(starting));
  EXPECT_THAT(waiting.suspects, IsEmpty());
  EXPECT_EQ(waiting.verdict, Health::kDegraded);
  EXPECT_THAT(HealthToJson(waiting).dump(),
              HasSubstr("h1->h3: reconnecting: refused while h3's transport was starting (4s "
                        "ago), no failed attempt since"));

  // Still down 5 s after h3 came back, with a failed attempt since: the link.
  auto later = SettledRacks();
  *later[2].status->mutable_transport()->mutable_started_at() =
      ToProtoTimestamp(kModelNow - absl::Seconds(6));
  for (const char* p : {"h2", "h4", "h5", "h6"}) {
    RecoveredAt(View(later, p, "h3"), absl::Seconds(5));
  }
  FailedAt(View(later, "h1", "h3"), absl::Seconds(30), v1::FAILURE_REASON_REFUSED);
  FailedAt(View(later, "h1", "h3"), absl::Seconds(1), v1::FAILURE_REASON_REFUSED);
  ClusterPicture c = BuildCluster(std::move(later));
  ASSERT_EQ(c.suspects.size(), 1u);
  EXPECT_EQ(c.suspects[0].name, "h1 <-> h3");
}

// The dead node itself, before it is restarted: its daemon does not answer
// and every peer sees it down. No restart to reconnect to: the node, at once.
TEST(Cluster, ADeadNodeIsNoReconnect) {
  auto nodes = SettledRacks();
  for (const char* p : {"h4", "h6"}) RecoveredAt(View(nodes, p, "h1"), absl::Seconds(20));
  nodes.erase(nodes.begin() + 2);  // h3
  nodes.push_back(Unreachable("h3"));
  for (const char* p : {"h1", "h2", "h4", "h5", "h6"}) {
    FailedAt(View(nodes, p, "h3"), absl::Seconds(30), v1::FAILURE_REASON_REFUSED);
  }
  ClusterPicture c = BuildCluster(std::move(nodes));
  ASSERT_EQ(c.suspects.size(), 1u);
  EXPECT_EQ(c.suspects[0].kind, SuspectKind::kNode);
  EXPECT_EQ(c.suspects[0].name, "h3");
  EXPECT_GE(c.suspects[0].confidence, 0.99);
}

// h5's transport was killed half a second ago; its daemon answers and has
// not restarted it yet. Two peers saw their pair fail, three still hold the
// pair to the dead process: the node, not two links.
TEST(Cluster, TransportNotRunningIsTheNodeHoweverFewNoticed) {
  auto nodes = SettledRacks();
  v1::TransportStatus* t = nodes[4].status->mutable_transport();
  t->clear_started_at();
  t->set_restarts(1);
  t->set_last_exit("probe transport exited: killed by signal 9");
  *t->mutable_last_exit_time() = ToProtoTimestamp(kModelNow - absl::Milliseconds(500));
  for (const char* p : {"h1", "h4"}) {
    FailedAt(View(nodes, p, "h5"), absl::Milliseconds(400), v1::FAILURE_REASON_RESET);
  }
  ClusterPicture c = BuildCluster(std::move(nodes));
  ASSERT_EQ(c.suspects.size(), 1u);
  EXPECT_EQ(c.suspects[0].kind, SuspectKind::kNode);
  EXPECT_EQ(c.suspects[0].name, "h5");
  EXPECT_EQ(c.suspects[0].bad_links, 5u);
  EXPECT_THAT(c.suspects[0].evidence[0], HasSubstr("its transport process died: 5 of the 5 peers"));
  EXPECT_THAT(c.suspects[0].evidence,
              Contains(HasSubstr("pair broken: h5's transport is not running")));
  EXPECT_EQ(c.verdict, Health::kFailed);
}

// Restarted 2 s ago: one peer still holds a pair to the old process, the
// four others wait to reconnect. The one stale pair is the node's restart,
// not that peer's link.
TEST(Cluster, OneStalePairAmongReconnectsIsTheNode) {
  auto nodes = SettledRacks();
  *nodes[4].status->mutable_transport()->mutable_started_at() =
      ToProtoTimestamp(kModelNow - absl::Seconds(2));
  for (const char* p : {"h1", "h2", "h3", "h4"}) {
    FailedAt(View(nodes, p, "h5"), absl::Seconds(3), v1::FAILURE_REASON_RESET);
  }
  ClusterPicture c = BuildCluster(std::move(nodes));
  ASSERT_EQ(c.suspects.size(), 1u);
  EXPECT_EQ(c.suspects[0].kind, SuspectKind::kNode);
  EXPECT_EQ(c.suspects[0].name, "h5");
}

// h1's firewall rejected its Gloo ports and was removed 6 s ago: three
// peers are up again, h5 (and h1 towards h5) last failed before that and
// wait out their backoff. Reconnecting, not a link; while the firewall
// stood and every attempt failed, the node.
TEST(Cluster, ReconnectsAfterARepairBlameNobody) {
  auto nodes = SettledRacks();
  for (const char* p : {"h2", "h3", "h4", "h6"}) {
    RecoveredAt(View(nodes, p, "h1"), absl::Seconds(5));
    RecoveredAt(View(nodes, "h1", p), absl::Seconds(5));
  }
  FailedAt(View(nodes, "h5", "h1"), absl::Seconds(8), v1::FAILURE_REASON_REFUSED);
  FailedAt(View(nodes, "h1", "h5"), absl::Seconds(7), v1::FAILURE_REASON_REFUSED);
  ClusterPicture c = BuildCluster(nodes);
  EXPECT_THAT(c.suspects, IsEmpty());
  EXPECT_EQ(c.verdict, Health::kDegraded);
  EXPECT_THAT(HealthToJson(c).dump(),
              HasSubstr("h5->h1: reconnecting: down since before a session of either end "
                        "recovered 5s ago"));

  // The firewall still up: every attempt fails, fresh failures. The node.
  auto standing = SettledRacks();
  for (const char* p : {"h2", "h3", "h4", "h5", "h6"}) {
    FailedAt(View(standing, p, "h1"), absl::Seconds(1), v1::FAILURE_REASON_REFUSED);
    FailedAt(View(standing, "h1", p), absl::Seconds(1), v1::FAILURE_REASON_REFUSED);
  }
  ClusterPicture firewall = BuildCluster(std::move(standing));
  ASSERT_FALSE(firewall.suspects.empty());
  EXPECT_EQ(firewall.suspects[0].kind, SuspectKind::kNode);
  EXPECT_EQ(firewall.suspects[0].name, "h1");
  EXPECT_EQ(firewall.suspects.size(), 1u);

  // A partition between two hosts whose other sessions never failed: no
  // recovery anywhere, the link at every attempt.
  auto cut = SettledRacks();
  FailedAt(View(cut, "h2", "h4"), absl::Seconds(20), v1::FAILURE_REASON_TIMEOUT);
  FailedAt(View(cut, "h4", "h2"), absl::Seconds(20), v1::FAILURE_REASON_TIMEOUT);
  ClusterPicture partition = BuildCluster(std::move(cut));
  ASSERT_EQ(partition.suspects.size(), 1u);
  EXPECT_EQ(partition.suspects[0].name, "h2 <-> h4");
}

// h1's firewall starts rejecting its Gloo ports: h6 noticed 0.3 s ago, the
// other peers probe it within their next interval. Too fresh to tell a link
// from the start of a node's fault: no suspect yet (failed all the same).
// Once the others noticed, the node; a link that stays alone past the
// settle time is the link.
TEST(Cluster, AFreshLoneCutIsNoLinkYet) {
  auto nodes = SettledRacks();
  v1::PeerStatus* v = View(nodes, "h6", "h1");
  FailedAt(v, absl::Milliseconds(300), v1::FAILURE_REASON_REFUSED);
  *v->mutable_down_since() = ToProtoTimestamp(kModelNow - absl::Milliseconds(300));
  ClusterPicture fresh = BuildCluster(nodes);
  EXPECT_THAT(fresh.suspects, IsEmpty());
  EXPECT_EQ(fresh.verdict, Health::kFailed);

  for (const char* p : {"h2", "h3", "h4"}) {
    FailedAt(View(nodes, p, "h1"), absl::Milliseconds(100), v1::FAILURE_REASON_REFUSED);
  }
  ClusterPicture noticed = BuildCluster(nodes);
  ASSERT_EQ(noticed.suspects.size(), 1u);
  EXPECT_EQ(noticed.suspects[0].name, "h1");
  EXPECT_EQ(noticed.suspects[0].kind, SuspectKind::kNode);

  // A partition: the link alone, once cut for the settle time. Retries
  // after the drop do not make it fresh again (down_since is the drop).
  auto cut = SettledRacks();
  v1::PeerUnacknowledged* u = View(cut, "h2", "h4")->mutable_unacknowledged();
  u->set_retransmissions(2);
  u->set_seconds(1.2);
  EXPECT_THAT(BuildCluster(cut).suspects, IsEmpty());
  u->set_seconds(2.5);
  ClusterPicture named = BuildCluster(cut);
  ASSERT_EQ(named.suspects.size(), 1u);
  EXPECT_EQ(named.suspects[0].name, "h2 <-> h4");
  auto retried = SettledRacks();
  v1::PeerStatus* down = View(retried, "h2", "h4");
  FailedAt(down, absl::Milliseconds(200), v1::FAILURE_REASON_TIMEOUT);
  *down->mutable_down_since() = ToProtoTimestamp(kModelNow - absl::Seconds(40));
  ClusterPicture still = BuildCluster(std::move(retried));
  ASSERT_EQ(still.suspects.size(), 1u);
  EXPECT_EQ(still.suspects[0].name, "h2 <-> h4");
}

// h6's firewall starts dropping its Gloo ports: three of its peers' pairs
// have gone unanswered for about 2 s, its two other peers have not put a
// command on theirs since. Past the lone link's settle time, but the cuts
// spread over h6: no link named (a node's fault starting), failed all the
// same; the node once a fourth notices; two links cut alone for the longer
// settle time are links.
TEST(Cluster, CutsSpreadingOverANodeAreNoLinksYet) {
  auto nodes = SettledRacks();
  auto cut = [&](std::vector<FetchResult>& n, const char* from, const char* to, double seconds) {
    v1::PeerUnacknowledged* u = View(n, from, to)->mutable_unacknowledged();
    u->set_retransmissions(2);
    u->set_seconds(seconds);
  };
  cut(nodes, "h5", "h6", 1.8);
  cut(nodes, "h6", "h5", 2.1);
  cut(nodes, "h3", "h6", 1.9);
  cut(nodes, "h1", "h6", 2.0);
  ClusterPicture starting = BuildCluster(nodes);
  EXPECT_EQ(starting.verdict, Health::kFailed);
  EXPECT_THAT(starting.suspects, IsEmpty());

  cut(nodes, "h2", "h6", 1.0);
  ClusterPicture noticed = BuildCluster(nodes);
  ASSERT_EQ(noticed.suspects.size(), 1u);
  EXPECT_EQ(noticed.suspects[0].kind, SuspectKind::kNode);
  EXPECT_EQ(noticed.suspects[0].name, "h6");

  auto two = SettledRacks();
  cut(two, "h1", "h6", 7);
  cut(two, "h5", "h6", 7);
  EXPECT_THAT(BuildCluster(two).suspects, IsEmpty());
  cut(two, "h1", "h6", 8.5);
  cut(two, "h5", "h6", 8.5);
  ClusterPicture links = BuildCluster(std::move(two));
  ASSERT_EQ(links.suspects.size(), 2u);
  for (const Suspect& s : links.suspects) EXPECT_EQ(s.kind, SuspectKind::kLink) << s.name;
  EXPECT_EQ(links.suspects[0].name, "h1 <-> h6");
  EXPECT_EQ(links.suspects[1].name, "h5 <-> h6");
}

// h6's firewall dropped everything for 3 s and was removed half a second
// ago: three of its directions had their data acknowledged again, two wait
// for their kernel's next retransmission. Those are no evidence against the
// links: nobody to blame.
TEST(Cluster, RetransmissionsAfterARepairBlameNobody) {
  auto nodes = SettledRacks();
  for (const char* p : {"h1", "h2", "h3"}) {
    *View(nodes, p, "h6")->mutable_acknowledged_again_at() =
        ToProtoTimestamp(kModelNow - absl::Milliseconds(500));
  }
  for (const char* p : {"h4", "h5"}) {
    v1::PeerUnacknowledged* u = View(nodes, p, "h6")->mutable_unacknowledged();
    u->set_retransmissions(4);
    u->set_seconds(3.1);
  }
  ClusterPicture c = BuildCluster(nodes);
  EXPECT_THAT(c.suspects, IsEmpty());
  EXPECT_EQ(c.verdict, Health::kDegraded);
  EXPECT_THAT(HealthToJson(c).dump(),
              HasSubstr("h4->h6: retransmitting: sent data unacknowledged for 3.1 s, since before "
                        "a session of either end recovered"));
  // Cut since after the others came back: evidence again (a new fault).
  for (const char* p : {"h4", "h5"}) {
    View(nodes, p, "h6")->mutable_unacknowledged()->set_seconds(0.2);
  }
  for (const char* p : {"h1", "h2", "h3"}) {
    *View(nodes, p, "h6")->mutable_acknowledged_again_at() =
        ToProtoTimestamp(kModelNow - absl::Seconds(10));
  }
  // Two links of h6 cut alone: links once past the longer settle time.
  for (const char* p : {"h4", "h5"}) {
    View(nodes, p, "h6")->mutable_unacknowledged()->set_seconds(8.5);
  }
  ClusterPicture again = BuildCluster(std::move(nodes));
  std::vector<std::string> names;
  for (const Suspect& x : again.suspects) names.push_back(x.name);
  EXPECT_THAT(names, ElementsAre("h4 <-> h6", "h5 <-> h6"));
}

// h2's NIC started losing 5% twenty seconds ago: the 60 s windows cross
// the 1% threshold link by link. h2 -> h6 did first; h2's other links lose
// at 0.8% so far, and h5's transfers from h2 crawl. That is h2's loss in the
// making, not the links h2 <-> h6 and h2 <-> h5:
// no link is named (the node is, once its pooled loss is clear). A link
// whose ends lose nowhere else is the link.
TEST(Cluster, LossSpreadOverANodesLinksIsNoLinkOfIt) {
  auto nodes = SettledRacks();
  for (const char* p : {"h1", "h3", "h4", "h5", "h6"}) {
    for (auto [from, to] : {std::pair{"h2", p}, std::pair{p, "h2"}}) {
      v1::TcpFigures* t = View(nodes, from, to)->mutable_tcp();
      t->set_loss_ratio(0.008);
      t->set_window_sent_segments(2000);
    }
  }
  View(nodes, "h2", "h6")->mutable_tcp()->set_loss_ratio(0.015);
  // Its transfers crawl through the retransmissions too.
  View(nodes, "h5", "h2")->mutable_bandwidth()->set_link_ratio(0.4);
  ClusterPicture c = BuildCluster(nodes);
  EXPECT_THAT(c.suspects, IsEmpty());
  EXPECT_EQ(c.verdict, Health::kDegraded);
  // The same when the other links' windows are still mostly the clean
  // segments from before (their transfers crawl since): their recent part
  // shows it, and names h2 on it.
  for (const char* p : {"h1", "h3", "h4", "h5"}) {
    for (auto [from, to] : {std::pair{"h2", p}, std::pair{p, "h2"}}) {
      v1::TcpFigures* t = View(nodes, from, to)->mutable_tcp();
      t->set_loss_ratio(0.003);
      t->set_window_sent_segments(20000);
      t->set_recent_sent_segments(600);
      t->set_recent_lost_segments(30);
    }
  }
  ClusterPicture recent = BuildCluster(nodes);
  ASSERT_EQ(recent.suspects.size(), 1u);
  EXPECT_EQ(recent.suspects[0].name, "h2");
  EXPECT_EQ(recent.suspects[0].kind, SuspectKind::kNode);

  auto lone = SettledRacks();
  v1::TcpFigures* t = View(lone, "h4", "h3")->mutable_tcp();
  t->set_loss_ratio(0.05);
  t->set_window_sent_segments(3000);
  ClusterPicture link = BuildCluster(std::move(lone));
  ASSERT_EQ(link.suspects.size(), 1u);
  EXPECT_EQ(link.suspects[0].name, "h3 <-> h4");
}

// rack1's uplink lost 5% until 25 s ago: the other links' windows have
// cleared, h2 -> h4's still holds 1.1% (its last 30 s the fault's last
// seconds too), its last 10 s carried 1,500 segments and lost none. The loss
// is clearing: lossy, degraded, but no link named. Losing in its last 10 s
// again, the link.
TEST(Cluster, ALinksLossClearingInItsLastSecondsIsNoLoneLink) {
  auto nodes = SettledRacks();
  v1::TcpFigures* t = View(nodes, "h2", "h4")->mutable_tcp();
  t->set_loss_ratio(0.011);
  t->set_window_sent_segments(20000);
  t->set_recent_sent_segments(4400);
  t->set_recent_lost_segments(60);
  t->set_latest_sent_segments(1500);
  t->set_latest_lost_segments(0);
  t->set_latest_window_seconds(10);
  ClusterPicture clearing = BuildCluster(nodes);
  EXPECT_THAT(clearing.suspects, IsEmpty());
  EXPECT_EQ(clearing.verdict, Health::kDegraded);
  EXPECT_THAT(clearing.reasons, Contains(HasSubstr("1 link lossy (h2<->h4 1.1%)")));
  t->set_latest_lost_segments(20);
  ClusterPicture losing = BuildCluster(std::move(nodes));
  ASSERT_EQ(losing.suspects.size(), 1u);
  EXPECT_EQ(losing.suspects[0].name, "h2 <-> h4");
}

// A NIC losing 2% at the default schedule: no direction has the segments to
// count on its own, its links together do. Degraded, the node named; once
// the recent segments rule the loss out, healthy while the window still
// holds it.
TEST(Cluster, PooledLossNamesTheNodeAndClearsOnTheRecentSegments) {
  auto nodes = TwoRacksAt(kModelNow);
  for (auto& n : nodes) {
    for (auto& p : *n.status->mutable_peers()) {
      const bool lossy = n.target.name == "h5" || p.name() == "h5";
      const uint64_t sent = n.target.name == "h5" ? 900 : 84;
      p.mutable_tcp()->set_window_sent_segments(sent);
      p.mutable_tcp()->set_loss_ratio(lossy ? (n.target.name == "h5" ? 0.02 : 2.0 / 84) : 0);
      p.mutable_tcp()->set_recent_sent_segments(sent / 2);
      p.mutable_tcp()->set_recent_lost_segments(lossy ? sent / 100 : 0);
    }
  }
  ClusterPicture c = BuildCluster(nodes);
  EXPECT_EQ(c.verdict, Health::kDegraded);
  ASSERT_EQ(c.suspects.size(), 1u);
  EXPECT_EQ(c.suspects[0].kind, SuspectKind::kNode);
  EXPECT_EQ(c.suspects[0].name, "h5");
  EXPECT_THAT(c.reasons, Contains(HasSubstr("1 suspect lossy over its links together (node h5")));
  EXPECT_NEAR(HealthToJson(c)["suspects"][0]["pooled_loss_ratio"].get<double>(), 0.02, 0.001);
  for (auto& n : nodes) {
    for (auto& p : *n.status->mutable_peers()) p.mutable_tcp()->set_recent_lost_segments(0);
  }
  ClusterPicture repaired = BuildCluster(std::move(nodes));
  EXPECT_EQ(repaired.verdict, Health::kHealthy);
  EXPECT_TRUE(repaired.suspects.empty());
}

// A direction lossy over its window but clean over the recent half of it
// (enough segments to rule 1% out): past.
TEST(Cluster, LossTheRecentSegmentsRuleOutIsPast) {
  auto nodes = TwoRacks();
  v1::TcpFigures* tcp = View(nodes, "h1", "h2")->mutable_tcp();
  tcp->set_loss_ratio(0.03);
  tcp->set_window_sent_segments(20000);
  tcp->set_recent_sent_segments(9000);
  tcp->set_recent_lost_segments(0);
  ClusterPicture c = BuildCluster(nodes);
  EXPECT_EQ(c.verdict, Health::kHealthy);
  EXPECT_TRUE(c.suspects.empty());
  View(nodes, "h1", "h2")->mutable_tcp()->set_recent_lost_segments(300);
  EXPECT_EQ(BuildCluster(std::move(nodes)).verdict, Health::kDegraded);
}

// Later, the repair's clean transfer has left the recent 30 s, which hold a
// few latency probes: too few to rule 1% out. What was sent since the last
// loss still does: past, rather than present again.
TEST(Cluster, LossStaysPastAfterTheCleanTransferLeavesTheRecentPart) {
  auto nodes = TwoRacks();
  v1::TcpFigures* tcp = View(nodes, "h1", "h2")->mutable_tcp();
  tcp->set_loss_ratio(0.02);
  tcp->set_window_sent_segments(20000);
  tcp->set_recent_sent_segments(120);
  tcp->set_recent_lost_segments(0);
  EXPECT_EQ(BuildCluster(nodes).verdict, Health::kDegraded) << "nothing says it stopped";
  View(nodes, "h1", "h2")->mutable_tcp()->set_sent_since_last_loss(9000);
  ClusterPicture c = BuildCluster(std::move(nodes));
  EXPECT_EQ(c.verdict, Health::kHealthy);
  EXPECT_TRUE(c.suspects.empty());
}

// --node / --group / -l show a part of the cluster; its verdict covers it.
TEST(Cluster, NodeFilterKeepsTheSelectionAndJudgesIt) {
  auto nodes = TwoRacksAt(kModelNow);
  (*nodes[4].status->mutable_labels())["zone"] = "eu";
  for (const char* p : {"h1", "h2", "h3", "h5", "h6"}) {
    View(nodes, p, "h4")->mutable_tcp()->set_loss_ratio(0.05);
    View(nodes, "h4", p)->mutable_tcp()->set_loss_ratio(0.05);
  }
  ClusterPicture rack_a = BuildCluster(nodes);
  NodeFilter by_group;
  by_group.group = "rack-a";
  ApplyNodeFilter(by_group, rack_a);
  EXPECT_THAT(rack_a.nodes, ElementsAre("h1", "h2", "h3"));
  // Their links to h4 are bad: h4, outside the selection, is still named.
  ASSERT_FALSE(rack_a.suspects.empty());
  EXPECT_EQ(rack_a.suspects[0].name, "h4");
  EXPECT_EQ(rack_a.verdict, Health::kDegraded);

  ClusterPicture labelled = BuildCluster(nodes);
  NodeFilter by_label;
  by_label.labels = {{"zone", "eu"}};
  ApplyNodeFilter(by_label, labelled);
  EXPECT_THAT(labelled.nodes, ElementsAre("h5"));
  EXPECT_EQ(labelled.node_reports.size(), 1u);

  ClusterPicture one = BuildCluster(std::move(nodes));
  NodeFilter by_name;
  by_name.names = {"h6"};
  ApplyNodeFilter(by_name, one);
  EXPECT_THAT(one.nodes, ElementsAre("h6"));
  ASSERT_EQ(one.node_reports.size(), 1u);
  EXPECT_EQ(one.links.size(), 5u);
}

// "Nothing answered" (69) is about every daemon asked: a filter that shows
// only a down node leaves a failed node (2), not a silent cluster.
TEST(Cluster, NodeFilterOnADownNodeIsNotNothingAnswered) {
  FetchResult a = Node("a", 1);
  Peer(a, "b", 0.0003, 0.95, 0.0);
  ClusterPicture down_only = BuildCluster({a, Unreachable("b")});
  NodeFilter by_name;
  by_name.names = {"b"};
  ApplyNodeFilter(by_name, down_only);
  ASSERT_EQ(down_only.node_reports.size(), 1u);
  EXPECT_FALSE(down_only.node_reports[0].reachable);
  EXPECT_FALSE(down_only.NothingAnswered());
  EXPECT_EQ(down_only.ExitCode(), 2);

  ClusterPicture silent = BuildCluster({Unreachable("a"), Unreachable("b")});
  EXPECT_TRUE(silent.NothingAnswered());
  ApplyNodeFilter(by_name, silent);
  EXPECT_TRUE(silent.NothingAnswered());
  EXPECT_EQ(silent.ExitCode(), 69);
}

}  // namespace
}  // namespace gloowatch::client