// Daemon::Reload on whole daemons in this test process: peers added and
// removed take effect when Reload returns, with no sleep and no polling.
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "tests/inprocess/inprocess_cluster.h"

namespace gloowatch::inprocess {
namespace {

std::vector<std::string> PeerNames(const v1::NodeStatus& status) {
  std::vector<std::string> names;
  for (const v1::PeerStatus& peer : status.peers()) names.push_back(peer.name());
  return names;
}

Config Parse(const std::string& yaml) {
  absl::StatusOr<Config> config = ParseConfig(yaml, "reload.yaml");
  EXPECT_TRUE(config.ok()) << config.status();
  return config.ok() ? *std::move(config) : Config();
}

TEST(DaemonReloadInProcessTest, PeersAddedAndRemovedWhenReloadReturns) {
  absl::StatusOr<std::unique_ptr<InProcessDaemons>> cluster = InProcessDaemons::Spawn(2);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  Daemon& a = (*cluster)->daemon(0);
  EXPECT_EQ(PeerNames(a.Status()), std::vector<std::string>{"node-1"});

  RefusingPort down;
  const PeerConfig node_2{
      "node-2", HostPort{"127.0.0.1", static_cast<uint16_t>(down.port())}, "", {}};
  const PeerConfig node_1 = (*cluster)->PeerConfigOf(1);
  ASSERT_TRUE(a.Reload(Parse((*cluster)->Yaml(0, {node_1, node_2}))).ok());
  EXPECT_EQ(PeerNames(a.Status()), (std::vector<std::string>{"node-1", "node-2"}));
  EXPECT_EQ(a.Status().topology().probed_peers(), 2u);

  ASSERT_TRUE(a.Reload(Parse((*cluster)->Yaml(0, {node_2}))).ok());
  EXPECT_EQ(PeerNames(a.Status()), std::vector<std::string>{"node-2"});
  EXPECT_EQ(a.Status().topology().cluster_nodes(), 2u);

  // What needs a restart is refused and the running config kept.
  std::string renamed = (*cluster)->Yaml(0, {node_1});
  renamed.replace(renamed.find("node-0"), 6, "node-9");
  const absl::Status refused = a.Reload(Parse(renamed));
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(refused.message(), "changing node needs a restart")) << refused;
  EXPECT_EQ(PeerNames(a.Status()), std::vector<std::string>{"node-2"});
  EXPECT_TRUE(a.Healthy());
}

// The reload reaches the transport thread: a peer removed is no longer
// probed, one added back is probed over new pairs.
TEST(DaemonReloadInProcessTest, ReloadedPeersAreProbedByTheTransport) {
  absl::StatusOr<std::unique_ptr<InProcessDaemons>> cluster = InProcessDaemons::Spawn(3);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  Daemon& a = (*cluster)->daemon(0);
  const PeerConfig node_1 = (*cluster)->PeerConfigOf(1);
  const PeerConfig node_2 = (*cluster)->PeerConfigOf(2);
  auto up = [](const std::string& name) {
    return [name](const v1::NodeStatus& status) {
      for (const v1::PeerStatus& peer : status.peers()) {
        if (peer.name() == name) {
          return peer.state() == v1::PEER_STATE_UP && peer.latency().samples_in_window() > 0;
        }
      }
      return false;
    };
  };

  ASSERT_TRUE(a.Reload(Parse((*cluster)->Yaml(0, {node_1}))).ok());
  EXPECT_EQ(PeerNames(a.Status()), std::vector<std::string>{"node-1"});
  EXPECT_TRUE(up("node-1")((*cluster)->AwaitStatus(0, up("node-1"))));

  ASSERT_TRUE(a.Reload(Parse((*cluster)->Yaml(0, {node_1, node_2}))).ok());
  const v1::NodeStatus status = (*cluster)->AwaitStatus(0, up("node-2"));
  ASSERT_TRUE(up("node-2")(status)) << status.DebugString();
  EXPECT_EQ(PeerNames(status), (std::vector<std::string>{"node-1", "node-2"}));
  EXPECT_TRUE(up("node-1")(status));
  EXPECT_TRUE(a.Healthy());
}

}  // namespace
}  // namespace gloowatch::inprocess
