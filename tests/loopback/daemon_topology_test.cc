// Real daemons on loopback with a sampled probing topology: each probes
// exactly the peers the topology module selects, the sample rotates with the
// wall-clock epoch, /metrics carries series only for probed peers, and a
// 10,000-node config works end to end.
#include <signal.h>

#include <fstream>
#include <map>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/config.h"
#include "daemon/peers/topology.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/daemon_process.h"
#include "tests/support/free_port.h"
#include "tests/support/metrics_text.h"

namespace gloowatch::testing {
namespace {

struct Member {
  std::string name;
  std::string group;
  std::string grpc;  // host:port
};

std::string ConfigFor(const Member& self, int metrics_port, const std::vector<Member>& all,
                      const std::string& extra_yaml) {
  std::string yaml =
      absl::StrCat("node: ", self.name, "\ngroup: ", self.group, "\ngrpc_listen: ", self.grpc,
                   "\nmetrics_listen: 127.0.0.1:", metrics_port, "\n", extra_yaml, "peers:\n");
  for (const Member& m : all) {
    if (m.name == self.name) continue;
    absl::StrAppend(&yaml, "  - name: ", m.name, "\n    grpc: ", m.grpc, "\n    group: ", m.group,
                    "\n");
  }
  return yaml;
}

using Selections = std::map<std::string, std::string>;  // peer -> selection

Selections Observed(const v1::NodeStatus& status) {
  Selections out;
  for (const v1::PeerStatus& p : status.peers()) out[p.name()] = p.selection();
  return out;
}

Selections Expected(const Topology& t, const std::string& self, uint64_t epoch) {
  Selections out;
  for (const ProbeTarget& p : t.Select(t.IndexOf(self), epoch)) {
    out[t.node(p.index).name] = std::string(SelectionName(p.selection));
  }
  return out;
}

std::set<std::string> PeersWithSeries(int metrics_port, const std::string& node) {
  std::set<std::string> peers;
  auto body = HttpGet(metrics_port, "/metrics");
  if (!body.ok()) return {"<unreadable>"};
  for (const auto& [key, value] : ParseMetrics(*body)) {
    if (key.rfind("gloowatch_peer", 0) != 0) continue;
    if (key.find(absl::StrCat("node=\"", node, "\"")) == std::string::npos) continue;
    const size_t at = key.find("peer=\"");
    if (at == std::string::npos) continue;
    peers.insert(key.substr(at + 6, key.find('"', at + 6) - at - 6));
  }
  return peers;
}

constexpr char kSampled[] =
    "topology:\n  full_mesh_max_nodes: 3\n  sample_peers: 1\n  sample_rotation: 3s\n"
    "  group_peers_max: 2\n";

class DaemonTopologyTest : public ::testing::Test {
 protected:
  DaemonTopologyTest() : cluster_(6, "") {
    for (int i = 0; i < cluster_.size(); ++i) {
      members_.push_back({cluster_.node(i).name, i < 3 ? "r1" : "r2",
                          absl::StrCat("127.0.0.1:", cluster_.node(i).grpc_port)});
    }
  }
  void WriteConfig(int i, const std::string& topology) {
    std::ofstream(cluster_.config_path(i))
        << ConfigFor(members_[i], cluster_.node(i).metrics_port, members_,
                     absl::StrCat(FastLoopbackYaml(), topology));
  }
  v1::NodeStatus StatusOf(int i) {
    auto s = GetStatus(cluster_.grpc(i));
    return s.ok() ? *s : v1::NodeStatus();
  }
  std::string Logs() {
    std::string all;
    for (int i = 0; i < cluster_.size(); ++i) {
      if (cluster_.process(i))
        absl::StrAppend(&all, "--- ", members_[i].name, "\n", cluster_.process(i)->Log());
    }
    return all;
  }

  LoopbackCluster cluster_;
  std::vector<Member> members_;
};

TEST_F(DaemonTopologyTest, EachDaemonProbesItsSelectionAndTheSampleRotates) {
  for (int i = 0; i < cluster_.size(); ++i) WriteConfig(i, kSampled);
  // What every daemon computes: the real module on the same config.
  absl::StatusOr<Config> config = LoadConfigFile(cluster_.config_path(0));
  ASSERT_TRUE(config.ok()) << config.status();
  const Topology topology = Topology::FromConfig(*config);
  ASSERT_TRUE(topology.sampled());
  for (int i = 0; i < cluster_.size(); ++i) cluster_.Start(i);

  // node -> epoch -> what it probed then (only statuses that matched).
  std::map<std::string, std::map<uint64_t, Selections>> seen;
  std::set<std::string> metrics_checked;
  // Two consecutive epochs in which every daemon was seen, or 0.
  const auto full_rotation = [&]() -> uint64_t {
    for (const auto& [epoch, selections] : seen[members_[0].name]) {
      bool all = true;
      for (const Member& m : members_) {
        all = all && seen[m.name].count(epoch) && seen[m.name].count(epoch + 1);
      }
      if (all) return epoch;
    }
    return 0;
  };
  const auto enough = [&] {
    for (const Member& m : members_) {
      if (!metrics_checked.count(m.name)) return false;
    }
    return full_rotation() != 0;
  };
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (!enough() && absl::Now() < deadline) {
    for (int i = 0; i < cluster_.size(); ++i) {
      const std::string& name = members_[i].name;
      const v1::NodeStatus before = StatusOf(i);
      if (!before.has_topology()) continue;
      const v1::Topology& t = before.topology();
      ASSERT_EQ(t.mode(), "sampled");
      ASSERT_EQ(t.cluster_nodes(), 6u);
      ASSERT_EQ(t.group(), members_[i].group);
      ASSERT_EQ(t.probed_peers(), static_cast<uint32_t>(before.peers_size()));
      const Selections got = Observed(before);
      ASSERT_EQ(got, Expected(topology, name, t.sample_epoch()))
          << name << " in epoch " << t.sample_epoch();
      // Ring neighbours never rotate out.
      const size_t self = topology.IndexOf(name);
      EXPECT_EQ(got.at(topology.node((self + 1) % 6).name), "ring");
      EXPECT_EQ(got.at(topology.node((self + 5) % 6).name), "ring");
      seen[name][t.sample_epoch()] = got;
      // /metrics has series exactly for the probed peers (read between two
      // statuses of the same epoch, so no rotation ran in between).
      const std::set<std::string> series = PeersWithSeries(cluster_.node(i).metrics_port, name);
      const v1::NodeStatus after = StatusOf(i);
      if (after.topology().sample_epoch() == t.sample_epoch()) {
        std::set<std::string> probed;
        for (const auto& [peer, why] : got) probed.insert(peer);
        EXPECT_EQ(series, probed) << name;
        metrics_checked.insert(name);
      }
    }
    absl::SleepFor(absl::Milliseconds(200));
  }
  ASSERT_TRUE(enough()) << Logs();

  // The epoch moved on (3 s rotation) and the rotation changed what some
  // daemon probes: the cross-group link is dealt to a different member of
  // r1 (and of r2) every epoch.
  const uint64_t e = full_rotation();
  bool changed = false;
  for (const Member& m : members_) changed = changed || seen[m.name][e] != seen[m.name][e + 1];
  EXPECT_TRUE(changed) << "nothing changed from epoch " << e << " to " << e + 1;
  for (const Member& m : members_) {
    // The sample itself moves to a different peer from one epoch to the
    // next inside a cycle (ceil(5 / 1) = 5 epochs of one permutation).
    const uint64_t cycle = topology.SampleCycle();
    const uint64_t first = e % cycle == cycle - 1 ? e + 1 : e;
    EXPECT_NE(topology.SampleOf(topology.IndexOf(m.name), first),
              topology.SampleOf(topology.IndexOf(m.name), first + 1))
        << m.name;
  }

  // Probing works in a sampled mesh: ring links come up.
  ASSERT_TRUE(WaitFor(
      [&] {
        const v1::NodeStatus s = StatusOf(0);
        const v1::PeerStatus* b = FindPeer(s, "node-b");
        const v1::PeerStatus* f = FindPeer(s, "node-f");
        return b && f && b->state() == v1::PEER_STATE_UP && f->state() == v1::PEER_STATE_UP;
      },
      absl::Seconds(15)))
      << cluster_.process(0)->Log();

  // A reload that raises the limit turns node-a back into a full mesh.
  WriteConfig(0, "topology:\n  full_mesh_max_nodes: 6\n");
  cluster_.process(0)->Signal(SIGHUP);
  ASSERT_TRUE(WaitFor(
      [&] {
        const v1::NodeStatus s = StatusOf(0);
        if (s.topology().mode() != "full_mesh" || s.peers_size() != 5) return false;
        for (const auto& p : s.peers()) {
          if (p.selection() != "mesh") return false;
        }
        return s.topology().sample_epoch() == 0;
      },
      absl::Seconds(10)))
      << cluster_.process(0)->Log();
  ASSERT_TRUE(
      WaitFor([&] { return PeersWithSeries(cluster_.node(0).metrics_port, "node-a").size() == 5; },
              absl::Seconds(5)));
}

TEST(DaemonTopologyFullMeshTest, SmallClustersStayAFullMesh) {
  LoopbackCluster cluster(3, FastLoopbackYaml());
  for (int i = 0; i < 3; ++i) cluster.Start(i);
  absl::Status up = cluster.WaitAllUp(absl::Seconds(20));
  ASSERT_TRUE(up.ok()) << up << "\n" << cluster.process(1)->Log();
  auto s = GetStatus(cluster.grpc(1));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->topology().mode(), "full_mesh");
  EXPECT_EQ(s->topology().cluster_nodes(), 3u);
  EXPECT_EQ(s->topology().probed_peers(), 2u);
  EXPECT_EQ(s->topology().sample_epoch(), 0u);
  for (const auto& p : s->peers()) EXPECT_EQ(p.selection(), "mesh") << p.name();
}

// 10,000 configured nodes, two of them real: the config (about 700 KB) gets
// to the transport process, which probes only the selection.
TEST(DaemonTopologyScaleTest, TenThousandNodeConfigProbesABoundedSelection) {
  LoopbackCluster cluster(2, "");
  std::vector<Member> members;
  const int unused_port = FreePort();
  for (int i = 0; i < 9998; ++i) {
    // Nobody listens there: probes to these are refused at once (loopback).
    members.push_back({absl::StrFormat("f%05d", i), absl::StrFormat("rack%03d", i / 40),
                       absl::StrFormat("127.0.%d.%d:%d", 1 + i / 250, 1 + i % 250, unused_port)});
  }
  for (int i = 0; i < 2; ++i) {
    members.push_back(
        {cluster.node(i).name, "rack999", absl::StrCat("127.0.0.1:", cluster.node(i).grpc_port)});
  }
  for (int i = 0; i < 2; ++i) {
    std::ofstream(cluster.config_path(i))
        << ConfigFor(members[9998 + i], cluster.node(i).metrics_port, members, FastLoopbackYaml());
  }
  for (int i = 0; i < 2; ++i) cluster.Start(i);
  absl::StatusOr<Config> config = LoadConfigFile(cluster.config_path(0));
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_GT(config->yaml.size(), 500u << 10);
  const Topology topology = Topology::FromConfig(*config);

  // node-a and node-b are ring neighbours (the last group, in name order).
  ASSERT_TRUE(WaitFor(
      [&] {
        auto s = GetStatus(cluster.grpc(0));
        const v1::PeerStatus* b = s.ok() ? FindPeer(*s, "node-b") : nullptr;
        return b != nullptr && b->state() == v1::PEER_STATE_UP;
      },
      absl::Seconds(30)))
      << cluster.process(0)->Log();
  auto s = GetStatus(cluster.grpc(0));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->topology().mode(), "sampled");
  EXPECT_EQ(s->topology().cluster_nodes(), 10000u);
  EXPECT_EQ(s->topology().group(), "rack999");
  // 2 ring + 1 group + 16 of 250 other groups + 8 sampled, at most.
  EXPECT_LE(s->topology().probed_peers(), 27u);
  EXPECT_GE(s->topology().probed_peers(), 10u);
  EXPECT_EQ(Observed(*s), Expected(topology, "node-a", s->topology().sample_epoch()));
  // The transport probes the selected fake peers too (and is refused).
  ASSERT_TRUE(WaitFor(
      [&] {
        auto now = GetStatus(cluster.grpc(0));
        if (!now.ok()) return false;
        for (const auto& p : now->peers()) {
          if (p.name()[0] == 'f' && p.failures_by_reason().count("refused")) return true;
        }
        return false;
      },
      absl::Seconds(15)));
  // Series only for the probed peers, not 9,999.
  const std::set<std::string> series = PeersWithSeries(cluster.node(0).metrics_port, "node-a");
  EXPECT_LE(series.size(), 27u);
  EXPECT_TRUE(series.count("node-b"));
}

}  // namespace
}  // namespace gloowatch::testing
