// node-check's and act's judgement on synthetic pictures: which culprit is
// named behind which guard rail, and what act drains and resumes in Slurm.
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "client/act/act_plan.h"
#include "client/act/culprits.h"
#include "client/act/slurm.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/temp_dir.h"

namespace gloowatch::client {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

FetchResult Node(const std::string& name) {
  FetchResult r;
  r.target = {name, {"127.0.0.1", 7601}};
  v1::NodeStatus s;
  s.set_node(name);
  s.set_version("0.1.0");
  r.status = s;
  return r;
}

FetchResult Unreachable(const std::string& name) {
  FetchResult r;
  r.target = {name, {"127.0.0.1", 9}};
  r.error_code = "DEADLINE_EXCEEDED";
  r.error = "timeout: no answer within 3s";
  return r;
}

void Up(FetchResult& n, const std::string& peer) {
  auto* p = n.status->add_peers();
  p->set_name(peer);
  p->set_state(v1::PEER_STATE_UP);
  p->mutable_latency()->set_p50_seconds(0.0002);
  p->mutable_latency()->set_recent_p50_seconds(0.0002);
}

void Down(FetchResult& n, const std::string& peer) {
  auto* p = n.status->add_peers();
  p->set_name(peer);
  p->set_state(v1::PEER_STATE_DOWN);
  p->mutable_last_failure()->set_reason(v1::FAILURE_REASON_TIMEOUT);
  p->mutable_last_failure()->set_message("connect timeout");
}

// n nodes h1..hn; the nodes in `dead` do not answer and every other node
// sees them down; the rest see each other up.
ClusterPicture Cluster(int n, const std::set<std::string>& dead) {
  std::vector<FetchResult> fetched;
  for (int i = 1; i <= n; ++i) {
    const std::string name = absl::StrCat("h", i);
    if (dead.count(name)) {
      fetched.push_back(Unreachable(name));
      continue;
    }
    FetchResult r = Node(name);
    for (int j = 1; j <= n; ++j) {
      const std::string peer = absl::StrCat("h", j);
      if (peer == name) continue;
      dead.count(peer) ? Down(r, peer) : Up(r, peer);
    }
    fetched.push_back(std::move(r));
  }
  return BuildCluster(std::move(fetched));
}

TEST(Culprits, DeadNodeIsAcceptedWithThePeersThatAgree) {
  ClusterPicture c = Cluster(4, {"h3"});
  std::vector<Culprit> k = FindCulprits(c, CulpritOptions{});
  ASSERT_EQ(k.size(), 1u);
  EXPECT_EQ(k[0].node, "h3");
  EXPECT_TRUE(k[0].accepted) << k[0].declined;
  EXPECT_EQ(k[0].peers_agree, 3u);
  EXPECT_GE(k[0].confidence, 0.9);
  EXPECT_THAT(k[0].summary, HasSubstr("3 peers agree"));

  NodeVerdict v = JudgeNode(c, "h3", CulpritOptions{});
  EXPECT_EQ(v.kind, NodeVerdict::Kind::kProblem);
  EXPECT_THAT(v.line, StartsWith("gloowatch: h3: "));
  EXPECT_LE(v.line.size(), kMaxVerdictLine);
  EXPECT_EQ(v.line.find('\n'), std::string::npos);
  NodeVerdict other = JudgeNode(c, "h1", CulpritOptions{});
  EXPECT_EQ(other.kind, NodeVerdict::Kind::kOk) << other.line;
  EXPECT_THAT(other.line, HasSubstr("h1 ok"));
}

TEST(Culprits, HealthyClusterNamesNobody) {
  ClusterPicture c = Cluster(3, {});
  EXPECT_THAT(FindCulprits(c, CulpritOptions{}), IsEmpty());
  for (const char* n : {"h1", "h2", "h3"}) {
    NodeVerdict v = JudgeNode(c, n, CulpritOptions{});
    EXPECT_EQ(v.kind, NodeVerdict::Kind::kOk) << v.line;
    EXPECT_THAT(v.line, HasSubstr("2 of its 2 links healthy"));
  }
  EXPECT_EQ(JudgeNode(c, "h9", CulpritOptions{}).kind, NodeVerdict::Kind::kUnknown);
}

TEST(Culprits, TooFewPeersAgreeingOrTooLittleConfidenceIsDeclined) {
  ClusterPicture c = Cluster(3, {"h3"});  // 2 peers see it down
  CulpritOptions o;
  o.min_peers = 3;
  std::vector<Culprit> k = FindCulprits(c, o);
  ASSERT_EQ(k.size(), 1u);
  EXPECT_FALSE(k[0].accepted);
  EXPECT_THAT(k[0].declined, HasSubstr("2 peers agree, fewer than 3"));
  NodeVerdict v = JudgeNode(c, "h3", o);
  EXPECT_EQ(v.kind, NodeVerdict::Kind::kOk);
  EXPECT_THAT(v.line, HasSubstr("not acted on"));

  CulpritOptions sure;
  sure.min_confidence = 1.0;
  k = FindCulprits(c, sure);
  ASSERT_EQ(k.size(), 1u);
  EXPECT_FALSE(k[0].accepted);
  EXPECT_THAT(k[0].declined, HasSubstr("< 1.00"));
}

TEST(Culprits, NoMoreThanTheLimitAtOnce) {
  ClusterPicture c = Cluster(7, {"h2", "h5"});
  CulpritOptions o;
  o.max_nodes = NodeLimit{1, 0};
  std::vector<Culprit> k = FindCulprits(c, o);
  ASSERT_EQ(k.size(), 2u);
  EXPECT_TRUE(k[0].accepted);
  EXPECT_FALSE(k[1].accepted);
  EXPECT_THAT(k[1].declined, HasSubstr("at most 1 node"));
}

TEST(Culprits, MostDaemonsSilentMeansNoJudgement) {
  // From a client cut off from the cluster every node looks dead.
  ClusterPicture c = Cluster(3, {"h2", "h3"});
  EXPECT_THAT(CannotJudge(c), HasSubstr("only 1 of 3 daemons answered"));
  for (const Culprit& k : FindCulprits(c, CulpritOptions{})) EXPECT_FALSE(k.accepted);
  EXPECT_EQ(JudgeNode(c, "h2", CulpritOptions{}).kind, NodeVerdict::Kind::kUnknown);
}

TEST(Culprits, AHostCutOffFromEveryPeerSaysSoItself) {
  // node-check on h3 while h3 is partitioned: its daemon answers, sees both
  // peers down, and neither peer's daemon answers from here.
  FetchResult h3 = Node("h3");
  Down(h3, "h1");
  Down(h3, "h2");
  ClusterPicture c = BuildCluster({Unreachable("h1"), Unreachable("h2"), h3});
  NodeVerdict v = JudgeNode(c, "h3", CulpritOptions{});
  EXPECT_EQ(v.kind, NodeVerdict::Kind::kProblem) << v.line;
  EXPECT_THAT(v.line, HasSubstr("cut off: reaches none of its 2 peers"));
  // The peers it cannot reach are not blamed from here.
  EXPECT_EQ(JudgeNode(c, "h1", CulpritOptions{}).kind, NodeVerdict::Kind::kUnknown);
}

TEST(NodeLimit, ParsesCountsAndShares) {
  EXPECT_EQ(ParseNodeLimit("2")->Of(100), 2u);
  EXPECT_EQ(ParseNodeLimit("10%")->Of(100), 10u);
  EXPECT_EQ(ParseNodeLimit("10%")->Of(5), 1u);  // at least one
  EXPECT_EQ(ParseNodeLimit("0")->Of(5), 0u);    // acts on nothing: a dry rule
  for (const char* bad : {"", "x", "-1", "2.5", "0%", "101%", "nan", "1e9"}) {
    EXPECT_FALSE(ParseNodeLimit(bad).ok()) << bad;
  }
}

TEST(ClipLine, OneLineBoundedOnACharacterBoundary) {
  EXPECT_EQ(ClipLine("a\nb", 10), "a b");
  std::string long_text(300, 'x');
  EXPECT_EQ(ClipLine(long_text, 200).size(), 200u);
  std::string utf8 = std::string(198, 'x') + "\xc3\xa9\xc3\xa9";
  const std::string clipped = ClipLine(utf8, 200);
  EXPECT_LE(clipped.size(), 200u);
  EXPECT_THAT(clipped, ::testing::EndsWith("x..."));
}

TEST(Slurm, ParsesScontrolOneLinerWithReason) {
  // As Debian's slurmctld 22.05 prints it (trimmed).
  const std::string text =
      "NodeName=h1 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 NodeAddr=10.251.7.1 State=IDLE "
      "ThreadsPerCore=1 Partitions=main CfgTRES=cpu=1 ExtSensorsTemp=n/s\n"
      "NodeName=h2 Arch=x86_64 CPUAlloc=0 State=IDLE+DRAIN ThreadsPerCore=1 ExtSensorsTemp=n/s "
      "Reason=gloowatch: h2: its daemon does not answer; 2 peers agree "
      "[root@2026-12-07T03:00:44]\n"
      "NodeName=h3 State=DOWN+DRAIN+NOT_RESPONDING Reason=maintenance [admin@2026-12-07T01:00:00]\n"
      "garbage line\n";
  std::vector<SlurmNode> nodes = ParseScontrolNodes(text);
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_EQ(nodes[0].name, "h1");
  EXPECT_EQ(nodes[0].state, "IDLE");
  EXPECT_FALSE(nodes[0].drained());
  EXPECT_EQ(nodes[0].reason, "");
  EXPECT_TRUE(nodes[1].drained());
  EXPECT_EQ(nodes[1].reason, "gloowatch: h2: its daemon does not answer; 2 peers agree");
  EXPECT_TRUE(nodes[2].drained());
  EXPECT_EQ(nodes[2].reason, "maintenance");
  EXPECT_THAT(ParseScontrolNodes("No nodes in the system\n"), IsEmpty());
}

std::vector<SlurmNode> SlurmNodes(int n, const std::map<std::string, std::string>& drained) {
  std::vector<SlurmNode> out;
  for (int i = 1; i <= n; ++i) {
    SlurmNode s;
    s.name = absl::StrCat("h", i);
    auto d = drained.find(s.name);
    s.state = d == drained.end() ? "IDLE" : "IDLE+DRAIN";
    if (d != drained.end()) s.reason = d->second;
    out.push_back(s);
  }
  return out;
}

const absl::Time kT0 = absl::FromUnixSeconds(1800000000);

TEST(ActPlan, DrainsTheCulpritAndRemembersIt) {
  ClusterPicture c = Cluster(4, {"h3"});
  ActPlan p = PlanActions(c, SlurmNodes(4, {}), ActState{}, ActOptions{}, kT0);
  ASSERT_EQ(p.actions.size(), 1u);
  EXPECT_EQ(p.actions[0].kind, ActAction::Kind::kDrain);
  EXPECT_EQ(p.actions[0].node, "h3");
  EXPECT_THAT(p.actions[0].reason, StartsWith("gloowatch: h3: "));
  EXPECT_FALSE(p.held_back);
  ASSERT_EQ(p.next.nodes.count("h3"), 1u);
  EXPECT_EQ(*p.next.nodes["h3"].drained_at, kT0);
}

TEST(ActPlan, HealthyClusterIsLeftAlone) {
  ActPlan p = PlanActions(Cluster(4, {}), SlurmNodes(4, {}), ActState{}, ActOptions{}, kT0);
  EXPECT_THAT(p.actions, IsEmpty());
  EXPECT_THAT(p.notes, IsEmpty());
  EXPECT_THAT(p.next.nodes, IsEmpty());
}

TEST(ActPlan, ResumesItsOwnDrainOnlyAfterHealthyForLong) {
  ClusterPicture healthy = Cluster(4, {});
  const auto slurm = SlurmNodes(4, {{"h3", "gloowatch: h3: down"}});
  ActOptions o;
  o.healthy_for = absl::Minutes(10);
  ActPlan first = PlanActions(healthy, slurm, ActState{}, o, kT0);
  EXPECT_THAT(first.actions, IsEmpty());
  EXPECT_THAT(first.notes, ElementsAre(HasSubstr("h3 stays drained: healthy for 0s of 10m")));
  ASSERT_TRUE(first.next.nodes["h3"].healthy_since.has_value());

  ActPlan later = PlanActions(healthy, slurm, first.next, o, kT0 + absl::Minutes(5));
  EXPECT_THAT(later.actions, IsEmpty());
  // A relapse restarts the count.
  ActPlan relapse = PlanActions(Cluster(4, {"h3"}), slurm, later.next, o, kT0 + absl::Minutes(6));
  EXPECT_THAT(relapse.actions, IsEmpty());
  EXPECT_FALSE(relapse.next.nodes["h3"].healthy_since.has_value());
  ActPlan again = PlanActions(healthy, slurm, relapse.next, o, kT0 + absl::Minutes(7));
  ActPlan not_yet = PlanActions(healthy, slurm, again.next, o, kT0 + absl::Minutes(16));
  EXPECT_THAT(not_yet.actions, IsEmpty());
  ActPlan done = PlanActions(healthy, slurm, not_yet.next, o, kT0 + absl::Minutes(17));
  ASSERT_EQ(done.actions.size(), 1u);
  EXPECT_EQ(done.actions[0].kind, ActAction::Kind::kResume);
  EXPECT_EQ(done.actions[0].node, "h3");
  EXPECT_THAT(done.next.nodes, IsEmpty());
}

TEST(ActPlan, NeverTouchesAnotherDrain) {
  // h3 is dead but drained by an operator; h2 is drained for maintenance
  // and healthy: neither is changed.
  ClusterPicture c = Cluster(4, {"h3"});
  const auto slurm = SlurmNodes(4, {{"h3", "bad dimm"}, {"h2", "maintenance"}});
  ActPlan p = PlanActions(c, slurm, ActState{}, ActOptions{}, kT0);
  EXPECT_THAT(p.actions, IsEmpty());
  EXPECT_THAT(p.notes, ElementsAre(HasSubstr("drained by someone else ('bad dimm')")));
  EXPECT_THAT(p.next.nodes, IsEmpty());
}

TEST(ActPlan, TheLimitCountsItsStandingDrains) {
  ClusterPicture c = Cluster(8, {"h5", "h6"});
  ActOptions o;
  o.culprits.max_nodes = NodeLimit{2, 0};
  // h1 is still drained by gloowatch (and not healthy long enough).
  ActState state;
  state.nodes["h1"].healthy_since = kT0;
  const auto slurm = SlurmNodes(8, {{"h1", "gloowatch: h1: lossy"}});
  ActPlan p = PlanActions(c, slurm, state, o, kT0 + absl::Minutes(1));
  ASSERT_EQ(p.actions.size(), 1u);
  EXPECT_EQ(p.actions[0].kind, ActAction::Kind::kDrain);
  EXPECT_TRUE(p.held_back);
  EXPECT_THAT(p.notes, ::testing::Contains(HasSubstr("gloowatch already drains 2 (h1, h")));
}

TEST(ActPlan, NothingChangesWhenTooFewDaemonsAnswer) {
  ClusterPicture c = Cluster(3, {"h2", "h3"});
  const auto slurm = SlurmNodes(3, {{"h1", "gloowatch: h1: down"}});
  ActState state;
  state.nodes["h1"].healthy_since = kT0;
  ActPlan p = PlanActions(c, slurm, state, ActOptions{}, kT0 + absl::Hours(1));
  EXPECT_THAT(p.actions, IsEmpty());
  EXPECT_TRUE(p.held_back);
  EXPECT_EQ(p.next.nodes.count("h1"), 1u);
}

TEST(ActPlan, OnlyNodeActsOnThatNodeAlone) {
  ClusterPicture c = Cluster(6, {"h2", "h4"});
  ActOptions o;
  o.only_node = "h4";
  ActPlan p = PlanActions(c, SlurmNodes(6, {}), ActState{}, o, kT0);
  ASSERT_EQ(p.actions.size(), 1u);
  EXPECT_EQ(p.actions[0].node, "h4");
}

TEST(ActState, RoundTripsAndRefusesGarbage) {
  gloowatch::testing::TempDir dir;
  const std::string path = dir.path() + "/state.json";
  EXPECT_THAT(LoadActState(path)->nodes, IsEmpty());  // missing: empty
  ActState s;
  s.nodes["h3"] = ActRecord{kT0, "gloowatch: h3: down", kT0 + absl::Minutes(2)};
  s.nodes["h4"] = ActRecord{std::nullopt, "gloowatch: h4", std::nullopt};
  ASSERT_TRUE(SaveActState(path, s).ok());
  absl::StatusOr<ActState> back = LoadActState(path);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back->nodes["h3"].drained_at, kT0);
  EXPECT_EQ(*back->nodes["h3"].healthy_since, kT0 + absl::Minutes(2));
  EXPECT_EQ(back->nodes["h3"].reason, "gloowatch: h3: down");
  EXPECT_FALSE(back->nodes["h4"].drained_at.has_value());
  for (const char* bad : {"{", "[]", "{\"schema\":\"other\"}",
                          "{\"schema\":\"gloowatch.act.v1\",\"nodes\":{\"h\":{\"drained_at\":7}}}",
                          "{\"schema\":\"gloowatch.act.v1\",\"nodes\":{\"h\":[]}}"}) {
    std::ofstream(path, std::ios::trunc) << bad;
    absl::StatusOr<ActState> r = LoadActState(path);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("state file")) << bad;
  }
  EXPECT_FALSE(SaveActState(dir.path() + "/no/such/dir/state.json", s).ok());
}

}  // namespace
}  // namespace gloowatch::client
