// The probing topology: who probes whom, and the properties that make it
// scale (bounded peers per node, every pair measured within a bounded number
// of epochs, every pair of groups probed directly in every epoch).
#include "daemon/peers/topology.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gloowatch {
namespace {

// Unix time / 5 min around 2026: what real epochs look like.
constexpr uint64_t kEpoch = 5'900'000;

// `n` nodes named n00000.., `per_group` per group (0: no groups).
std::vector<TopologyNode> Nodes(size_t n, size_t per_group) {
  std::vector<TopologyNode> nodes;
  for (size_t i = 0; i < n; ++i) {
    nodes.push_back({absl::StrFormat("n%05d", i),
                     per_group == 0 ? "" : absl::StrFormat("rack%04d", i / per_group)});
  }
  return nodes;
}

TopologyConfig Sampled(uint32_t sample_peers = 8) {
  TopologyConfig c;
  c.full_mesh_max_nodes = 64;
  c.sample_peers = sample_peers;
  return c;
}

std::map<std::string, std::string> ByName(const Topology& t, size_t self, uint64_t epoch) {
  std::map<std::string, std::string> out;
  for (const ProbeTarget& p : t.Select(self, epoch)) {
    out[t.node(p.index).name] = std::string(SelectionName(p.selection));
  }
  return out;
}

// The most peers a node may probe with config `c` in a cluster whose largest
// group has `max_group` members and which has `groups` groups.
size_t Bound(const TopologyConfig& c, size_t max_group, size_t groups, size_t min_group) {
  const size_t cross = groups < 2 ? 0 : (groups - 1 + min_group - 1) / min_group;
  return 2 + std::min<size_t>(max_group - 1, c.group_peers_max) +
         std::min<size_t>(cross, c.cross_group_peers_max) + c.sample_peers;
}

TEST(TopologyTest, FullMeshUpToTheLimit) {
  const Topology t(Nodes(64, 8), Sampled());
  EXPECT_FALSE(t.sampled());
  for (size_t self : {size_t{0}, size_t{37}, size_t{63}}) {
    const std::vector<ProbeTarget> peers = t.Select(self, kEpoch);
    ASSERT_EQ(peers.size(), 63u);
    for (const ProbeTarget& p : peers) {
      EXPECT_NE(p.index, self);
      EXPECT_EQ(p.selection, Selection::kMesh);
    }
  }
  EXPECT_TRUE(Topology(Nodes(65, 8), Sampled()).sampled());
}

TEST(TopologyTest, SmallSampledClusterByHand) {
  // Ring order: a b c (r1) | d e f (r2).
  TopologyConfig c;
  c.full_mesh_max_nodes = 3;
  c.sample_peers = 1;
  const Topology t({{"f", "r2"}, {"a", "r1"}, {"e", "r2"}, {"c", "r1"}, {"b", "r1"}, {"d", "r2"}},
                   c);
  ASSERT_TRUE(t.sampled());
  std::vector<std::string> ring;
  for (size_t i = 0; i < t.size(); ++i) ring.push_back(t.node(i).name);
  EXPECT_THAT(ring, ::testing::ElementsAre("a", "b", "c", "d", "e", "f"));
  EXPECT_EQ(t.IndexOf("d"), 3u);
  EXPECT_EQ(t.IndexOf("zz"), 6u);
  for (uint64_t epoch = kEpoch; epoch < kEpoch + 10; ++epoch) {
    const auto a = ByName(t, t.IndexOf("a"), epoch);
    EXPECT_EQ(a.at("b"), "ring");
    EXPECT_EQ(a.at("f"), "ring");  // the ring wraps around
    EXPECT_EQ(a.at("c"), "group");
    const auto c_peers = ByName(t, t.IndexOf("c"), epoch);
    EXPECT_EQ(c_peers.at("d"), "ring");  // across the group boundary
    EXPECT_EQ(c_peers.at("a"), "group");
    // Some member of r1 probes some member of r2 and the other way round,
    // without relying on the sample. (The dealt-out link may coincide with
    // the ring link across the boundary and is then listed as ring.)
    bool r1_to_r2 = false, r2_to_r1 = false, dealt = false;
    for (size_t self = 0; self < 6; ++self) {
      for (const ProbeTarget& p : t.Select(self, epoch)) {
        if (p.selection == Selection::kCrossGroup) {
          EXPECT_NE(t.GroupOf(p.index), t.GroupOf(self));
          dealt = true;
        }
        if (p.selection == Selection::kSample || t.GroupOf(p.index) == t.GroupOf(self)) continue;
        (t.GroupOf(self) == 0 ? r1_to_r2 : r2_to_r1) = true;
      }
    }
    EXPECT_TRUE(r1_to_r2 && r2_to_r1);
    if (epoch % 3 == 1) {
      EXPECT_TRUE(dealt) << epoch;  // b (member 1) deals r2 to e
    }
  }
}

TEST(TopologyTest, EveryNodeComputesTheSameSelectionWhateverTheConfigOrder) {
  std::vector<TopologyNode> nodes = Nodes(300, 20);
  const Topology a(nodes, Sampled());
  std::shuffle(nodes.begin(), nodes.end(), std::mt19937(7));
  const Topology b(nodes, Sampled());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a.node(i).name, b.node(i).name);
    EXPECT_EQ(ByName(a, i, kEpoch), ByName(b, i, kEpoch));
  }
}

TEST(TopologyTest, PeersPerNodeAreBoundedIndependentOfClusterSize) {
  for (const auto& [n, per_group] : std::vector<std::pair<size_t, size_t>>{
           {1000, 40}, {1000, 0}, {1000, 4}, {1000, 1}, {1000, 333}, {5000, 40}}) {
    SCOPED_TRACE(absl::StrCat(n, " nodes, ", per_group, " per group"));
    const TopologyConfig c = Sampled();
    const Topology t(Nodes(n, per_group), c);
    const size_t max_group = per_group == 0 ? n : per_group;
    const size_t last_group = per_group == 0 ? n : (n % per_group == 0 ? per_group : n % per_group);
    const size_t min_group = std::min(max_group, last_group);
    const size_t bound = Bound(c, max_group, t.group_count(), min_group);
    EXPECT_LE(bound, 2 + c.group_peers_max + c.cross_group_peers_max + c.sample_peers);
    std::vector<size_t> incoming(n);
    size_t most = 0;
    for (uint64_t epoch = kEpoch; epoch < kEpoch + 3; ++epoch) {
      for (size_t self = 0; self < n; ++self) {
        const std::vector<ProbeTarget> peers = t.Select(self, epoch);
        most = std::max(most, peers.size());
        ASSERT_LE(peers.size(), bound) << t.node(self).name;
        ASSERT_GE(peers.size(), std::min<size_t>(n - 1, 2));
        std::set<size_t> distinct;
        for (const ProbeTarget& p : peers) {
          ASSERT_NE(p.index, self);
          ASSERT_LT(p.index, n);
          ASSERT_TRUE(distinct.insert(p.index).second) << "listed twice: " << p.index;
          if (epoch == kEpoch) ++incoming[p.index];
        }
      }
    }
    // Nobody is probed by a crowd: the incoming side stays bounded too.
    EXPECT_LE(*std::max_element(incoming.begin(), incoming.end()), 2 * bound) << most;
  }
}

TEST(TopologyTest, GroupPartIsCappedToTheNearestMembers) {
  TopologyConfig c = Sampled();
  c.group_peers_max = 4;
  const Topology t(Nodes(1000, 100), c);
  const size_t self = t.IndexOf("n00150");  // member 50 of rack0001
  std::set<std::string> group;
  for (const ProbeTarget& p : t.Select(self, kEpoch)) {
    if (p.selection == Selection::kGroup ||
        (p.selection == Selection::kRing && t.GroupOf(p.index) == t.GroupOf(self))) {
      group.insert(t.node(p.index).name);
    }
  }
  EXPECT_THAT(group, ::testing::UnorderedElementsAre("n00148", "n00149", "n00151", "n00152"));
}

// Every ordered pair (a probes b) happens within one sample cycle.
void ExpectFullCoverageWithinOneCycle(size_t n, size_t per_group, uint32_t sample_peers) {
  SCOPED_TRACE(absl::StrCat(n, " nodes, ", per_group, " per group, sample ", sample_peers));
  const Topology t(Nodes(n, per_group), Sampled(sample_peers));
  const uint64_t cycle = t.SampleCycle();
  EXPECT_EQ(cycle, (n - 1 + sample_peers - 1) / sample_peers);
  const uint64_t start = (kEpoch / cycle + 1) * cycle;  // a cycle start
  std::vector<bool> seen(n * n);
  for (uint64_t epoch = start; epoch < start + cycle; ++epoch) {
    for (size_t self = 0; self < n; ++self) {
      for (const ProbeTarget& p : t.Select(self, epoch)) seen[self * n + p.index] = true;
    }
  }
  size_t missing = 0;
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = 0; b < n; ++b) missing += a != b && !seen[a * n + b];
  }
  EXPECT_EQ(missing, 0u);
}

TEST(TopologyTest, EveryOrderedPairIsMeasuredWithinOneSampleCycle) {
  ExpectFullCoverageWithinOneCycle(1000, 40, 8);
  ExpectFullCoverageWithinOneCycle(1000, 0, 8);
  ExpectFullCoverageWithinOneCycle(301, 7, 3);
  ExpectFullCoverageWithinOneCycle(100, 10, 1);
}

TEST(TopologyTest, SampleWalksAPermutationANewOnePerCycle) {
  const Topology t(Nodes(200, 10), Sampled(8));
  const uint64_t cycle = t.SampleCycle();  // ceil(199 / 8) = 25
  ASSERT_EQ(cycle, 25u);
  const uint64_t start = (kEpoch / cycle + 1) * cycle;
  const size_t self = 17;
  std::vector<std::vector<size_t>> cycles;
  for (uint64_t c = 0; c < 2; ++c) {
    std::vector<size_t> walk;
    for (uint64_t e = start + c * cycle; e < start + (c + 1) * cycle; ++e) {
      const std::vector<size_t> sample = t.SampleOf(self, e);
      ASSERT_EQ(sample.size(), 8u);
      walk.insert(walk.end(), sample.begin(), sample.end());
    }
    std::set<size_t> distinct(walk.begin(), walk.end());
    EXPECT_EQ(distinct.size(), 199u);  // all others; the last slice wraps (1 repeat)
    EXPECT_FALSE(distinct.count(self));
    cycles.push_back(walk);
  }
  EXPECT_NE(cycles[0], cycles[1]);
  // Consecutive epochs of a cycle sample different peers.
  EXPECT_NE(t.SampleOf(self, start), t.SampleOf(self, start + 1));
}

TEST(TopologyTest, EveryPairOfGroupsIsProbedDirectlyInEveryEpoch) {
  for (const auto& [n, per_group] :
       std::vector<std::pair<size_t, size_t>>{{1000, 40}, {1000, 25}, {997, 40}, {640, 16}}) {
    SCOPED_TRACE(absl::StrCat(n, " nodes, ", per_group, " per group"));
    const Topology t(Nodes(n, per_group), Sampled());
    ASSERT_EQ(t.CrossGroupCycle(), 1u);
    const size_t g = t.group_count();
    for (uint64_t epoch = kEpoch; epoch < kEpoch + 5; ++epoch) {
      std::vector<bool> linked(g * g);
      for (size_t self = 0; self < n; ++self) {
        for (const ProbeTarget& p : t.Select(self, epoch)) {
          if (p.selection == Selection::kSample) continue;  // without luck
          linked[t.GroupOf(self) * g + t.GroupOf(p.index)] = true;
        }
      }
      for (size_t a = 0; a < g; ++a) {
        for (size_t b = 0; b < g; ++b) {
          ASSERT_TRUE(a == b || linked[a * g + b]) << "group " << a << " -> " << b;
        }
      }
    }
  }
}

TEST(TopologyTest, ManySmallGroupsAreCoveredWithinTheCrossGroupCycle) {
  // 250 groups of 4: each member would have to cover 63 other groups; with
  // the cap of 16 the pairs of groups are covered within 4 epochs instead.
  const Topology t(Nodes(1000, 4), Sampled());
  const uint64_t cycle = t.CrossGroupCycle();
  ASSERT_EQ(cycle, 4u);
  const size_t g = t.group_count();
  for (uint64_t start : {kEpoch, kEpoch + 1, kEpoch + 3}) {
    std::vector<bool> linked(g * g);
    for (uint64_t epoch = start; epoch < start + cycle; ++epoch) {
      for (size_t self = 0; self < t.size(); ++self) {
        for (const ProbeTarget& p : t.Select(self, epoch)) {
          if (p.selection == Selection::kSample) continue;  // without luck
          linked[t.GroupOf(self) * g + t.GroupOf(p.index)] = true;
        }
      }
    }
    size_t missing = 0;
    for (size_t a = 0; a < g; ++a) {
      for (size_t b = 0; b < g; ++b) missing += a != b && !linked[a * g + b];
    }
    EXPECT_EQ(missing, 0u) << "from epoch " << start;
  }
}

TEST(TopologyTest, PermutationIsABijection) {
  for (uint64_t n : {1, 2, 3, 4, 5, 15, 16, 17, 100, 999, 4097, 12345}) {
    for (uint64_t key : {0ull, 1ull, 0xdeadbeefull}) {
      const Permutation p(n, key);
      std::vector<bool> hit(n);
      for (uint64_t x = 0; x < n; ++x) {
        const uint64_t y = p(x);
        ASSERT_LT(y, n);
        ASSERT_FALSE(hit[y]) << "n=" << n;
        hit[y] = true;
      }
    }
  }
  // Different keys, different orders.
  EXPECT_NE(Permutation(1000, 1)(0) * 1000 + Permutation(1000, 1)(1),
            Permutation(1000, 2)(0) * 1000 + Permutation(1000, 2)(1));
}

TEST(TopologyTest, EpochFromWallClock) {
  const absl::Time t = absl::FromUnixSeconds(1'764'720'000);  // a multiple of 300
  EXPECT_EQ(SampleEpoch(t, absl::Minutes(5)), 1'764'720'000u / 300);
  EXPECT_EQ(SampleEpoch(t + absl::Seconds(299), absl::Minutes(5)), 1'764'720'000u / 300);
  EXPECT_EQ(SampleEpoch(t + absl::Seconds(300), absl::Minutes(5)), 1'764'720'000u / 300 + 1);
  EXPECT_EQ(SampleEpoch(absl::UnixEpoch() - absl::Hours(1), absl::Minutes(5)), 0u);
  // FNV-1a reference values: the seed must not change between builds.
  EXPECT_EQ(StableHash(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(StableHash("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_NE(StableHash("node-a"), StableHash("node-b"));
}

TEST(TopologyTest, FromConfigIncludesThisNode) {
  Config config;
  config.node = "b";
  config.group = "r1";
  config.topology.full_mesh_max_nodes = 2;
  config.peers.push_back({"a", {"127.0.0.1", 1}, "r1", {}});
  config.peers.push_back({"c", {"127.0.0.1", 2}, "r2", {}});
  const Topology t = Topology::FromConfig(config);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_TRUE(t.sampled());
  EXPECT_EQ(t.IndexOf("b"), 1u);
  EXPECT_EQ(t.node(2).group, "r2");
  EXPECT_EQ(t.Select(1, kEpoch).size(), 2u);
}

}  // namespace
}  // namespace gloowatch
