#include "client/core/targets.h"

#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gloowatch::client {
namespace {

std::string Write(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(ParseEndpoint, Forms) {
  EXPECT_EQ(ParseEndpoint("127.0.0.1:7601")->ToString(), "127.0.0.1:7601");
  EXPECT_EQ(ParseEndpoint("[::1]:7601")->host, "::1");
  EXPECT_EQ(ParseEndpoint("[::1]:7601")->ToString(), "[::1]:7601");
  for (const char* bad : {"host", "host:0", "host:65536", ":80", "::1:80", "[::1]", "h:x"}) {
    EXPECT_FALSE(ParseEndpoint(bad).ok()) << bad;
  }
}

TEST(ParseDaemonList, DuplicatesAndEmpty) {
  EXPECT_EQ(ParseDaemonList("a:1, b:2")->size(), 2u);
  EXPECT_FALSE(ParseDaemonList("a:1,a:1").ok());
  EXPECT_FALSE(ParseDaemonList("").ok());
}

TEST(LoadDaemonConfig, SelfPlusPeers) {
  auto t =
      LoadDaemonConfig(Write("d.yaml",
                             "node: node-a\ngrpc_listen: 0.0.0.0:7601\nmetrics_listen: "
                             "127.0.0.1:9100\npeers:\n  - {name: node-b, grpc: 127.0.0.1:7602}\n"));
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->size(), 2u);
  EXPECT_EQ((*t)[0].name, "node-a");
  EXPECT_EQ((*t)[0].endpoint.ToString(), "127.0.0.1:7601");
  EXPECT_EQ((*t)[1].name, "node-b");
  EXPECT_TRUE(absl::IsNotFound(LoadDaemonConfig("/nonexistent.yaml").status()));
  EXPECT_FALSE(LoadDaemonConfig(Write("bad.yaml", "peers: [1, 2\n")).ok());
}

// One file for every host (gloowatchd --node %H): read as `this_host`'s.
TEST(LoadDaemonConfig, FleetFileIsReadAsThisHosts) {
  const std::string fleet =
      Write("fleet.yaml",
            "grpc_listen: 0.0.0.0:7601\nmetrics_listen: 0.0.0.0:7610\npeers:\n"
            "  - {name: gpu-01, grpc: 10.0.3.1:7601}\n  - {name: gpu-02, grpc: 10.0.3.2:7601}\n"
            "  - {name: gpu-03, grpc: 10.0.3.3:7601}\n");
  auto on_02 = LoadDaemonConfig(fleet, "gpu-02");
  ASSERT_TRUE(on_02.ok()) << on_02.status();
  ASSERT_EQ(on_02->size(), 3u);  // itself at grpc_listen, not at its entry too
  EXPECT_EQ((*on_02)[0].name, "gpu-02");
  EXPECT_EQ((*on_02)[0].endpoint.ToString(), "127.0.0.1:7601");
  EXPECT_EQ((*on_02)[1].name, "gpu-01");
  EXPECT_EQ((*on_02)[2].name, "gpu-03");
  // A host it does not list (a login node) asks every node listed.
  auto login = LoadDaemonConfig(fleet, "login01");
  ASSERT_TRUE(login.ok()) << login.status();
  ASSERT_EQ(login->size(), 3u);
  EXPECT_EQ((*login)[0].endpoint.ToString(), "10.0.3.1:7601");
  // Without a host name the file is what it says: no node.
  EXPECT_FALSE(LoadDaemonConfig(fleet).ok());
  // A file with node: is that node's, whatever host reads it.
  auto named = LoadDaemonConfig(
      Write("named.yaml",
            "node: gpu-01\ngrpc_listen: 0.0.0.0:7601\nmetrics_listen: 0.0.0.0:7610\npeers:\n"
            "  - {name: gpu-02, grpc: 10.0.3.2:7601}\n"),
      "gpu-02");
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_EQ((*named)[0].name, "gpu-01");
  EXPECT_EQ(named->size(), 2u);
}

TEST(LoadClusterFile, Nodes) {
  auto t = LoadClusterFile(Write("c.yaml",
                                 "nodes:\n  - {name: a, grpc: 127.0.0.1:7601}\n"
                                 "  - {name: b, grpc: '[::1]:7602'}\n"));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)[1].endpoint.host, "::1");
  auto bad = LoadClusterFile(Write("c2.yaml", "nodes:\n  - {name: a, grpc: nope}\n"));
  EXPECT_THAT(std::string(bad.status().message()), ::testing::HasSubstr("nodes[0]"));
}

TEST(ParsePortRange, Forms) {
  EXPECT_EQ(ParsePortRange("29500-29600")->first, 29500);
  EXPECT_EQ(ParsePortRange("29500-29600")->second, 29600);
  EXPECT_EQ(ParsePortRange("80")->second, 80);
  EXPECT_FALSE(ParsePortRange("9-1").ok());
  EXPECT_FALSE(ParsePortRange("1-2-3").ok());
}

}  // namespace
}  // namespace gloowatch::client
