// Query results -> NodeStatus: canned Prometheus answers (the JSON shape of
// /api/v1/query's data.result) through NodesFromSnapshot, then BuildCluster.
#include "client/sources/prometheus_source.h"

#include "client/health/cluster.h"
#include "client/health/render.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gloowatch::client {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// One element of a vector result.
json S(std::map<std::string, std::string> labels, const std::string& value) {
  labels.emplace("job", "gloowatch");
  return {{"metric", labels}, {"value", {1700000000.0, value}}};
}

json Peer(const std::string& metric, const std::string& node, const std::string& peer,
          const std::string& value, std::map<std::string, std::string> extra = {}) {
  extra["__name__"] = metric;
  extra["node"] = node;
  extra["peer"] = peer;
  extra["instance"] = "h-" + node + ":7610";
  return S(extra, value);
}

json NodeSeries(const std::string& metric, const std::string& node, const std::string& value) {
  return S({{"__name__", metric}, {"node", node}, {"instance", "h-" + node + ":7610"}}, value);
}

json Info(const std::string& node) {
  return S({{"__name__", "gloowatch_build_info"},
            {"node", node},
            {"instance", "h-" + node + ":7610"},
            {"version", "0.9.0"},
            {"gloo_version", "0.5.0"}},
           "1");
}

json Up(const std::string& node, const std::string& value) {
  return S({{"__name__", "up"}, {"instance", "h-" + node + ":7610"}}, value);
}

// A healthy link a->b with every figure.
void AddLink(json& series, const std::string& a, const std::string& b, double p50 = 0.0003) {
  series.push_back(Peer("gloowatch_peer_up", a, b, "1"));
  series.push_back(Peer("gloowatch_peer_rtt_p50_seconds", a, b, std::to_string(p50)));
  series.push_back(Peer("gloowatch_peer_rtt_p99_seconds", a, b, std::to_string(p50 * 2)));
  series.push_back(
      Peer("gloowatch_peer_bandwidth_bytes_per_second", a, b, "1.2e9", {{"direction", "tx"}}));
  series.push_back(
      Peer("gloowatch_peer_bandwidth_bytes_per_second", a, b, "1.0e9", {{"direction", "rx"}}));
  series.push_back(
      Peer("gloowatch_peer_bandwidth_link_ratio", a, b, "0.96", {{"direction", "tx"}}));
  series.push_back(Peer("gloowatch_peer_bandwidth_link_ratio", a, b, "0.9", {{"direction", "rx"}}));
  series.push_back(Peer("gloowatch_peer_clock_offset_seconds", a, b, "0.00025"));
  series.push_back(Peer("gloowatch_peer_clock_offset_error_seconds", a, b, "0.00001"));
  for (const char* reason : {"refused", "timeout"}) {
    series.push_back(Peer("gloowatch_peer_probe_failures_total", a, b, "0", {{"reason", reason}}));
  }
  series.push_back(Peer("gloowatch_peer_probes_total", a, b, "40", {{"kind", "latency"}}));
  series.push_back(Peer("gloowatch_peer_probes_total", a, b, "2", {{"kind", "bandwidth"}}));
}

void AddThresholds(json& series, const std::string& node, const std::string& latency = "0.002",
                   const std::string& window = "600") {
  series.push_back(NodeSeries("gloowatch_threshold_latency_seconds", node, latency));
  series.push_back(NodeSeries("gloowatch_threshold_bandwidth_link_ratio", node, "0.8"));
  series.push_back(NodeSeries("gloowatch_threshold_clock_offset_seconds", node, "0.1"));
  series.push_back(NodeSeries("gloowatch_threshold_failure_window_seconds", node, window));
  series.push_back(NodeSeries("gloowatch_threshold_communication_share", node, "0.3"));
}

// a, b, c all up, a full mesh of healthy links.
PrometheusSnapshot Healthy() {
  PrometheusSnapshot s;
  s.time = 1700000000.5;
  s.up = s.build_info = s.build_info_recent = s.series = s.training_share = json::array();
  for (const std::string n : {"a", "b", "c"}) {
    s.up.push_back(Up(n, "1"));
    s.build_info.push_back(Info(n));
    s.build_info_recent.push_back(Info(n));
    AddThresholds(s.series, n);
    for (const std::string m : {"a", "b", "c"}) {
      if (m != n) AddLink(s.series, n, m);
    }
  }
  s.failures_by_window[600] = json::array();
  return s;
}

const FetchResult* Find(const std::vector<FetchResult>& r, const std::string& name) {
  for (const auto& f : r) {
    if (f.target.name == name) return &f;
  }
  return nullptr;
}

// build_info's labels beyond the target's (those `up` has too) are the
// node's topology labels; one that clashed with a target label arrives as
// exported_<name> and is the node's own.
TEST(PrometheusSource, TopologyLabelsAreBuildInfoLabelsTheTargetDoesNotHave) {
  PrometheusSnapshot snap = Healthy();
  for (json* results : {&snap.build_info, &snap.build_info_recent}) {
    for (json& info : *results) {
      if (info["metric"]["node"] != "b") continue;
      info["metric"]["rack"] = "r7";
      info["metric"]["datacenter"] = "east";  // a relabelled target label
      info["metric"]["exported_zone"] = "z2";
      info["metric"]["zone"] = "from-the-target";
    }
  }
  for (json& up : snap.up) {
    if (up["metric"]["instance"] != "h-b:7610") continue;
    up["metric"]["datacenter"] = "east";
    up["metric"]["zone"] = "from-the-target";
  }
  auto nodes = NodesFromSnapshot(snap, PrometheusOptions{});
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  const FetchResult* b = Find(*nodes, "b");
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(b->status.has_value());
  const std::map<std::string, std::string> labels(b->status->labels().begin(),
                                                  b->status->labels().end());
  EXPECT_EQ(labels, (std::map<std::string, std::string>{{"rack", "r7"}, {"zone", "z2"}}));
  const FetchResult* a = Find(*nodes, "a");
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(a->status.has_value());
  EXPECT_TRUE(a->status->labels().empty());
}

TEST(PrometheusSource, HostLoadAndItsThresholdsReachTheNodeStatus) {
  PrometheusSnapshot snap = Healthy();
  snap.series.push_back(NodeSeries("gloowatch_host_scheduling_delay_seconds", "b", "0.05"));
  snap.series.push_back(NodeSeries("gloowatch_host_cpu_pressure_ratio", "b", "0.7"));
  snap.series.push_back(NodeSeries("gloowatch_host_cpu_steal_ratio", "b", "0"));
  snap.series.push_back(NodeSeries("gloowatch_threshold_scheduling_delay_seconds", "b", "0.04"));
  snap.series.push_back(NodeSeries("gloowatch_threshold_cpu_steal_ratio", "b", "0.2"));
  auto nodes = NodesFromSnapshot(snap, PrometheusOptions{});
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  const v1::NodeStatus& b = *Find(*nodes, "b")->status;
  EXPECT_DOUBLE_EQ(b.host_load().scheduling_delay_seconds(), 0.05);
  EXPECT_DOUBLE_EQ(b.host_load().cpu_pressure_ratio(), 0.7);
  EXPECT_TRUE(b.host_load().has_cpu_steal_ratio());
  EXPECT_DOUBLE_EQ(b.thresholds().scheduling_delay_seconds(), 0.04);
  EXPECT_DOUBLE_EQ(b.thresholds().cpu_steal_ratio(), 0.2);
  EXPECT_FALSE(Find(*nodes, "a")->status->host_load().has_scheduling_delay_seconds());
  // b's links are fine: an overloaded host with nothing to blame yet.
  ClusterPicture c = BuildCluster(*std::move(nodes));
  ASSERT_EQ(c.suspects.size(), 1u);
  EXPECT_EQ(c.suspects[0].kind, SuspectKind::kOverloadedHost);
  EXPECT_EQ(c.suspects[0].name, "b");
}

TEST(PrometheusSource, HealthyMeshBecomesTheSameNodeStatus) {
  PrometheusOptions o;
  auto nodes = NodesFromSnapshot(Healthy(), o);
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  ASSERT_EQ(nodes->size(), 3u);
  const FetchResult* a = Find(*nodes, "a");
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(a->status.has_value());
  EXPECT_EQ(a->target.endpoint.ToString(), "h-a:7610");
  const v1::NodeStatus& s = *a->status;
  EXPECT_EQ(s.node(), "a");
  EXPECT_EQ(s.version(), "0.9.0");
  EXPECT_EQ(s.gloo_version(), "0.5.0");
  EXPECT_DOUBLE_EQ(s.thresholds().latency_seconds(), 0.002);
  EXPECT_DOUBLE_EQ(s.thresholds().failure_window_seconds(), 600);
  EXPECT_EQ(s.now().seconds(), 1700000000);
  EXPECT_EQ(s.topology().mode(), "full_mesh");
  EXPECT_EQ(s.topology().cluster_nodes(), 3u);
  EXPECT_EQ(s.topology().probed_peers(), 2u);
  ASSERT_EQ(s.peers_size(), 2);
  const v1::PeerStatus& b = s.peers(0);
  EXPECT_EQ(b.name(), "b");
  EXPECT_EQ(b.state(), v1::PEER_STATE_UP);
  EXPECT_EQ(b.selection(), "mesh");
  EXPECT_DOUBLE_EQ(b.latency().p50_seconds(), 0.0003);
  EXPECT_DOUBLE_EQ(b.latency().p99_seconds(), 0.0006);
  EXPECT_DOUBLE_EQ(b.bandwidth().tx_bytes_per_second(), 1.2e9);
  EXPECT_DOUBLE_EQ(b.bandwidth().rx_bytes_per_second(), 1.0e9);
  EXPECT_DOUBLE_EQ(b.bandwidth().link_ratio(), 0.9);  // the slower direction, as GetStatus
  EXPECT_DOUBLE_EQ(b.clock().offset_seconds(), 0.00025);
  EXPECT_DOUBLE_EQ(b.clock().error_seconds(), 0.00001);
  EXPECT_EQ(b.probes_ok(), 42u);
  EXPECT_EQ(b.probes_failed(), 0u);
  EXPECT_EQ(b.failures_in_window(), 0u);
  EXPECT_FALSE(b.tcp().has_loss_ratio());
  EXPECT_EQ(s.topology().group(), "");

  ClusterPicture c = BuildCluster(*std::move(nodes));
  EXPECT_EQ(c.verdict, Health::kHealthy);
  EXPECT_TRUE(c.suspects.empty());
  EXPECT_EQ(c.links.size(), 3u);
  EXPECT_EQ(c.coverage.measured_pairs, 3u);
}

// Groups from gloowatch_build_info, TCP loss per direction: enough for the
// suspects, the same as from the daemons.
TEST(PrometheusSource, GroupsAndLossNameTheLossyNode) {
  PrometheusSnapshot s = Healthy();
  s.build_info = s.build_info_recent = json::array();
  for (const std::string n : {"a", "b", "c", "d"}) {
    json info = Info(n);
    info["metric"]["group"] = n < "c" ? "rack1" : "rack2";
    s.build_info.push_back(info);
    s.build_info_recent.push_back(info);
  }
  s.up.push_back(Up("d", "1"));
  AddThresholds(s.series, "d");
  for (const std::string m : {"a", "b", "c"}) {
    AddLink(s.series, "d", m);
    AddLink(s.series, m, "d");
  }
  for (const std::string n : {"a", "b", "c", "d"}) {
    for (const std::string m : {"a", "b", "c", "d"}) {
      if (m == n) continue;
      const bool lossy = n == "b" || m == "b";
      s.series.push_back(Peer("gloowatch_peer_tcp_loss_ratio", n, m, lossy ? "0.05" : "0.0004"));
    }
  }
  // a -> c sent few segments in the window: its loss would count for nothing
  // (it has none); a -> b sent plenty.
  s.tcp_sent_in_window = json::array({Peer("", "a", "b", "25000.4"), Peer("", "a", "c", "300")});
  auto nodes = NodesFromSnapshot(s, PrometheusOptions{});
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  const FetchResult* a = Find(*nodes, "a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->status->peers(0).tcp().window_sent_segments(), 25000u);
  EXPECT_EQ(a->status->peers(1).tcp().window_sent_segments(), 300u);
  EXPECT_FALSE(a->status->peers(2).tcp().has_window_sent_segments());
  EXPECT_EQ(a->status->topology().group(), "rack1");
  ASSERT_EQ(a->status->peers_size(), 3);
  EXPECT_EQ(a->status->peers(1).name(), "c");
  EXPECT_EQ(a->status->peers(1).group(), "rack2");
  EXPECT_DOUBLE_EQ(a->status->peers(0).tcp().loss_ratio(), 0.05);
  EXPECT_DOUBLE_EQ(a->status->peers(1).tcp().loss_ratio(), 0.0004);

  ClusterPicture c = BuildCluster(*std::move(nodes));
  EXPECT_EQ(c.verdict, Health::kDegraded);
  ASSERT_EQ(c.suspects.size(), 1u);
  EXPECT_EQ(c.suspects[0].kind, SuspectKind::kNode);
  EXPECT_EQ(c.suspects[0].name, "b");
  EXPECT_EQ(c.suspects[0].bad_links, 3u);
  EXPECT_THAT(HealthToJson(c)["suspects"][0]["evidence"].dump(), HasSubstr("TCP loss 5.00%"));
}

TEST(PrometheusSource, AbsentFiguresStayAbsent) {
  PrometheusSnapshot s = Healthy();
  json kept = json::array();
  for (const json& x : s.series) {
    const std::string name = x["metric"]["__name__"];
    if (x["metric"].value("node", "") == "a" && x["metric"].value("peer", "") == "b" &&
        name != "gloowatch_peer_up" && name != "gloowatch_peer_probe_failures_total")
      continue;
    kept.push_back(x);
  }
  s.series = kept;
  auto nodes = NodesFromSnapshot(s, {});
  ASSERT_TRUE(nodes.ok());
  const v1::PeerStatus& b = Find(*nodes, "a")->status->peers(0);
  EXPECT_EQ(b.state(), v1::PEER_STATE_UP);
  EXPECT_FALSE(b.latency().has_p50_seconds());
  EXPECT_FALSE(b.bandwidth().has_link_ratio());
  EXPECT_FALSE(b.clock().has_offset_seconds());
}

TEST(PrometheusSource, PeerUpZeroIsDownAfterAFailureElseConnecting) {
  PrometheusSnapshot s = Healthy();
  for (json& x : s.series) {
    const json& m = x["metric"];
    if (m["__name__"] == "gloowatch_peer_up" && m["node"] == "a") x["value"][1] = "0";
    if (m["__name__"] == "gloowatch_peer_probe_failures_total" && m["node"] == "a" &&
        m["peer"] == "b" && m["reason"] == "refused")
      x["value"][1] = "7";
  }
  // increase() extrapolates: 2.6 refused and 0.4 timeouts in the window.
  s.failures_by_window[600] = json::array(
      {Peer("gloowatch_peer_probe_failures_total", "a", "b", "2.6", {{"reason", "refused"}}),
       Peer("gloowatch_peer_probe_failures_total", "a", "b", "0.4", {{"reason", "timeout"}})});
  auto nodes = NodesFromSnapshot(s, {});
  ASSERT_TRUE(nodes.ok());
  const v1::NodeStatus& a = *Find(*nodes, "a")->status;
  EXPECT_EQ(a.peers(0).state(), v1::PEER_STATE_DOWN);
  EXPECT_EQ(a.peers(0).probes_failed(), 7u);
  EXPECT_EQ(a.peers(0).failures_by_reason().at("refused"), 7u);
  EXPECT_EQ(a.peers(0).failures_in_window(), 4u);  // 3 refused + at least 1 timeout
  EXPECT_EQ(a.peers(0).last_failure().reason(), v1::FAILURE_REASON_REFUSED);
  EXPECT_THAT(a.peers(0).last_failure().message(), HasSubstr("refused 3, timeout 1"));
  EXPECT_EQ(a.peers(1).state(), v1::PEER_STATE_CONNECTING);

  ClusterPicture c = BuildCluster(*std::move(nodes));
  EXPECT_EQ(c.verdict, Health::kFailed);
  EXPECT_EQ(c.links[0].a, "a");
  EXPECT_EQ(c.links[0].b, "b");
  EXPECT_EQ(c.links[0].health, Health::kFailed);
  // Down now: the failures are its evidence, not history.
  EXPECT_THAT(c.suspects[0].evidence, ::testing::Contains(HasSubstr("4 failures")));
}

TEST(PrometheusSource, FailuresBeforeThePeerWasFirstUpDoNotCount) {
  PrometheusSnapshot s = Healthy();
  // increase() sees refused connections on a->b and a->c; a->b was up
  // since, and nothing failed after it came up; a->c failed once after.
  s.failures_by_window[600] = json::array(
      {Peer("gloowatch_peer_probe_failures_total", "a", "b", "5.2", {{"reason", "refused"}}),
       Peer("gloowatch_peer_probe_failures_total", "a", "c", "4.9", {{"reason", "refused"}}),
       Peer("gloowatch_peer_probe_failures_total", "a", "c", "1.1", {{"reason", "reset"}})});
  s.failures_since_up_by_window[600] = json::array(
      {Peer("gloowatch_peer_probe_failures_total", "a", "b", "0", {{"reason", "refused"}}),
       Peer("gloowatch_peer_probe_failures_total", "a", "c", "0", {{"reason", "refused"}}),
       Peer("gloowatch_peer_probe_failures_total", "a", "c", "1", {{"reason", "reset"}})});
  auto nodes = NodesFromSnapshot(s, {});
  ASSERT_TRUE(nodes.ok());
  const v1::NodeStatus& a = *Find(*nodes, "a")->status;
  EXPECT_EQ(a.peers(0).failures_in_window(), 0u);
  EXPECT_EQ(a.peers(1).failures_in_window(), 1u);
  EXPECT_THAT(a.peers(1).last_failure().message(), HasSubstr("reset 1"));
  // Without the second answer (a server that refused the subquery), the
  // plain increase() counts.
  s.failures_since_up_by_window.clear();
  nodes = NodesFromSnapshot(s, {});
  ASSERT_TRUE(nodes.ok());
  EXPECT_EQ(Find(*nodes, "a")->status->peers(0).failures_in_window(), 5u);
}

TEST(PrometheusSource, TargetDownIsUnreachableUnderItsNodeName) {
  PrometheusSnapshot s = Healthy();
  // c's scrape fails: up 0, its series are stale (gone from instant
  // queries), only last_over_time still has its build_info.
  s.up[2] = Up("c", "0");
  s.build_info.erase(2);
  json kept = json::array();
  for (const json& x : s.series) {
    if (x["metric"]["node"] != "c") kept.push_back(x);
  }
  s.series = kept;
  auto nodes = NodesFromSnapshot(s, {});
  ASSERT_TRUE(nodes.ok());
  const FetchResult* c = Find(*nodes, "c");
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(c->status.has_value());
  EXPECT_THAT(c->error, HasSubstr("up == 0"));
  EXPECT_THAT(c->error, HasSubstr("h-c:7610"));
  ClusterPicture p = BuildCluster(*std::move(nodes));
  EXPECT_EQ(p.verdict, Health::kFailed);
  EXPECT_EQ(p.nodes, (std::vector<std::string>{"a", "b", "c"}));  // not shown twice
  nlohmann::json j = HealthToJson(p);
  EXPECT_EQ(j["exit_code"], 2);
}

TEST(PrometheusSource, StaleSeriesWithoutTargetIsUnreachableNotHealthy) {
  PrometheusSnapshot s = Healthy();
  s.up.erase(2);  // target removed from service discovery
  s.build_info.erase(2);
  auto nodes = NodesFromSnapshot(s, {});
  ASSERT_TRUE(nodes.ok());
  const FetchResult* c = Find(*nodes, "c");
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(c->status.has_value());
  EXPECT_THAT(c->error, HasSubstr("no samples"));
  EXPECT_EQ(BuildCluster(*std::move(nodes)).verdict, Health::kFailed);
}

TEST(PrometheusSource, UnknownTargetsAreNamedByInstanceOrTheirNodeLabel) {
  PrometheusSnapshot s = Healthy();
  s.up.push_back(S({{"__name__", "up"}, {"instance", "10.0.0.9:7610"}}, "0"));
  s.up.push_back(S({{"__name__", "up"}, {"instance", "10.0.0.8:7610"}, {"node", "gpu-8"}}, "0"));
  s.up.push_back(S({{"__name__", "up"}, {"instance", "10.0.0.7:9100"}}, "1"));
  auto nodes = NodesFromSnapshot(s, {});
  ASSERT_TRUE(nodes.ok());
  EXPECT_NE(Find(*nodes, "10.0.0.9:7610"), nullptr);
  ASSERT_NE(Find(*nodes, "gpu-8"), nullptr);
  EXPECT_THAT(Find(*nodes, "gpu-8")->error, HasSubstr("up == 0"));
  ASSERT_NE(Find(*nodes, "10.0.0.7:9100"), nullptr);
  EXPECT_THAT(Find(*nodes, "10.0.0.7:9100")->error, HasSubstr("no gloowatch_build_info"));
}

TEST(PrometheusSource, NoSeriesAtAllIsNotFound) {
  PrometheusSnapshot s;
  s.up = s.build_info = s.build_info_recent = s.series = s.training_share = json::array();
  PrometheusOptions o;
  o.job = "gw";
  auto nodes = NodesFromSnapshot(s, o);
  ASSERT_FALSE(nodes.ok());
  EXPECT_TRUE(absl::IsNotFound(nodes.status()));
  EXPECT_THAT(nodes.status().message(), HasSubstr("job=\"gw\""));
}

TEST(PrometheusSource, MalformedResultIsInvalid) {
  PrometheusSnapshot s = Healthy();
  s.series.push_back({{"metric", {{"node", "a"}}}, {"value", "oops"}});
  EXPECT_TRUE(absl::IsInvalidArgument(NodesFromSnapshot(s, {}).status()));
  s = Healthy();
  s.up = json::object();
  EXPECT_TRUE(absl::IsInvalidArgument(NodesFromSnapshot(s, {}).status()));
  s = Healthy();
  s.series.push_back(Peer("gloowatch_peer_up", "a", "b", "not-a-number"));
  EXPECT_TRUE(absl::IsInvalidArgument(NodesFromSnapshot(s, {}).status()));
}

TEST(PrometheusSource, ThresholdsComeFromTheDaemonsOrDefaults) {
  PrometheusSnapshot s = Healthy();
  json kept = json::array();
  for (const json& x : s.series) {
    const std::string name = x["metric"]["__name__"];
    if (x["metric"]["node"] == "b" && name.rfind("gloowatch_threshold_", 0) == 0) continue;
    kept.push_back(x);
  }
  s.series = kept;
  // a's threshold makes its 0.3 ms links slow.
  for (json& x : s.series) {
    if (x["metric"]["__name__"] == "gloowatch_threshold_latency_seconds" &&
        x["metric"]["node"] == "a")
      x["value"][1] = "0.0001";
  }
  EXPECT_EQ(FailureWindows(s.series), (std::vector<int64_t>{600, 3600}));
  auto nodes = NodesFromSnapshot(s, {});
  ASSERT_TRUE(nodes.ok());
  const EffectiveThresholds b = ThresholdsOf(*Find(*nodes, "b")->status);
  EXPECT_DOUBLE_EQ(b.latency_seconds, 0.002);  // client default
  ClusterPicture c = BuildCluster(*std::move(nodes));
  EXPECT_EQ(c.verdict, Health::kDegraded);
  EXPECT_EQ(c.ExitCode(), 1);
}

TEST(PrometheusSource, FewerPeersThanNodesIsASampledMesh) {
  // 5 nodes; each probes only its ring successor. Pairs without series are
  // not measured, and not a failure.
  PrometheusSnapshot s;
  s.time = 1700000000;
  s.up = s.build_info = s.build_info_recent = s.series = s.training_share = json::array();
  const std::vector<std::string> n = {"a", "b", "c", "d", "e"};
  for (size_t i = 0; i < n.size(); ++i) {
    s.up.push_back(Up(n[i], "1"));
    s.build_info.push_back(Info(n[i]));
    s.build_info_recent.push_back(Info(n[i]));
    AddThresholds(s.series, n[i]);
    AddLink(s.series, n[i], n[(i + 1) % n.size()]);
  }
  auto nodes = NodesFromSnapshot(s, {});
  ASSERT_TRUE(nodes.ok());
  EXPECT_EQ(Find(*nodes, "a")->status->topology().mode(), "sampled");
  EXPECT_EQ(Find(*nodes, "a")->status->topology().cluster_nodes(), 5u);
  ClusterPicture c = BuildCluster(*std::move(nodes));
  EXPECT_EQ(c.verdict, Health::kHealthy);
  EXPECT_TRUE(c.coverage.sampled);
  EXPECT_EQ(c.coverage.node_pairs, 10u);
  EXPECT_EQ(c.coverage.measured_pairs, 5u);
  EXPECT_EQ(c.coverage.measured_both_ways, 0u);
  nlohmann::json j = HealthToJson(c);
  EXPECT_EQ(j["coverage"]["mode"], "sampled");
  EXPECT_EQ(j["coverage"]["not_measured"].size(), 5u);
}

TEST(PrometheusSource, TrainingJobsWithTheirShare) {
  // training_job today; exported_job is what Prometheus made of the `job`
  // label of daemons before it.
  for (const char* label : {"training_job", "exported_job"}) {
    SCOPED_TRACE(label);
    PrometheusSnapshot s = Healthy();
    for (const char* metric :
         {"gloowatch_training_steps_total", "gloowatch_training_step_seconds_total",
          "gloowatch_training_communication_seconds_total"}) {
      s.series.push_back(S({{"__name__", metric},
                            {"job", "gloowatch"},
                            {"node", "a"},
                            {"instance", "h-a:7610"},
                            {label, "llm"},
                            {"rank", "3"}},
                           "10"));
    }
    s.training_share.push_back(
        S({{"node", "a"}, {"instance", "h-a:7610"}, {label, "llm"}, {"rank", "3"}}, "0.45"));
    auto nodes = NodesFromSnapshot(s, {});
    ASSERT_TRUE(nodes.ok());
    const v1::NodeStatus& a = *Find(*nodes, "a")->status;
    ASSERT_EQ(a.training_size(), 1);
    EXPECT_EQ(a.training(0).job(), "llm");
    EXPECT_EQ(a.training(0).rank(), 3);
    EXPECT_EQ(a.training(0).steps(), 10u);
    EXPECT_DOUBLE_EQ(a.training(0).communication_share(), 0.45);
    // 45% > 30%: a job signal, shown on the job, not a fault of the cluster.
    ClusterPicture picture = BuildCluster(*std::move(nodes));
    EXPECT_EQ(picture.verdict, Health::kHealthy);
    ASSERT_EQ(picture.training.size(), 1u);
    EXPECT_TRUE(picture.training[0].over_threshold);
  }
}

TEST(PrometheusSource, QueriesCarryTheJobAndSelector) {
  PrometheusOptions o;
  o.job = "gw\"x";
  o.selector = "cluster=\"eu1\"";
  EXPECT_EQ(UpQuery(o), "up{job=\"gw\\\"x\",cluster=\"eu1\"}");
  EXPECT_THAT(SeriesQuery(o), HasSubstr("job=\"gw\\\"x\",cluster=\"eu1\"}"));
  EXPECT_EQ(FailuresQuery(o, 3600),
            "increase(gloowatch_peer_probe_failures_total{job=\"gw\\\"x\",cluster=\"eu1\"}[3600s])"
            " > 0");
  EXPECT_THAT(BuildInfoRecentQuery(o), HasSubstr("[600s]"));
  EXPECT_EQ(
      TcpSentInWindowQuery(o),
      "increase(gloowatch_peer_tcp_sent_segments_total{job=\"gw\\\"x\",cluster=\"eu1\"}[60s])");
  const std::string since_up = FailuresSinceUpQuery(o, 3600, {"gpu.1", "gpu-2"});
  EXPECT_THAT(since_up, HasSubstr("node=~\"gpu-2|gpu\\\\.1\""));
  EXPECT_THAT(since_up, HasSubstr("[3600s:5s]"));
  EXPECT_THAT(since_up, HasSubstr("gloowatch_peer_up{"));
  EXPECT_THAT(FailuresSinceUpQuery(o, 36000, {}), HasSubstr("[36000s:50s]"));
}

TEST(PrometheusSource, UrlValidation) {
  EXPECT_TRUE(ValidateHttpUrl("http://prom:9090").ok());
  EXPECT_TRUE(ValidateHttpUrl("https://user:pw@prom.example/prometheus").ok());
  EXPECT_TRUE(ValidateHttpUrl("http://[::1]:9090").ok());
  EXPECT_FALSE(ValidateHttpUrl("prom:9090").ok());
  EXPECT_FALSE(ValidateHttpUrl("ftp://prom").ok());
  EXPECT_FALSE(ValidateHttpUrl("http://").ok());
  EXPECT_FALSE(ValidateHttpUrl("http://:9090").ok());
  EXPECT_FALSE(ValidateHttpUrl("http://prom:99999").ok());
  EXPECT_FALSE(ValidateHttpUrl("http://pr om:9090").ok());
}

}  // namespace
}  // namespace gloowatch::client
