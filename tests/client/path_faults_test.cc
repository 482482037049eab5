// Path-dependent faults on synthetic inputs: some probe flows of a link (or
// of the links between two racks) lossy or failing and others clean names a
// `path` suspect and blames no node, uplink or link; all flows equally lossy
// is the link's, a node's or an uplink's, never a path's.
#include "client/health/path_faults.h"

#include <functional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/health/localise.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gloowatch::client {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kSegments = 300;  // a flow's segments over the window
constexpr uint32_t kFlows = 4;

// `racks` groups of `per_rack` nodes r<g>n<i> (no groups when `racks` is 0:
// one rack without a name), every direction measured over kFlows flows.
// `lost(from, to, flow)` says how many of a flow's kSegments were lost.
struct Bed {
  LocaliseInput in;
  std::function<uint64_t(uint32_t, uint32_t, uint32_t)> lost = [](uint32_t, uint32_t, uint32_t) {
    return uint64_t{0};
  };
  std::function<uint64_t(uint32_t, uint32_t, uint32_t)> failures =
      [](uint32_t, uint32_t, uint32_t) { return uint64_t{0}; };
  uint64_t segments = kSegments;

  Bed(int racks, int per_rack) {
    for (int g = 0; g < std::max(racks, 1); ++g) {
      for (int i = 0; i < per_rack; ++i) {
        in.nodes.push_back(
            {absl::StrCat("r", g, "n", i), racks == 0 ? "" : absl::StrCat("rack", g), true, ""});
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
  bool Across(uint32_t a, uint32_t b) const { return in.nodes[a].group != in.nodes[b].group; }

  // The observations as cluster.cc builds them: a direction whose flows
  // together lose 1% or more is bad (TCP loss), its segments pooled.
  LocaliseInput Input() const {
    LocaliseInput out = in;
    out.observations.clear();
    for (uint32_t i = 0; i < in.nodes.size(); ++i) {
      for (uint32_t j = 0; j < in.nodes.size(); ++j) {
        if (i == j) continue;
        LinkObservation o;
        o.from = i;
        o.to = j;
        LossCount total;
        for (uint32_t f = 0; f < kFlows; ++f) {
          FlowObservation flow;
          flow.flow = f;
          flow.loss = {lost(i, j, f), segments};
          flow.failures_in_window = failures(i, j, f);
          total.lost += flow.loss.lost;
          total.sent += flow.loss.sent;
          o.flows.push_back(flow);
        }
        o.loss = total;
        o.recent_loss = LossCount{total.lost / 2, total.sent / 2};
        const double ratio = static_cast<double>(total.lost) / static_cast<double>(total.sent);
        o.bad = ratio >= 0.01;
        o.judged = true;
        if (o.bad) {
          o.evidence = absl::StrFormat("%s->%s: TCP loss %.2f%%", in.nodes[i].name,
                                       in.nodes[j].name, ratio * 100);
        }
        o.daemon_silent_seconds = 0;
        out.observations.push_back(o);
      }
    }
    return out;
  }
};

std::vector<std::string> Names(const std::vector<Suspect>& s) {
  std::vector<std::string> out;
  for (const auto& x : s) out.push_back(absl::StrCat(SuspectKindName(x.kind), ":", x.name));
  return out;
}

// ECMP's hash, as a test fixes it: which flows of a direction take the bad
// member (flows 1 and 3 of every direction across, and flow 0 of one).
bool OnBadMember(uint32_t from, uint32_t to, uint32_t flow) {
  return flow % 2 == 1 || (from == 0 && to == 2 && flow == 0);
}

TEST(PathFaults, BadEcmpMemberBetweenTwoRacksIsAPathNotALinkOrUplink) {
  Bed bed(2, 2);
  bed.lost = [&](uint32_t a, uint32_t b, uint32_t f) -> uint64_t {
    return bed.Across(a, b) && OnBadMember(a, b, f) ? 30 : 0;  // 10%
  };
  const LocaliseInput in = bed.Input();
  const std::vector<Suspect> s = Localise(in);
  ASSERT_EQ(Names(s), std::vector<std::string>{"path:rack0 <-> rack1"});
  EXPECT_EQ(s[0].groups, (std::vector<std::string>{"rack0", "rack1"}));
  // 8 directions across, 4 flows each: 2 lossy in each, 3 in r0n0 -> r1n0.
  EXPECT_THAT(s[0].evidence[0], HasSubstr("17 of 32 probe flows between rack0 and rack1 lossy"));
  EXPECT_THAT(s[0].evidence[0], HasSubstr("15 clean"));
  EXPECT_THAT(s[0].evidence[0], HasSubstr("path-dependent fault"));
  ASSERT_TRUE(s[0].pooled_loss_ratio.has_value());
  EXPECT_NEAR(*s[0].pooled_loss_ratio, 0.1, 1e-9);
  EXPECT_EQ(s[0].bad_links, 4u);  // every link across
  EXPECT_EQ(s[0].links.size(), 4u);
  // Every lossy direction's flows disagree: 17/18 support.
  EXPECT_NEAR(s[0].confidence, 0.94, 0.005);
  EXPECT_THAT(s[0].evidence[1], HasSubstr("r0n0->r1n0: flow 0 loses 10.0% (30 of 300)"));
  EXPECT_THAT(s[0].evidence[1], HasSubstr("; flow 2 clean"));
}

TEST(PathFaults, OneLossyFlowOfFourBetweenTwoRacks) {
  Bed bed(2, 2);
  bed.lost = [&](uint32_t a, uint32_t b, uint32_t f) -> uint64_t {
    return a == 0 && b == 2 && f == 2 ? 30 : 0;
  };
  const std::vector<Suspect> s = Localise(bed.Input());
  ASSERT_EQ(Names(s), std::vector<std::string>{"path:rack0 <-> rack1"});
  EXPECT_THAT(s[0].evidence[0], HasSubstr("1 of 32 probe flows between rack0 and rack1 lossy"));
  EXPECT_EQ(s[0].links, (std::vector<std::pair<std::string, std::string>>{{"r0n0", "r1n0"}}));
  EXPECT_NEAR(s[0].confidence, 0.5, 1e-9);  // one flow: 1/2 support
}

TEST(PathFaults, AllFlowsOfALinkEquallyLossyIsTheLink) {
  Bed bed(2, 2);
  bed.lost = [&](uint32_t a, uint32_t b, uint32_t) -> uint64_t {
    return (a == 0 && b == 2) || (a == 2 && b == 0) ? 30 : 0;
  };
  const std::vector<Suspect> s = Localise(bed.Input());
  ASSERT_EQ(Names(s), std::vector<std::string>{"link:r0n0 <-> r1n0"});
  EXPECT_TRUE(FindPathFaults(bed.Input()).suspects.empty());
}

TEST(PathFaults, LossyNicIsTheNode) {
  // Every flow into r1n0 loses, across the racks and inside its own.
  Bed bed(2, 3);
  bed.lost = [&](uint32_t, uint32_t b, uint32_t) -> uint64_t { return b == 3 ? 30 : 0; };
  const std::vector<Suspect> s = Localise(bed.Input());
  ASSERT_FALSE(s.empty());
  EXPECT_EQ(Names(s)[0], "node:r1n0");
  for (const Suspect& x : s) EXPECT_NE(x.kind, SuspectKind::kPath) << x.name;
}

TEST(PathFaults, LossyUplinkIsTheUplink) {
  Bed bed(2, 2);
  bed.lost = [&](uint32_t a, uint32_t b, uint32_t) -> uint64_t {
    return bed.Across(a, b) ? 30 : 0;
  };
  const std::vector<Suspect> s = Localise(bed.Input());
  ASSERT_EQ(s.size(), 1u) << testing::PrintToString(Names(s));
  EXPECT_EQ(s[0].kind, SuspectKind::kGroupUplink);
  EXPECT_TRUE(FindPathFaults(bed.Input()).suspects.empty());
}

TEST(PathFaults, HealthyFlowsNameNobody) {
  Bed bed(2, 2);
  EXPECT_TRUE(Localise(bed.Input()).empty());
  EXPECT_TRUE(FindPathFaults(bed.Input()).suspects.empty());
}

TEST(PathFaults, TooFewSegmentsAreNoEvidence) {
  Bed bed(2, 2);
  bed.segments = kPathMinSegments - 1;
  bed.lost = [&](uint32_t a, uint32_t b, uint32_t f) -> uint64_t {
    return bed.Across(a, b) && f == 1 ? 10 : 0;
  };
  EXPECT_TRUE(FindPathFaults(bed.Input()).suspects.empty());
}

TEST(PathFaults, LossBelowTheThresholdIsNoPath) {
  Bed bed(2, 2);
  bed.lost = [&](uint32_t a, uint32_t b, uint32_t f) -> uint64_t {
    return bed.Across(a, b) && f == 1 ? 2 : 0;  // 0.67% < 1%
  };
  EXPECT_TRUE(FindPathFaults(bed.Input()).suspects.empty());
}

TEST(PathFaults, FailingFlowOfALinkWithoutGroups) {
  // No groups: the unit is the pair of nodes.
  Bed bed(0, 3);
  bed.failures = [&](uint32_t a, uint32_t b, uint32_t f) -> uint64_t {
    return a == 0 && b == 1 && f == 3 ? 2 : 0;
  };
  const std::vector<Suspect> s = Localise(bed.Input());
  ASSERT_EQ(Names(s), std::vector<std::string>{"path:r0n0 <-> r0n1"});
  EXPECT_TRUE(s[0].groups.empty());
  EXPECT_THAT(s[0].evidence[0], HasSubstr("1 of 8 probe flows between r0n0 and r0n1 lossy"));
  EXPECT_THAT(s[0].evidence[1], HasSubstr("r0n0->r0n1: flow 3 failed 2x; flows 0, 1, 2 clean"));
  EXPECT_FALSE(s[0].pooled_loss_ratio.has_value());
}

TEST(PathFaults, OneTimeoutPerDirectionIsAnOutageNotAPath) {
  // A partition between the racks, repaired: each direction across timed
  // out once, on whichever flow its probe in flight took; every flow is
  // clean since. The path is not blamed after it.
  Bed bed(2, 2);
  bed.failures = [&](uint32_t a, uint32_t b, uint32_t f) -> uint64_t {
    return bed.Across(a, b) && f == (a + b) % 4 ? 1 : 0;
  };
  EXPECT_TRUE(FindPathFaults(bed.Input()).suspects.empty());
  EXPECT_TRUE(Localise(bed.Input()).empty());
  // The same flows timing out again (a dead path, session after session)
  // is one.
  bed.failures = [&](uint32_t a, uint32_t b, uint32_t f) -> uint64_t {
    return bed.Across(a, b) && f == (a + b) % 4 ? 2 : 0;
  };
  EXPECT_EQ(Names(Localise(bed.Input())), std::vector<std::string>{"path:rack0 <-> rack1"});
}

TEST(PathFaults, NodeLosingWithManyPeersIsNotAPathHoweverItsFlowsSplit) {
  // r0n1's NIC loses 5% both ways, but over the window half its flows show
  // it (the others' windows mostly from before the loss started): its loss
  // spreads over its links inside its rack and across, so the node, not a
  // path in each unit it touches.
  Bed bed(2, 3);
  bed.lost = [&](uint32_t a, uint32_t b, uint32_t f) -> uint64_t {
    return (a == 1 || b == 1) && f < 2 ? 15 : 0;
  };
  EXPECT_TRUE(FindPathFaults(bed.Input()).suspects.empty());
  const std::vector<Suspect> s = Localise(bed.Input());
  ASSERT_FALSE(s.empty());
  EXPECT_EQ(Names(s)[0], "node:r0n1");
}

TEST(PathFaults, DirectionsWhoseLossStartsOrClearsAreNoEvidence) {
  // Half the flows across lossy, the others clean: a path fault while the
  // loss holds still over the window...
  Bed bed(2, 2);
  bed.lost = [&](uint32_t a, uint32_t b, uint32_t f) -> uint64_t {
    return bed.Across(a, b) && OnBadMember(a, b, f) ? 30 : 0;
  };
  ASSERT_EQ(Names(Localise(bed.Input())), std::vector<std::string>{"path:rack0 <-> rack1"});
  // ... but not while it starts (the recent part loses twice the window's
  // ratio: the clean flows have not carried data since) or clears.
  for (const double recent_share : {1.0, 0.1}) {
    LocaliseInput in = bed.Input();
    for (LinkObservation& o : in.observations) {
      if (o.loss->lost == 0) continue;
      o.recent_loss =
          LossCount{static_cast<uint64_t>(static_cast<double>(o.loss->lost) * recent_share),
                    o.loss->sent / 2};
    }
    EXPECT_TRUE(FindPathFaults(in).suspects.empty()) << recent_share;
  }
}

TEST(PathFaults, FlowsQuietWhileTheLossLastedAreNoEvidence) {
  // r0n1 starts to drop 5% of what it receives (no racks): of each
  // direction into it, the two flows that carried data since lose, the two
  // that went quiet before look clean over their window.
  Bed bed(0, 3);
  bed.lost = [](uint32_t, uint32_t b, uint32_t f) -> uint64_t { return b == 1 && f < 2 ? 15 : 0; };
  ASSERT_EQ(Names(FindPathFaults(bed.Input()).suspects),
            (std::vector<std::string>{"path:r0n0 <-> r0n1", "path:r0n1 <-> r0n2"}))
      << "without the figures while the loss lasted, the flows disagree";
  // The daemon says what each carried while it lasted: the quiet ones
  // nearly nothing (or, after a repair, all of theirs came after it).
  LocaliseInput in = bed.Input();
  for (LinkObservation& o : in.observations) {
    if (o.to != 1) continue;
    for (FlowObservation& f : o.flows) {
      f.while_losing = f.flow < 2 ? f.loss : LossCount{0, 20};
      if (f.flow < 2) f.sent_since_last_loss = 5;
    }
  }
  EXPECT_TRUE(FindPathFaults(in).suspects.empty());
  const std::vector<Suspect> s = Localise(in);
  ASSERT_FALSE(s.empty());
  EXPECT_EQ(Names(s)[0], "node:r0n1");
}

TEST(PathFaults, FlowsWhoseLossStoppedAreNoEvidence) {
  // Half the flows across lost 10% earlier in the window and have carried
  // 250 clean segments since (a repaired fault): no path. Still losing
  // (20 segments since their last loss): the path.
  Bed bed(2, 2);
  bed.lost = [&](uint32_t a, uint32_t b, uint32_t f) -> uint64_t {
    return bed.Across(a, b) && OnBadMember(a, b, f) ? 30 : 0;
  };
  for (const uint64_t since : {uint64_t{250}, uint64_t{20}}) {
    LocaliseInput in = bed.Input();
    for (LinkObservation& o : in.observations) {
      for (FlowObservation& f : o.flows) {
        if (f.loss.lost > 0) f.sent_since_last_loss = since;
      }
    }
    EXPECT_EQ(Names(FindPathFaults(in).suspects),
              since == 250 ? std::vector<std::string>{}
                           : std::vector<std::string>{"path:rack0 <-> rack1"})
        << since;
  }
}

TEST(PathFaults, TheJobsConnectionsOverAPathAreThePaths) {
  // A job's connections across the racks lose 10% where they take the bad
  // member: their loss is the path's, not the uplink's, once the path is
  // named on the probe flows.
  Bed bed(2, 2);
  bed.lost = [&](uint32_t a, uint32_t b, uint32_t f) -> uint64_t {
    return bed.Across(a, b) && OnBadMember(a, b, f) ? 30 : 0;
  };
  LocaliseInput in = bed.Input();
  for (uint32_t a = 0; a < 4; ++a) {
    for (uint32_t b = 0; b < 4; ++b) {
      if (a != b && bed.Across(a, b)) in.job_links.push_back({a, b, LossCount{240, 2400}});
    }
  }
  const PathFaults paths = FindPathFaults(in);
  ASSERT_EQ(paths.suspects.size(), 1u);
  EXPECT_TRUE(paths.rest.job_links.empty());
  EXPECT_EQ(Names(Localise(in)), std::vector<std::string>{"path:rack0 <-> rack1"});
}

TEST(PathFaults, SenderWhoseEveryFlowIsLossyIsNotAPath) {
  // r0n0 loses on all it sends, inside its rack too (its NIC), while r0n1
  // loses on one flow across: r0n0's NIC explains its lossy flows.
  Bed bed(2, 2);
  bed.lost = [&](uint32_t a, uint32_t b, uint32_t f) -> uint64_t {
    return a == 0 || (a == 1 && bed.Across(a, b) && f == 0) ? 30 : 0;
  };
  EXPECT_TRUE(FindPathFaults(bed.Input()).suspects.empty());
}

TEST(PathFaults, SenderWhoseEveryFlowAcrossIsLossyButNotInsideItsRack) {
  // The hash put every flow r0n0 sends across on the bad member; its flows
  // to its rack-mate are clean, so its NIC is fine: still the path.
  Bed bed(2, 2);
  bed.lost = [&](uint32_t a, uint32_t b, uint32_t f) -> uint64_t {
    if (!bed.Across(a, b)) return 0;
    return a == 0 || f == 2 ? 30 : 0;
  };
  const std::vector<Suspect> s = Localise(bed.Input());
  EXPECT_EQ(Names(s), std::vector<std::string>{"path:rack0 <-> rack1"});
}

TEST(PathFaults, ThePathsLossySetAsideAnUnrelatedNodeIsStillNamed) {
  // A bad member between rack0 and rack1 and, inside rack2, a lossy NIC.
  Bed bed(3, 2);
  bed.lost = [&](uint32_t a, uint32_t b, uint32_t f) -> uint64_t {
    const std::string ga = bed.in.nodes[a].group, gb = bed.in.nodes[b].group;
    if (b == 5) return 30;  // r2n1 receives lossy on every flow
    if (std::set<std::string>{ga, gb} == std::set<std::string>{"rack0", "rack1"} && f == 1) {
      return 30;
    }
    return 0;
  };
  const std::vector<Suspect> s = Localise(bed.Input());
  EXPECT_EQ(Names(s), (std::vector<std::string>{"node:r2n1", "path:rack0 <-> rack1"}));
}

}  // namespace
}  // namespace gloowatch::client
