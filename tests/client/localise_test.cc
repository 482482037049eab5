// Localisation on synthetic link matrices: each fault shape names its culprit
// and blames nothing else; a healthy matrix names nobody.
#include "client/health/localise.h"

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

}  // namespace
}  // namespace gloowatch::client
