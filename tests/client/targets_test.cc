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
