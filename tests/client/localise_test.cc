// Localisation on synthetic link matrices: each fault shape names its culprit
// and blames nothing else; a healthy matrix names nobody.
#include "client/health/localise.h"

#include <map>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gloowatch::client {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// `racks` groups of `per_rack` nodes named r<g>n<i>, every direction measured.
struct Matrix {
  LocaliseInput in;
  std::set<std::pair<uint32_t, uint32_t>> bad;  // directed (from, to)
  std::set<uint32_t> silent;                    // nodes whose daemon its transport says is silent
  std::set<std::pair<uint32_t, uint32_t>> unmeasured;

  Matrix(int racks, int per_rack) {
    for (int g = 0; g < racks; ++g) {
      for (int i = 0; i < per_rack; ++i) {
        in.nodes.push_back({absl::StrCat("r", g, "n", i), absl::StrCat("rack", g), true, ""});
      }
    }
  }
  uint32_t Index(const std::string& name) const {
    for (uint32_t i = 0; i < in.nodes.size(); ++i) {
      if (in.nodes[i].name == name) return i;
    }
    ADD_FAILURE() << "no node " << name;
    return 0;
  }
  void Bad(const std::string& from, const std::string& to) { bad.insert({Index(from), Index(to)}); }
  // Its transport tells the peers its daemon has been silent for 30 s.
  void Silent(const std::string& node) { silent.insert(Index(node)); }
  void BadBoth(const std::string& a, const std::string& b) { Bad(a, b), Bad(b, a); }
  std::vector<Suspect> Run() {
    in.observations.clear();
    for (uint32_t i = 0; i < in.nodes.size(); ++i) {
      for (uint32_t j = 0; j < in.nodes.size(); ++j) {
        if (i == j || unmeasured.count({i, j}) || (!in.nodes[i].reachable)) continue;
        const bool b = bad.count({i, j}) > 0;
        // A bad view of a node whose daemon does not answer is "down"; every
        // other view says how long the peer's daemon has been silent, as
        // today's daemons do (0: alive).
        const bool down = b && !in.nodes[j].reachable;
        std::optional<double> silence;
        if (!down) silence = silent.count(j) ? 30.0 : 0.0;
        in.observations.push_back(
            {i, j, b, b ? absl::StrCat(in.nodes[i].name, "->", in.nodes[j].name, ": loss") : "",
             down, silence});
      }
    }
    return Localise(in);
  }
};

std::vector<std::string> Names(const std::vector<Suspect>& s) {
  std::vector<std::string> out;
  for (const auto& x : s) out.push_back(absl::StrCat(SuspectKindName(x.kind), ":", x.name));
  return out;
}

TEST(Localise, HealthyClusterHasNoSuspects) {
  Matrix m(2, 3);
  EXPECT_TRUE(m.Run().empty());
}

TEST(Localise, EmptyInput) { EXPECT_TRUE(Localise({}).empty()); }

TEST(Localise, NodeWithAllLinksBadBothWays) {
  Matrix m(2, 3);
  for (const char* p : {"r0n0", "r0n2", "r1n0", "r1n1", "r1n2"}) m.BadBoth("r0n1", p);
  auto s = m.Run();
  ASSERT_THAT(Names(s), ElementsAre("node:r0n1"));
  EXPECT_EQ(s[0].bad_links, 5u);
  EXPECT_EQ(s[0].fine_links, 0u);
  EXPECT_EQ(s[0].links.size(), 5u);
  EXPECT_NEAR(s[0].confidence, 0.83, 0.005);  // 5/5 bad, support 5/6
  EXPECT_THAT(s[0].evidence[0], HasSubstr("5 of its 5 measured links bad (5 as r0n1 sees them, 5"));
}

TEST(Localise, NodeLosingOnlyWhatItSends) {
  Matrix m(1, 5);
  for (const char* p : {"r0n0", "r0n2", "r0n3", "r0n4"}) m.Bad("r0n1", p);
  EXPECT_THAT(Names(m.Run()), ElementsAre("node:r0n1"));
}

TEST(Localise, NodeWithMostLinksBad) {
  Matrix m(1, 6);
  for (const char* p : {"r0n0", "r0n2", "r0n3", "r0n4"}) m.BadBoth("r0n1", p);  // r0n5 fine
  auto s = m.Run();
  ASSERT_THAT(Names(s), ElementsAre("node:r0n1"));
  EXPECT_EQ(s[0].fine_links, 1u);
  EXPECT_NEAR(s[0].confidence, 0.8 * 0.8, 0.005);
}

TEST(Localise, UnreachableDaemonSeenDownByEveryPeer) {
  Matrix m(2, 3);
  m.in.nodes[m.Index("r1n2")].reachable = false;  // reports nothing itself
  for (const char* p : {"r0n0", "r0n1", "r0n2", "r1n0", "r1n1"}) m.Bad(p, "r1n2");
  auto s = m.Run();
  ASSERT_THAT(Names(s), ElementsAre("node:r1n2"));
  EXPECT_DOUBLE_EQ(s[0].confidence, 0.99);
  EXPECT_THAT(s[0].evidence_self, ::testing::Contains("its daemon does not answer"));
}

TEST(Localise, StuckDaemonWhoseTransportAnswersIsTheDaemon) {
  Matrix m(2, 3);
  m.in.nodes[m.Index("r0n1")].reachable = false;
  m.Silent("r0n1");
  auto s = m.Run();
  ASSERT_THAT(Names(s), ElementsAre("daemon:r0n1"));
  EXPECT_DOUBLE_EQ(s[0].confidence, 0.95);
  EXPECT_THAT(s[0].evidence_self, ElementsAre("its daemon does not answer"));
  EXPECT_THAT(s[0].evidence_peers,
              ElementsAre("its transport still answers all 5 peers probing it",
                          "its transport says the daemon has been silent for 30 s (5 of 5 peers)"));
}

TEST(Localise, UnreachableButAliveAsItsPeersSayIsNoSuspect) {
  Matrix m(2, 3);
  m.in.nodes[m.Index("r0n1")].reachable = false;  // from here only
  EXPECT_TRUE(m.Run().empty());
}

TEST(Localise, UplinkOfOneRackAmongThree) {
  Matrix m(3, 3);
  for (int i = 0; i < 3; ++i) {
    for (int g : {0, 2}) {
      for (int j = 0; j < 3; ++j) m.BadBoth(absl::StrCat("r1n", i), absl::StrCat("r", g, "n", j));
    }
  }
  auto s = m.Run();
  ASSERT_THAT(Names(s), ElementsAre("group_uplink:rack1"));
  EXPECT_THAT(s[0].groups, ElementsAre("rack1"));
  EXPECT_EQ(s[0].bad_links, 18u);
  EXPECT_EQ(s[0].fine_links, 0u);
  EXPECT_THAT(s[0].evidence[0], HasSubstr("18 of the 18 measured links leaving rack1 bad, 3 of the "
                                          "3 inside it fine"));
  EXPECT_GT(s[0].confidence, 0.9);
}

TEST(Localise, UplinkBetweenTwoRacksNamesBoth) {
  Matrix m(2, 3);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) m.BadBoth(absl::StrCat("r0n", i), absl::StrCat("r1n", j));
  }
  auto s = m.Run();
  ASSERT_THAT(Names(s), ElementsAre("group_uplink:rack0 <-> rack1"));
  EXPECT_THAT(s[0].groups, ElementsAre("rack0", "rack1"));
  EXPECT_EQ(s[0].bad_links, 9u);
}

TEST(Localise, UplinkLossOnlyOneWay) {
  Matrix m(3, 4);
  for (int i = 0; i < 4; ++i) {
    for (int g : {1, 2}) {
      for (int j = 0; j < 4; ++j) m.Bad(absl::StrCat("r0n", i), absl::StrCat("r", g, "n", j));
    }
  }
  EXPECT_THAT(Names(m.Run()), ElementsAre("group_uplink:rack0"));
}

TEST(Localise, SingleLink) {
  Matrix m(2, 3);
  m.BadBoth("r0n0", "r1n2");
  auto s = m.Run();
  ASSERT_THAT(Names(s), ElementsAre("link:r0n0 <-> r1n2"));
  EXPECT_NEAR(s[0].confidence, 0.67, 0.005);  // both directions
  EXPECT_EQ(s[0].evidence.size(), 2u);
}

TEST(Localise, TwoIndependentLinksAreNotANode) {
  Matrix m(1, 6);
  m.Bad("r0n0", "r0n1");
  m.Bad("r0n0", "r0n2");  // 2 of r0n0's 5 links: not most of them
  EXPECT_THAT(Names(m.Run()), ElementsAre("link:r0n0 <-> r0n1", "link:r0n0 <-> r0n2"));
}

TEST(Localise, NodeAndAnUnrelatedLink) {
  Matrix m(2, 4);
  for (const char* p : {"r0n0", "r0n1", "r0n3", "r1n0", "r1n1", "r1n2", "r1n3"})
    m.BadBoth("r0n2", p);
  m.Bad("r1n0", "r1n3");
  EXPECT_THAT(Names(m.Run()), ElementsAre("node:r0n2", "link:r1n0 <-> r1n3"));
}

TEST(Localise, OverloadedHostInsteadOfBadNetwork) {
  Matrix m(2, 3);
  m.in.nodes[m.Index("r1n1")].overload = "probe scheduling delay p99 40 ms";
  for (const char* p : {"r0n0", "r0n1", "r0n2", "r1n0", "r1n2"}) m.BadBoth("r1n1", p);
  auto s = m.Run();
  ASSERT_THAT(Names(s), ElementsAre("overloaded_host:r1n1"));
  EXPECT_EQ(s[0].evidence[0], "probe scheduling delay p99 40 ms");
}

TEST(Localise, OverloadedHostWithOneSlowLinkIsStillTheHost) {
  Matrix m(1, 4);
  m.in.nodes[m.Index("r0n3")].overload = "run queue 9 per core";
  m.Bad("r0n0", "r0n3");
  EXPECT_THAT(Names(m.Run()), ElementsAre("overloaded_host:r0n3"));
}

TEST(Localise, OverloadedHostWithFineLinksIsNamedLast) {
  Matrix m(1, 4);
  m.in.nodes[m.Index("r0n2")].overload = "CPU steal 30%";
  m.BadBoth("r0n0", "r0n1");
  auto s = m.Run();
  ASSERT_THAT(Names(s), ElementsAre("link:r0n0 <-> r0n1", "overloaded_host:r0n2"));
  EXPECT_EQ(s[1].bad_links, 0u);
  EXPECT_DOUBLE_EQ(s[1].confidence, 0.5);
}

// A sampled mesh: most pairs unmeasured. The node is still found from the
// links that are measured, and unmeasured pairs count neither way.
TEST(Localise, SampledMeshFindsNodeFromMeasuredLinksOnly) {
  Matrix m(4, 10);
  const uint32_t n = static_cast<uint32_t>(m.in.nodes.size());
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t j = 0; j < n; ++j) {
      // measured: same rack, ring neighbours, and every 7th pair
      const bool same = i / 10 == j / 10;
      const bool ring = (i + 1) % n == j || (j + 1) % n == i;
      if (!same && !ring && (i * 31 + j * 17) % 7 != 0) m.unmeasured.insert({i, j});
    }
  }
  const std::string victim = "r2n4";
  const uint32_t v = m.Index(victim);
  for (uint32_t j = 0; j < n; ++j) {
    if (j != v && !m.unmeasured.count({v, j})) m.bad.insert({v, j});
    if (j != v && !m.unmeasured.count({j, v})) m.bad.insert({j, v});
  }
  auto s = m.Run();
  ASSERT_THAT(Names(s), ElementsAre("node:r2n4"));
  EXPECT_EQ(s[0].fine_links, 0u);
}

// Only one end reports (the other daemon unreachable for the client): the
// reported half is enough for the rack uplink.
TEST(Localise, PartialDataUplink) {
  Matrix m(3, 3);
  for (const char* dead : {"r2n0", "r2n1"}) m.in.nodes[m.Index(dead)].reachable = false;
  for (int i = 0; i < 3; ++i) {
    for (int g : {1, 2}) {
      for (int j = 0; j < 3; ++j) m.BadBoth(absl::StrCat("r0n", i), absl::StrCat("r", g, "n", j));
    }
  }
  EXPECT_THAT(Names(m.Run()), ElementsAre("group_uplink:rack0"));
}

TEST(Localise, SuspectsAreBounded) {
  Matrix m(1, 400);
  // 200 independent bad links: every one a suspect, but kMaxSuspects at most.
  for (int i = 0; i < 400; i += 2) m.Bad(absl::StrCat("r0n", i), absl::StrCat("r0n", i + 1));
  auto s = m.Run();
  EXPECT_EQ(s.size(), kMaxSuspects);
  for (const auto& x : s) EXPECT_EQ(x.kind, SuspectKind::kLink);
}

TEST(Localise, ObservationsOutOfRangeAreIgnored) {
  LocaliseInput in;
  in.nodes = {{"a", "", true, ""}, {"b", "", true, ""}};
  in.observations = {{0, 7, true, "x", false, std::nullopt},
                     {1, 1, true, "self", false, std::nullopt},
                     {0, 1, true, "a->b: down", true, std::nullopt}};
  auto s = Localise(in);
  ASSERT_THAT(Names(s), ElementsAre("link:a <-> b"));
  EXPECT_THAT(s[0].evidence, ElementsAre("a->b: down"));
}

// --- the control plane -------------------------------------------------------------

// Killed a moment ago: its daemon's port refuses us and the peers that probed
// it since see it down; the others have not probed it yet. The node, not
// the links of the peers that noticed first.
TEST(Localise, RefusingDaemonSeenDownByTheFirstPeersIsTheNode) {
  Matrix m(2, 3);
  const uint32_t v = m.Index("r1n0");
  m.in.nodes[v].reachable = false;
  m.in.nodes[v].refused = true;
  m.Bad("r0n0", "r1n0");
  m.Bad("r1n2", "r1n0");
  auto s = m.Run();
  ASSERT_THAT(Names(s), ElementsAre("node:r1n0"));
  EXPECT_DOUBLE_EQ(s[0].confidence, 0.9);
  EXPECT_THAT(s[0].evidence[0], HasSubstr("refuses connections"));
  EXPECT_THAT(s[0].evidence[0], HasSubstr("2 of the 5 peers"));
}

// The same without the refusal (a timeout: perhaps our own path to it) is
// left to the links, as before.
TEST(Localise, TimedOutDaemonSeenDownByTwoPeersIsLeftToTheLinks) {
  Matrix m(2, 3);
  const uint32_t v = m.Index("r1n0");
  m.in.nodes[v].reachable = false;
  m.Bad("r0n0", "r1n0");
  m.Bad("r1n2", "r1n0");
  EXPECT_THAT(Names(m.Run()), ElementsAre("link:r0n0 <-> r1n0", "link:r1n0 <-> r1n2"));
}

// Frozen a moment ago: the peers that probed it since hear its daemon is
// silent; one whose last reply came before still says alive. The daemon.
TEST(Localise, SilentDaemonNamedBeforeEveryPeerHeardIt) {
  Matrix m(2, 3);
  const uint32_t v = m.Index("r0n1");
  m.in.nodes[v].reachable = false;
  m.Silent("r0n1");
  m.Run();
  m.in.observations[0].daemon_silent_seconds = 0;  // r0n0's last reply was older
  ASSERT_EQ(m.in.observations[0].to, v);
  auto s = Localise(m.in);
  ASSERT_THAT(Names(s), ElementsAre("daemon:r0n1"));
  EXPECT_DOUBLE_EQ(s[0].confidence, 0.8);
}

// --- pooled loss -----------------------------------------------------------------

TEST(Localise, LossEvidenceAndRuledOut) {
  EXPECT_EQ(LossEvidence({0, 1000}, 0.001), 0);
  EXPECT_EQ(LossEvidence({1, 1000}, 0.001), 0);  // at the base rate
  // 20 of 1000 against 0.1%: 2 [20 ln 20 + 980 ln(0.98/0.999)] = 82.1
  EXPECT_NEAR(LossEvidence({20, 1000}, 0.001), 82.1, 0.1);
  EXPECT_EQ(LossEvidence({5, 0}, 0.001), 0);
  // 0 of 500 rules out 1% (e^-5 < 1%); 0 of 400 does not (e^-4 = 1.8%).
  EXPECT_TRUE(LossRuledOut({0, 500}, 0.01));
  EXPECT_FALSE(LossRuledOut({0, 400}, 0.01));
  // 20 of 6000 (0.33%) rules out 1% (P(X <= 20 | 60) ~ 1e-9); 50 does not.
  EXPECT_TRUE(LossRuledOut({20, 6000}, 0.01));
  EXPECT_FALSE(LossRuledOut({50, 6000}, 0.01));
  EXPECT_FALSE(LossRuledOut({0, 0}, 0.01));
}

// What each direction sent and lost over the window, no direction with
// enough segments to judge on its own (judged = false when it shows a loss,
// as LinkMatrixOf does).
struct LossMatrix {
  LocaliseInput in;
  std::map<std::pair<uint32_t, uint32_t>, LossCount> counts;  // directed
  std::map<std::pair<uint32_t, uint32_t>, LossCount> recent;
  std::map<std::pair<uint32_t, uint32_t>, LossCount> latest;
  std::set<std::pair<uint32_t, uint32_t>> cut;  // nothing acknowledged for 5 s

  LossMatrix(int racks, int per_rack) {
    for (int g = 0; g < racks; ++g) {
      for (int i = 0; i < per_rack; ++i) {
        in.nodes.push_back({absl::StrCat("r", g, "n", i), absl::StrCat("rack", g), true, ""});
      }
    }
    for (uint32_t i = 0; i < in.nodes.size(); ++i) {
      for (uint32_t j = 0; j < in.nodes.size(); ++j) {
        if (i != j) counts[{i, j}] = {0, 84};  // a minute of latency probes
      }
    }
  }
  uint32_t Index(const std::string& name) const {
    for (uint32_t i = 0; i < in.nodes.size(); ++i) {
      if (in.nodes[i].name == name) return i;
    }
    return 0;
  }
  std::string Group(uint32_t i) const { return in.nodes[i].group; }
  std::vector<Suspect> Run() {
    in.observations.clear();
    for (const auto& [d, c] : counts) {
      LinkObservation o;
      o.from = d.first;
      o.to = d.second;
      o.judged = c.lost == 0;
      o.loss = c;
      if (auto it = recent.find(d); it != recent.end()) o.recent_loss = it->second;
      if (auto it = latest.find(d); it != latest.end()) o.latest_loss = it->second;
      if (cut.count(d)) {
        o.bad = o.down = o.judged = true;
        o.cut_seconds = 5;
        o.evidence = "not answering";
      }
      in.observations.push_back(o);
    }
    return Localise(in);
  }
};

// A NIC losing 2% both ways while the loss follow-up runs on its host (its
// own directions send 1,200 segments a minute, its peers' toward it the
// latency probes' 84): the node, on pooled evidence.
TEST(Localise, PooledLossNamesTheLossyNic) {
  LossMatrix m(2, 3);
  const uint32_t v = m.Index("r1n1");
  for (auto& [d, c] : m.counts) {
    if (d.first == v) c = {24, 1200};
    if (d.second == v) c = {2, 84};
  }
  auto s = m.Run();
  ASSERT_THAT(Names(s), ElementsAre("node:r1n1"));
  ASSERT_TRUE(s[0].pooled_loss_ratio.has_value());
  EXPECT_NEAR(*s[0].pooled_loss_ratio, 130.0 / 6420, 1e-4);
  EXPECT_EQ(s[0].bad_links, 5u);
  EXPECT_NEAR(s[0].confidence, 0.83, 0.005);
  EXPECT_THAT(s[0].evidence[0], HasSubstr("TCP loss pooled over its 5 links: 2.02%"));
  EXPECT_THAT(s[0].evidence_self, ::testing::Contains(HasSubstr("r1n1->")));
}

// Every link between the two racks loses 5%: the uplink, not a node.
TEST(Localise, PooledLossNamesTheUplink) {
  LossMatrix m(2, 3);
  for (auto& [d, c] : m.counts) {
    if (m.Group(d.first) != m.Group(d.second)) c = {30, 600};
  }
  auto s = m.Run();
  ASSERT_THAT(Names(s), ElementsAre("group_uplink:rack0 <-> rack1"));
  EXPECT_EQ(s[0].bad_links, 9u);
}

// An uplink's loss 10 s old: each direction between the racks carried a
// clean bulk transfer before it (3,000 segments), so the minute loses under
// 1%; its recent part (the last 30 s: 600 of those, and 600 since the fault,
// 5% lost) shows the uplink; younger, its last 10 s. Inside the racks,
// nothing.
TEST(Localise, PooledLossStartingNamedOnTheRecentPart) {
  LossMatrix m(2, 3);
  for (auto& [d, c] : m.counts) {
    const bool across = m.Group(d.first) != m.Group(d.second);
    c = across ? LossCount{30, 3600} : LossCount{0, 3600};
    m.recent[d] = across ? LossCount{30, 1200} : LossCount{0, 1200};
  }
  std::vector<Suspect> s = m.Run();
  ASSERT_THAT(Names(s), ElementsAre("group_uplink:rack0 <-> rack1"));
  EXPECT_THAT(s[0].evidence[0], HasSubstr("TCP loss of the last 30 s pooled over its 9 links: "
                                          "2.50% (540 of 21600 segments lost)"));
  // Seconds old, under the threshold over the last 30 s too (their clean
  // transfers): its last 10 s show it.
  for (auto& [d, c] : m.recent) c = {c.lost > 0 ? uint64_t{10} : 0, 1200};
  for (const auto& [d, c] : m.recent) m.latest[d] = {c.lost, 200};
  s = m.Run();
  ASSERT_THAT(Names(s), ElementsAre("group_uplink:rack0 <-> rack1"));
  EXPECT_THAT(s[0].evidence[0], HasSubstr("TCP loss of the last 10 s pooled over its 9 links: "
                                          "5.00% (180 of 3600 segments lost)"));
  // Clean there too: nobody.
  for (auto& [d, c] : m.latest) c.lost = 0;
  for (auto& [d, c] : m.recent) c.lost = 0;
  EXPECT_TRUE(m.Run().empty());
}

// A NIC's loss seconds old: in the last 10 s one of its links crosses the
// threshold first. No link is named on a part of the window (it would be the
// node's first link, not a link fault); the node is, once its links
// together cross it there.
TEST(Localise, PooledLossStartingNamesNoLinkOnAPart) {
  LossMatrix m(2, 3);
  const uint32_t v = m.Index("r1n1"), first = m.Index("r0n0");
  for (auto& [d, c] : m.counts) {
    c = {0, 20000};
    m.recent[d] = {0, 10000};
    m.latest[d] = {0, 1000};
    if (d.first != v && d.second != v) continue;
    const bool crossed = d.first == first || d.second == first;
    m.latest[d] = {crossed ? uint64_t{20} : uint64_t{2}, 1000};
    m.recent[d].lost = m.latest[d].lost;
    c.lost = m.latest[d].lost;
  }
  EXPECT_TRUE(m.Run().empty()) << Names(m.Run())[0];
  for (auto& [d, c] : m.latest) {
    if (d.first == v || d.second == v) c.lost = 20;
  }
  EXPECT_THAT(Names(m.Run()), ElementsAre("node:r1n1"));
}

// One link's 5% seconds old, one way (as the catalogue's link_loss): its
// window and its last 30 s still hold mostly the clean transfers from
// before, its last 10 s show it, and its ends' other links are clean there.
// Still no link on that part: on the racks bed an uplink's loss starting
// looked the same (one crossing link lost 1.5% in its last 10 s while its
// ends' busy inside links diluted what their other crossing links lost).
// The link on its minute.
TEST(Localise, ALinksLossStartingIsNamedOnItsMinuteOnly) {
  LossMatrix m(2, 3);
  const uint32_t a = m.Index("r0n1"), b = m.Index("r0n2");
  for (auto& [d, c] : m.counts) {
    c = {0, 50000};
    m.recent[d] = {0, 25000};
    m.latest[d] = {0, 5000};
  }
  m.counts[{b, a}] = {150, 53000};
  m.recent[{b, a}] = {150, 28000};
  m.latest[{b, a}] = {100, 2000};
  EXPECT_THAT(m.Run(), ::testing::IsEmpty());
  m.counts[{b, a}] = {1500, 40000};
  m.recent[{b, a}] = {700, 20000};
  EXPECT_THAT(Names(m.Run()), ElementsAre("link:r0n1 <-> r0n2"));
}

// An uplink's 5% seconds old stalls one link's commands for 5 s (RTO back-off
// over a few losses in a row): no link while its ends lose on their other
// links in the last 10 s (their windows still hold the clean transfers from
// before). With those clean, the cut link is the link.
TEST(Localise, ACutLinkWhoseEndsLoseElsewhereIsNoLink) {
  LossMatrix m(2, 3);
  const uint32_t a = m.Index("r0n0"), b = m.Index("r1n0");
  m.cut = {{a, b}, {b, a}};
  for (auto& [d, c] : m.counts) {
    const bool across = m.Group(d.first) != m.Group(d.second);
    c = {0, 20000};
    m.latest[d] = {across ? uint64_t{7} : 0, 1000};  // 0.7%: no uplink yet
  }
  EXPECT_THAT(m.Run(), ::testing::IsEmpty());
  for (auto& [d, c] : m.latest) c.lost = 0;
  EXPECT_THAT(Names(m.Run()), ElementsAre("link:r0n0 <-> r1n0"));
}

// One direction of one link loses 5%: that link, not either node.
TEST(Localise, PooledLossOnOneDirectionIsTheLink) {
  LossMatrix m(2, 3);
  m.counts[{m.Index("r1n0"), m.Index("r0n2")}] = {30, 600};
  EXPECT_THAT(Names(m.Run()), ElementsAre("link:r0n2 <-> r1n0"));
}

// Repaired: the window still holds the loss, its recent half rules it out.
TEST(Localise, PooledLossTheRecentSegmentsRuleOutIsPast) {
  LossMatrix m(2, 3);
  const uint32_t v = m.Index("r1n1");
  for (auto& [d, c] : m.counts) {
    if (d.first == v) {
      c = {24, 1200};
      m.recent[d] = {0, 600};
    }
  }
  EXPECT_TRUE(m.Run().empty());
  for (auto& [d, c] : m.recent) c = {12, 600};  // still losing
  EXPECT_THAT(Names(m.Run()), ElementsAre("node:r1n1"));
}

// Below the threshold (0.5%) is not a fault, however many segments show it.
TEST(Localise, PooledLossBelowTheThresholdIsNoSuspect) {
  LossMatrix m(2, 3);
  for (auto& [d, c] : m.counts) {
    if (d.first == m.Index("r0n0")) c = {30, 6000};
  }
  EXPECT_TRUE(m.Run().empty());
}

// A direction judged bad on its own (a bandwidth probe's segments) inside a
// NIC found on pooled evidence: one suspect, the node, not a link beside it.
TEST(Localise, PooledNodeExplainsItsBadLink) {
  LossMatrix m(2, 3);
  const uint32_t v = m.Index("r0n2");
  for (auto& [d, c] : m.counts) {
    if (d.first == v) c = {24, 1200};
  }
  std::vector<Suspect> s = m.Run();
  for (auto& o : m.in.observations) {
    if (o.from == v && o.to == m.Index("r1n2")) {
      o.bad = true;
      o.judged = true;
      o.evidence = "r0n2->r1n2: TCP loss 2.00%";
    }
  }
  EXPECT_THAT(Names(Localise(m.in)), ElementsAre("node:r0n2"));
}

// --- the jobs' own connections as evidence ---------------------------------------

// 5% of what r0n1 receives is dropped while a job runs: the probes have seen
// nothing yet (their minute holds no loss), the job's connections into r0n1
// lose 5% of tens of thousands of segments. The node, its evidence the job's.
TEST(Localise, JobLinksNameTheLossyNicTheProbesMiss) {
  LossMatrix m(1, 3);
  const uint32_t v = m.Index("r0n1"), a = m.Index("r0n0"), c = m.Index("r0n2");
  m.in.job_links = {{a, v, {1550, 31000}}, {c, v, {1480, 29600}}, {v, a, {2, 30500}},
                    {v, c, {0, 30100}},    {a, c, {1, 30000}},    {c, a, {0, 30000}}};
  std::vector<Suspect> s = m.Run();
  ASSERT_THAT(Names(s), ElementsAre("node:r0n1"));
  ASSERT_TRUE(s[0].pooled_loss_ratio.has_value());
  ASSERT_TRUE(s[0].job_loss.has_value());
  EXPECT_EQ(s[0].job_loss->lost, 3032u);
  EXPECT_EQ(s[0].job_loss->sent, 121200u);
  EXPECT_EQ(s[0].bad_links, 2u);
  EXPECT_THAT(s[0].evidence[0], HasSubstr("121,200 of the segments the training jobs' own"));
  // The senders' kernels retransmitted: what its peers say of it.
  EXPECT_THAT(s[0].evidence_peers,
              ElementsAre("job links: 5.0% of 31,000 segments r0n0->r0n1 retransmitted",
                          "job links: 5.0% of 29,600 segments r0n2->r0n1 retransmitted"));
  EXPECT_THAT(s[0].evidence_self, ::testing::IsEmpty());
}

// Seconds into a 5% loss into r0n1: the probes' minute (the loss
// follow-up's segments, most from before) loses 0.17%, and with the job's
// light traffic 0.63%, under the threshold; the job's last 15 s alone name it.
TEST(Localise, JobLinksAloneNameALossTheProbesMinuteDilutes) {
  LossMatrix m(1, 3);
  const uint32_t v = m.Index("r0n1"), a = m.Index("r0n0"), c = m.Index("r0n2");
  for (auto& [d, count] : m.counts)
    count = d.second == v ? LossCount{10, 6000} : LossCount{0, 6000};
  m.in.job_links = {{a, v, {90, 1800}}, {c, v, {85, 1700}}, {v, a, {0, 1750}}, {v, c, {0, 1800}}};
  std::vector<Suspect> s = m.Run();
  ASSERT_THAT(Names(s), ElementsAre("node:r0n1"));
  ASSERT_TRUE(s[0].pooled_loss_ratio.has_value());
  EXPECT_NEAR(*s[0].pooled_loss_ratio, 175.0 / 7050, 1e-6);
  EXPECT_THAT(s[0].evidence[0],
              HasSubstr("TCP loss of the training jobs' own connections pooled over its 2 links: "
                        "2.48%"));
  EXPECT_THAT(s[0].evidence_peers,
              ::testing::Contains("job links: 5.0% of 1,800 segments r0n0->r0n1 retransmitted"));
  // Without the job: nobody yet.
  m.in.job_links.clear();
  EXPECT_TRUE(m.Run().empty());
}

// One direction of the job's connections loses (one path, one cable): the
// link, not a node; the job's healthy traffic elsewhere blames nobody.
TEST(Localise, JobLinksOnOneDirectionAreTheLink) {
  LossMatrix m(1, 4);
  for (uint32_t i = 0; i < 4; ++i) {
    for (uint32_t j = 0; j < 4; ++j) {
      if (i != j) m.in.job_links.push_back({i, j, {0, 20000}});
    }
  }
  EXPECT_TRUE(m.Run().empty());
  for (auto& j : m.in.job_links) {
    if (j.from == 2 && j.to == 3) j.loss = {600, 20000};
  }
  std::vector<Suspect> s = m.Run();
  ASSERT_THAT(Names(s), ElementsAre("link:r0n2 <-> r0n3"));
  EXPECT_THAT(s[0].evidence_peers,
              ElementsAre("job links: 3.0% of 20,000 segments r0n2->r0n3 retransmitted"));
}

// The probes already judge every link of r0n1 bad on their own (the loss
// follow-up's segments): the node is named on its bad links, and what the
// job's connections over them say is added to its evidence.
TEST(Localise, JobLinksAreEvidenceForANodeNamedOnItsBadLinks) {
  LossMatrix m(2, 2);
  const uint32_t v = m.Index("r0n1");
  for (auto& [d, c] : m.counts) {
    if (d.second == v) c = {60, 1200};
  }
  m.in.job_links = {{m.Index("r1n0"), v, {980, 20000}}, {v, m.Index("r1n0"), {0, 20000}}};
  m.Run();
  for (auto& o : m.in.observations) {
    if (o.to == v) {
      o.bad = true;
      o.judged = true;
      o.evidence = absl::StrCat(m.in.nodes[o.from].name, "->r0n1: TCP loss 5.00%");
    }
  }
  std::vector<Suspect> s = Localise(m.in);
  ASSERT_THAT(Names(s), ElementsAre("node:r0n1"));
  EXPECT_FALSE(s[0].pooled_loss_ratio.has_value());
  ASSERT_TRUE(s[0].job_loss.has_value());
  EXPECT_EQ(s[0].job_loss->sent, 40000u);
  EXPECT_THAT(s[0].evidence,
              ::testing::Contains("job links: 4.9% of 20,000 segments r1n0->r0n1 retransmitted"));
}

// A job's connections lose below the threshold (congestion drops TCP uses
// to pace itself): nobody, however many segments show it.
TEST(Localise, JobLinksBelowTheThresholdBlameNobody) {
  LossMatrix m(2, 2);
  for (uint32_t i = 0; i < 4; ++i) {
    for (uint32_t j = 0; j < 4; ++j) {
      if (i != j) m.in.job_links.push_back({i, j, {150, 50000}});  // 0.3%
    }
  }
  EXPECT_TRUE(m.Run().empty());
}

// The job's window is recent: a repaired NIC whose probes' minute still
// holds the loss clears once the job's connections (and the probes' recent
// half) carry its segments clean.
TEST(Localise, JobLinksCleanNowRuleOutThePastLoss) {
  LossMatrix m(1, 3);
  const uint32_t v = m.Index("r0n1");
  for (auto& [d, c] : m.counts) {
    if (d.second == v) c = {20, 600};
  }
  EXPECT_THAT(Names(m.Run()), ElementsAre("node:r0n1"));
  for (uint32_t i = 0; i < 3; ++i) {
    if (i != v) m.in.job_links.push_back({i, v, {0, 20000}});
  }
  EXPECT_TRUE(m.Run().empty());
}

// Segments drawn at random: a healthy cluster of 12 (stray losses at 0.05%,
// some hosts following up a loss) names nobody in 2,000 draws; a NIC
// losing 2% is named, and nothing else, in nearly every draw of half a
// minute's segments.
TEST(Localise, PooledLossOnRandomSegments) {
  std::mt19937_64 rng(20261207);
  auto draw = [&](uint64_t n, double p) {
    return LossCount{std::binomial_distribution<uint64_t>(n, p)(rng), n};
  };
  int false_blames = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    LossMatrix m(3, 4);
    for (auto& [d, c] : m.counts) c = draw(d.first % 3 == 0 ? 1200 : 84, 0.0005);
    false_blames += m.Run().empty() ? 0 : 1;
  }
  EXPECT_EQ(false_blames, 0);
  int named = 0, wrong = 0;
  for (int trial = 0; trial < 200; ++trial) {
    LossMatrix m(3, 4);
    const uint32_t v = m.Index("r1n2");
    for (auto& [d, c] : m.counts) {
      const bool lossy = d.first == v || d.second == v;
      // Half a minute: the victim's own directions followed up, the rest not.
      c = draw(d.first == v ? 600 : 42, lossy ? 0.02 : 0.0005);
    }
    std::vector<Suspect> s = m.Run();
    if (!s.empty() && Names(s)[0] == "node:r1n2") ++named;
    for (size_t i = 0; i < s.size(); ++i) {
      if (Names(s)[i] != "node:r1n2") ++wrong;
    }
  }
  EXPECT_GE(named, 190);
  EXPECT_EQ(wrong, 0);
}

}  // namespace
}  // namespace gloowatch::client
