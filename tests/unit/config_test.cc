#include "common/config.h"

#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "common/tls.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/paths.h"

namespace gloowatch {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kMinimal[] = R"(node: node-a
grpc_listen: 127.0.0.1:7601        # status API + peer-to-peer RPCs
metrics_listen: 127.0.0.1:9601     # Prometheus /metrics
gloo:
  address: 127.0.0.1               # or `interface: eth0`; default as described above
  timeout: 5s
schedule:
  latency_interval: 5s
  skew_interval: 10s
  bandwidth_interval: 60s
peers:
  - name: node-b
    grpc: 127.0.0.1:7602
  - name: node-c
    grpc: 127.0.0.1:7603
)";

// Three valid lines; test snippets appended to it start on line 4.
constexpr char kBase[] = R"(node: node-a
grpc_listen: 127.0.0.1:7601
metrics_listen: 127.0.0.1:9601
)";

absl::StatusOr<Config> Parse(absl::string_view yaml) { return ParseConfig(yaml, "cfg.yaml"); }

std::string ErrorOf(absl::string_view yaml) {
  absl::StatusOr<Config> c = Parse(yaml);
  EXPECT_FALSE(c.ok()) << "unexpectedly parsed:\n" << yaml;
  if (c.ok()) return "";
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(c.status().message());
}

Config ParseOk(absl::string_view yaml) {
  absl::StatusOr<Config> c = Parse(yaml);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *c : Config{};
}

std::string Repeat(absl::string_view s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) absl::StrAppend(&out, s);
  return out;
}

std::string Probe(absl::string_view key, absl::string_view value) {
  return absl::StrCat(kBase, "probe:\n  ", key, ": ", value, "\n");
}

TEST(ConfigTest, MinimalConfigParsesExactlyAsWritten) {
  const Config c = ParseOk(kMinimal);
  EXPECT_EQ(c.source, "cfg.yaml");
  EXPECT_EQ(c.node, "node-a");
  EXPECT_EQ(c.grpc_listen.host, "127.0.0.1");
  EXPECT_EQ(c.grpc_listen.port, 7601);
  EXPECT_EQ(c.metrics_listen.ToString(), "127.0.0.1:9601");
  EXPECT_EQ(c.gloo.address, "127.0.0.1");
  EXPECT_EQ(c.gloo.interface, "");
  EXPECT_EQ(c.gloo.timeout, absl::Seconds(5));
  EXPECT_EQ(c.gloo.link_speed_bytes_per_second, 0);
  EXPECT_EQ(c.schedule.latency_interval, absl::Seconds(5));
  EXPECT_EQ(c.schedule.skew_interval, absl::Seconds(10));
  EXPECT_EQ(c.schedule.bandwidth_interval, absl::Seconds(60));
  ASSERT_EQ(c.peers.size(), 2u);
  EXPECT_EQ(c.peers[0].name, "node-b");
  EXPECT_EQ(c.peers[0].grpc.ToString(), "127.0.0.1:7602");
  EXPECT_EQ(c.peers[0].group, "");
  EXPECT_EQ(c.peers[1].name, "node-c");
  EXPECT_EQ(c.peers[1].grpc.port, 7603);
  // Everything not written keeps the header's defaults.
  const Config d;
  EXPECT_EQ(c.schedule.jitter, d.schedule.jitter);
  EXPECT_EQ(c.schedule.bandwidth_budget, 0.005);
  EXPECT_EQ(c.probe.latency_message_bytes, d.probe.latency_message_bytes);
  EXPECT_EQ(c.probe.latency_burst, d.probe.latency_burst);
  EXPECT_EQ(c.probe.bandwidth_bytes, d.probe.bandwidth_bytes);
  EXPECT_EQ(c.probe.bandwidth_message_bytes, d.probe.bandwidth_message_bytes);
  EXPECT_EQ(c.probe.skew_burst, d.probe.skew_burst);
  EXPECT_EQ(c.probe.flows, d.probe.flows);
  EXPECT_EQ(c.probe.flows, 4u);
  EXPECT_EQ(c.probe.latency_window, d.probe.latency_window);
  EXPECT_EQ(c.probe.backoff_initial, d.probe.backoff_initial);
  EXPECT_EQ(c.probe.backoff_max, d.probe.backoff_max);
  EXPECT_EQ(c.thresholds.latency, d.thresholds.latency);
  EXPECT_EQ(c.thresholds.bandwidth_link_ratio, d.thresholds.bandwidth_link_ratio);
  EXPECT_EQ(c.thresholds.clock_offset, d.thresholds.clock_offset);
  EXPECT_EQ(c.thresholds.failure_window, d.thresholds.failure_window);
  EXPECT_EQ(c.thresholds.communication_share, d.thresholds.communication_share);
  EXPECT_EQ(c.group, "");
  EXPECT_EQ(c.topology.full_mesh_max_nodes, 64u);
  EXPECT_EQ(c.topology.sample_peers, 8u);
  EXPECT_EQ(c.topology.sample_rotation, absl::Minutes(5));
  EXPECT_EQ(c.topology.group_peers_max, 32u);
  EXPECT_EQ(c.topology.cross_group_peers_max, 16u);
}

TEST(ConfigTest, EveryKeyIsMapped) {
  const Config c = ParseOk(R"(
node: gpu-17.rack_3
grpc_listen: "[::]:7601"
metrics_listen: 0.0.0.0:9601
gloo:
  interface: ens1f0
  timeout: 1m30s
  link_speed: 25Gbit
schedule:
  latency_interval: 500ms
  skew_interval: 1m
  bandwidth_interval: 1h30m
  jitter: 0.25
  bandwidth_budget: 0.05
probe:
  latency_message_bytes: 64KiB
  latency_burst: 10
  bandwidth_bytes: 1GiB
  bandwidth_message_bytes: 8MiB
  skew_burst: 16
  flows: 8
  latency_window: 10m
  backoff_initial: 250ms
  backoff_max: 1m
thresholds:
  latency: 250us
  bandwidth_link_ratio: 0.5
  clock_offset: 5ms
  failure_window: 30m
  communication_share: 1
group: rack-2
topology:
  full_mesh_max_nodes: 128
  sample_peers: 12
  sample_rotation: 10m
  group_peers_max: 20
  cross_group_peers_max: 4
peers:
  - name: gpu-18
    grpc: gpu-18.cluster.example.com:7601
    group: rack-3
  - {name: gpu-19, grpc: "[fd00::19]:7601"}
)");
  EXPECT_EQ(c.node, "gpu-17.rack_3");
  EXPECT_EQ(c.grpc_listen.host, "::");
  EXPECT_EQ(c.grpc_listen.ToString(), "[::]:7601");
  EXPECT_EQ(c.metrics_listen.host, "0.0.0.0");
  EXPECT_EQ(c.gloo.address, "");
  EXPECT_EQ(c.gloo.interface, "ens1f0");
  EXPECT_EQ(c.gloo.timeout, absl::Seconds(90));
  EXPECT_DOUBLE_EQ(c.gloo.link_speed_bytes_per_second, 25e9 / 8);
  EXPECT_EQ(c.schedule.latency_interval, absl::Milliseconds(500));
  EXPECT_EQ(c.schedule.skew_interval, absl::Minutes(1));
  EXPECT_EQ(c.schedule.bandwidth_interval, absl::Minutes(90));
  EXPECT_DOUBLE_EQ(c.schedule.jitter, 0.25);
  EXPECT_DOUBLE_EQ(c.schedule.bandwidth_budget, 0.05);
  EXPECT_EQ(c.probe.latency_message_bytes, 64u << 10);
  EXPECT_EQ(c.probe.latency_burst, 10u);
  EXPECT_EQ(c.probe.bandwidth_bytes, 1ull << 30);
  EXPECT_EQ(c.probe.bandwidth_message_bytes, 8ull << 20);
  EXPECT_EQ(c.probe.skew_burst, 16u);
  EXPECT_EQ(c.probe.flows, 8u);
  EXPECT_EQ(c.probe.latency_window, absl::Minutes(10));
  EXPECT_EQ(c.probe.backoff_initial, absl::Milliseconds(250));
  EXPECT_EQ(c.probe.backoff_max, absl::Minutes(1));
  EXPECT_EQ(c.thresholds.latency, absl::Microseconds(250));
  EXPECT_DOUBLE_EQ(c.thresholds.bandwidth_link_ratio, 0.5);
  EXPECT_EQ(c.thresholds.clock_offset, absl::Milliseconds(5));
  EXPECT_EQ(c.thresholds.failure_window, absl::Minutes(30));
  EXPECT_DOUBLE_EQ(c.thresholds.communication_share, 1.0);
  ASSERT_EQ(c.peers.size(), 2u);
  EXPECT_EQ(c.peers[0].grpc.host, "gpu-18.cluster.example.com");
  EXPECT_EQ(c.peers[0].group, "rack-3");
  EXPECT_EQ(c.group, "rack-2");
  EXPECT_EQ(c.topology.full_mesh_max_nodes, 128u);
  EXPECT_EQ(c.topology.sample_peers, 12u);
  EXPECT_EQ(c.topology.sample_rotation, absl::Minutes(10));
  EXPECT_EQ(c.topology.group_peers_max, 20u);
  EXPECT_EQ(c.topology.cross_group_peers_max, 4u);
  EXPECT_EQ(c.peers[1].name, "gpu-19");
  EXPECT_EQ(c.peers[1].grpc.host, "fd00::19");
  EXPECT_EQ(c.peers[1].grpc.ToString(), "[fd00::19]:7601");
}

TEST(ConfigTest, ExampleFileIsValidAndSetsEveryKey) {
  const std::string path = testing::SourcePath("deploy/gloowatchd.example.yaml");
  absl::StatusOr<Config> c = LoadConfigFile(path);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->source, path);
  EXPECT_FALSE(c->peers.empty());
  // Every schema key appears in the example (commented or not).
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (absl::string_view key : {"node:",
                                "grpc_listen:",
                                "metrics_listen:",
                                "metrics_web:",
                                "tls_cert:",
                                "tls_key:",
                                "tls_client_ca:",
                                "basic_auth_user:",
                                "basic_auth_password_hash:",
                                "gloo:",
                                "address:",
                                "interface:",
                                "timeout:",
                                "link_speed:",
                                "schedule:",
                                "latency_interval:",
                                "skew_interval:",
                                "bandwidth_interval:",
                                "jitter:",
                                "probe:",
                                "latency_message_bytes:",
                                "latency_burst:",
                                "bandwidth_bytes:",
                                "bandwidth_message_bytes:",
                                "skew_burst:",
                                "flows:",
                                "latency_window:",
                                "backoff_initial:",
                                "backoff_max:",
                                "thresholds:",
                                "latency:",
                                "bandwidth_link_ratio:",
                                "clock_offset:",
                                "failure_window:",
                                "communication_share:",
                                "topology:",
                                "full_mesh_max_nodes:",
                                "sample_peers:",
                                "sample_rotation:",
                                "group_peers_max:",
                                "cross_group_peers_max:",
                                "peers:",
                                "name:",
                                "grpc:",
                                "group:",
                                "labels:"}) {
    EXPECT_THAT(text, HasSubstr(key));
  }
}

TEST(ConfigTest, TopologyLabelsOfTheNodeAndItsPeers) {
  const Config c = ParseOk(absl::StrCat(kBase, R"(labels:
  rack: r12
  switch: leaf-3
  zone: eu-1a
  pod_: "a/b:c.d_e-f"
peers:
  - name: b
    grpc: h:1
    labels: {rack: r13}
  - {name: c, grpc: h:2}
)"));
  EXPECT_EQ(
      c.labels,
      (TopologyLabels{
          {"rack", "r12"}, {"switch", "leaf-3"}, {"zone", "eu-1a"}, {"pod_", "a/b:c.d_e-f"}}));
  ASSERT_EQ(c.peers.size(), 2u);
  EXPECT_EQ(c.peers[0].labels, (TopologyLabels{{"rack", "r13"}}));
  EXPECT_TRUE(c.peers[1].labels.empty());
  // Empty sections are fine, as everywhere.
  EXPECT_TRUE(ParseOk(absl::StrCat(kBase, "labels:\n")).labels.empty());
  // Exactly the limits: 63 characters of value.
  const std::string longest(kMaxTopologyLabelValue, 'v');
  EXPECT_EQ(ParseOk(absl::StrCat(kBase, "labels: {rack: ", longest, "}\n")).labels.at("rack"),
            longest);
}

// One file for every host (gloowatchd --node): the list names every node,
// each daemon leaves itself out and takes its own entry's group.
TEST(ConfigTest, NodeOptionLetsOneFileListEveryNode) {
  const std::string shared =
      "grpc_listen: 0.0.0.0:7601\nmetrics_listen: 0.0.0.0:9601\npeers:\n"
      "  - {name: gpu-1, grpc: 10.0.0.1:7601, group: rack-a}\n"
      "  - {name: gpu-2, grpc: 10.0.0.2:7601, group: rack-b, labels: {rack: r2}}\n"
      "  - {name: gpu-3, grpc: 10.0.0.3:7601, group: rack-b}\n";
  ConfigOptions options;
  options.node = "gpu-2";
  absl::StatusOr<Config> c = ParseConfig(shared, "shared.yaml", options);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->node, "gpu-2");
  EXPECT_EQ(c->group, "rack-b");
  EXPECT_EQ(c->labels, (TopologyLabels{{"rack", "r2"}}));
  ASSERT_EQ(c->peers.size(), 2u);
  EXPECT_EQ(c->peers[0].name, "gpu-1");
  EXPECT_EQ(c->peers[1].name, "gpu-3");

  // --node over node:, and a node that is not in the list at all.
  options.node = "gpu-9";
  c = ParseConfig("node: gpu-1\n" + shared, "shared.yaml", options);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->node, "gpu-9");
  EXPECT_EQ(c->peers.size(), 3u);

  // Without --node the rules stay: node: is required, and this node must
  // not be in its own peer list.
  c = ParseConfig(shared, "shared.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("missing required key 'node'"));
  c = ParseConfig("node: gpu-1\n" + shared, "shared.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("has this node's own name"));

  options.node = "bad name";
  c = ParseConfig(shared, "shared.yaml", options);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("--node: "));
}

// 7610 is the project's metrics port (docs/operations.md): the example and
// deploy/prometheus/ use it. 10025, the port of earlier versions (Postfix's
// re-injection port), still works when a config names it.
TEST(ConfigTest, MetricsPortIs7610InTheExampleAndAnExplicit10025StillWorks) {
  const std::string path = testing::SourcePath("deploy/gloowatchd.example.yaml");
  absl::StatusOr<Config> example = LoadConfigFile(path);
  ASSERT_TRUE(example.ok()) << example.status();
  EXPECT_EQ(example->metrics_listen.port, 7610);
  const Config old = ParseOk(R"(node: node-a
grpc_listen: 0.0.0.0:7601
metrics_listen: 0.0.0.0:10025
)");
  EXPECT_EQ(old.metrics_listen.ToString(), "0.0.0.0:10025");
}

TEST(ConfigTest, EmptySectionsKeepDefaults) {
  const Config c =
      ParseOk(absl::StrCat(kBase, "gloo:\nschedule:\nprobe: {}\nthresholds:\npeers:\n"));
  EXPECT_EQ(c.gloo.timeout, absl::Seconds(5));
  EXPECT_EQ(c.probe.skew_burst, 8u);
  EXPECT_TRUE(c.peers.empty());
}

TEST(ConfigTest, ControlCharactersAreNamedWithTheirPosition) {
  // A raw NUL byte in a name (yaml-cpp alone reported it as '\x08').
  constexpr char kNul[] = "node: a\0b\ngrpc_listen: 127.0.0.1:7601\n";
  EXPECT_EQ(ErrorOf(std::string(kNul, sizeof(kNul) - 1)),
            "cfg.yaml:1:8: control character '\\x00' in the file; a config is plain text");
  EXPECT_THAT(ErrorOf(absl::StrCat(kBase, "peers:\n  - name: b\x1b[2J\n")),
              HasSubstr("cfg.yaml:5:12: control character '\\x1b'"));
  // Tabs in comments and CRLF line ends are text.
  ParseOk(absl::StrCat(kBase, "# a\tcomment\r\n"));
}

TEST(ConfigTest, QuotedScalarsAndCrlfAreAccepted) {
  const Config c = ParseOk(
      "node: 'node-a'\r\ngrpc_listen: \"127.0.0.1:7601\"\r\nmetrics_listen: 127.0.0.1:9601\r\n"
      "probe:\r\n  latency_burst: \"7\"\r\n");
  EXPECT_EQ(c.node, "node-a");
  EXPECT_EQ(c.grpc_listen.port, 7601);
  EXPECT_EQ(c.probe.latency_burst, 7u);
}

TEST(ConfigTest, DurationForms) {
  const Config c = ParseOk(absl::StrCat(kBase, R"(gloo:
  timeout: 250us
schedule:
  latency_interval: 100ms
  skew_interval: 24h
  bandwidth_interval: 1h30m
thresholds:
  failure_window: 1.5h
)"));
  EXPECT_EQ(c.gloo.timeout, absl::Microseconds(250));
  EXPECT_EQ(c.schedule.latency_interval, absl::Milliseconds(100));
  EXPECT_EQ(c.schedule.skew_interval, absl::Hours(24));
  EXPECT_EQ(c.schedule.bandwidth_interval, absl::Minutes(90));
  EXPECT_EQ(c.thresholds.failure_window, absl::Minutes(90));
}

TEST(ConfigTest, RangeBoundsAreInclusive) {
  const Config c = ParseOk(absl::StrCat(kBase, R"(schedule:
  jitter: 0.5
probe:
  latency_message_bytes: 1MiB
  latency_burst: 1000
  bandwidth_bytes: 16GiB
  bandwidth_message_bytes: 256MiB
  skew_burst: 1
thresholds:
  bandwidth_link_ratio: 0
  communication_share: 1.0
topology:
  full_mesh_max_nodes: 1
  sample_peers: 1024
  sample_rotation: 2s
  group_peers_max: 0
  cross_group_peers_max: 1
)"));
  EXPECT_EQ(c.topology.full_mesh_max_nodes, 1u);
  EXPECT_EQ(c.topology.sample_peers, 1024u);
  EXPECT_EQ(c.topology.sample_rotation, absl::Seconds(2));
  EXPECT_EQ(c.topology.group_peers_max, 0u);
  EXPECT_EQ(c.topology.cross_group_peers_max, 1u);
  EXPECT_EQ(c.probe.latency_message_bytes, 1u << 20);
  EXPECT_EQ(c.probe.bandwidth_bytes, 16ull << 30);
  EXPECT_EQ(c.probe.latency_burst, 1000u);
  EXPECT_DOUBLE_EQ(c.schedule.jitter, 0.5);
  EXPECT_EQ(ParseOk(Probe("latency_message_bytes", "8")).probe.latency_message_bytes, 8u);
}

TEST(ParseByteSizeTest, Accepts) {
  const std::pair<const char*, uint64_t> cases[] = {
      {"0", 0},
      {"8", 8},
      {"512B", 512},
      {"4KiB", 4096},
      {"64MiB", 64 << 20},
      {"4 MiB", 4 << 20},
      {"2GiB", 2ull << 30},
      {"1KB", 1000},
      {"3MB", 3000000},
      {"1GB", 1000000000},
      {"18446744073709551615", UINT64_MAX},
  };
  for (const auto& [text, want] : cases) {
    absl::StatusOr<uint64_t> got = ParseByteSize(text);
    ASSERT_TRUE(got.ok()) << text << ": " << got.status();
    EXPECT_EQ(*got, want) << text;
  }
}

TEST(ParseByteSizeTest, Rejects) {
  for (const char* text : {"", "MiB", "4mib", "4 M", "1.5MiB", "-1", "1e400", "0x10", "4MiB4",
                           "99999999999999999999", "18446744073709551615GiB", "17179869184GiB"}) {
    EXPECT_FALSE(ParseByteSize(text).ok()) << text;
  }
  EXPECT_THAT(ParseByteSize("99999999999999999999").status().message(), HasSubstr("too large"));
  EXPECT_THAT(ParseByteSize("4mib").status().message(), HasSubstr("not a size"));
}

TEST(ParseLinkSpeedTest, Accepts) {
  const std::pair<const char*, double> cases[] = {
      {"10Gbps", 1.25e9},     {"25Gbit", 3.125e9}, {"1.25GB/s", 1.25e9},
      {"100Mbps", 12.5e6},    {"100Mbit", 12.5e6}, {"400 Gbps", 50e9},
      {"500MB/s", 5e8},       {"1000000", 1e6},    {"0", 0},
      {"2.5Gbit/s", 3.125e8}, {"10KB/s", 1e4},     {"7B/s", 7},
  };
  for (const auto& [text, want] : cases) {
    absl::StatusOr<double> got = ParseLinkSpeed(text);
    ASSERT_TRUE(got.ok()) << text << ": " << got.status();
    EXPECT_DOUBLE_EQ(*got, want) << text;
  }
}

TEST(ParseLinkSpeedTest, Rejects) {
  for (const char* text : {"", "fast", "10 Gigs", "10gbps", "10GBps", "-1Gbps", "1e400", "inf",
                           "nan", "1.2.3Gbps", ".Gbps", "10Gbps/s"}) {
    EXPECT_FALSE(ParseLinkSpeed(text).ok()) << text;
  }
}

TEST(HostPortTest, ParsesAndRoundTrips) {
  const std::pair<const char*, const char*> cases[] = {
      {"127.0.0.1:7601", "127.0.0.1"},
      {"0.0.0.0:1", "0.0.0.0"},
      {"localhost:65535", "localhost"},
      {"node-b.cluster.example.com:7601", "node-b.cluster.example.com"},
      {"node-b.example.com.:7601", "node-b.example.com."},
      {"[::1]:7601", "::1"},
      {"[::]:7601", "::"},
      {"[2001:db8::8:800:200c:417a]:80", "2001:db8::8:800:200c:417a"},
      {"[fe80::1%eth0]:7601", "fe80::1%eth0"},
      {"[::ffff:10.0.0.1]:7601", "::ffff:10.0.0.1"},
  };
  for (const auto& [text, host] : cases) {
    absl::StatusOr<HostPort> hp = ParseHostPort(text);
    ASSERT_TRUE(hp.ok()) << text << ": " << hp.status();
    EXPECT_EQ(hp->host, host);
    EXPECT_EQ(hp->ToString(), text);
  }
  EXPECT_EQ(ParseHostPort("h:007601")->port, 7601);
  EXPECT_EQ(ParseHostPort("h:007601")->ToString(), "h:7601");
}

TEST(HostPortTest, ToStringBracketsIpv6) {
  HostPort hp;
  hp.host = "fd00::1";
  hp.port = 80;
  EXPECT_EQ(hp.ToString(), "[fd00::1]:80");
  hp.host = "10.1.2.3";
  EXPECT_EQ(hp.ToString(), "10.1.2.3:80");
}

TEST(HostPortTest, Rejects) {
  const std::pair<std::string, const char*> cases[] = {
      {"", "missing port"},
      {":7601", "empty host"},
      {"[]:7601", "empty host"},
      {"127.0.0.1", "missing port"},
      {"127.0.0.1:", "missing port"},
      {"127.0.0.1:0", "out of range"},
      {"127.0.0.1:70000", "out of range"},
      {"127.0.0.1:65536", "out of range"},
      {"127.0.0.1:99999999999999999999", "out of range"},
      {"127.0.0.1:http", "not a number"},
      {"127.0.0.1:-1", "not a number"},
      {"127.0.0.1:+80", "not a number"},
      {"127.0.0.1: 80", "not a number"},
      {"::1:7601", "brackets"},
      {"fe80::1", "brackets"},
      {"[::1]", "missing ':port'"},
      {"[::1]7601", "missing ':port'"},
      {"[::1:7601", "missing ']'"},
      {"[nothex]:7601", "not an IPv6"},
      {"[10.0.0.1]:7601", "not an IPv6"},
      {"300.1.1.1:7601", "not an IP address or host name"},
      {"10.0.0:7601", "not an IP address or host name"},
      {"-node.example.com:1", "not an IP address or host name"},
      {"under_score:1", "not an IP address or host name"},
      {"a..b:1", "not an IP address or host name"},
      {"sp ace:1", "not an IP address or host name"},
      {std::string(254, 'a') + ":1", "253"},
      {std::string(64, 'a') + ".com:1", "not an IP address or host name"},
  };
  for (const auto& [text, problem] : cases) {
    absl::StatusOr<HostPort> hp = ParseHostPort(text);
    ASSERT_FALSE(hp.ok()) << text;
    EXPECT_THAT(hp.status().message(), HasSubstr(problem)) << text;
    EXPECT_LT(hp.status().message().size(), 200u) << text;
  }
}

TEST(HostPortTest, AcceptsLongestLegalHostName) {
  const std::string host = absl::StrCat(std::string(63, 'a'), ".", std::string(63, 'b'), ".",
                                        std::string(63, 'c'), ".", std::string(61, 'd'));
  ASSERT_EQ(host.size(), 253u);
  EXPECT_TRUE(ParseHostPort(host + ":1").ok());
}

// ---- Validation errors: each names file, line and key ----------------------

struct ErrorCase {
  const char* name;
  std::string yaml;
  int line;
  const char* path;     // key path, or "" for document-level errors
  const char* problem;  // fragment of the message
};

std::ostream& operator<<(std::ostream& os, const ErrorCase& c) { return os << c.name; }

class ConfigErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(ConfigErrorTest, ReportsPositionKeyAndProblem) {
  const ErrorCase& c = GetParam();
  const std::string message = ErrorOf(c.yaml);
  const std::string where = absl::StrCat("cfg.yaml:", c.line, ":");
  EXPECT_THAT(message, HasSubstr(where));
  if (*c.path) {
    // The key path follows the position: "cfg.yaml:L:C: key.path: problem".
    bool found = false;
    for (absl::string_view line : absl::StrSplit(message, '\n')) {
      found = found || (absl::StartsWith(line, where) &&
                        absl::StrContains(line, absl::StrCat(": ", c.path, ": ")) &&
                        absl::StrContains(line, c.problem));
    }
    EXPECT_TRUE(found) << message;
  } else {
    EXPECT_THAT(message, HasSubstr(c.problem));
  }
  EXPECT_THAT(message, Not(HasSubstr("bad conversion")));
  EXPECT_THAT(message, Not(HasSubstr("yaml-cpp:")));
}

std::string B(absl::string_view rest) { return absl::StrCat(kBase, rest); }

const ErrorCase kErrorCases[] = {
    // Malformed YAML.
    {"UnclosedFlowMap", B("gloo: {timeout: 5s\n"), 5, "", "invalid YAML"},
    {"UnclosedFlowSeq", "node: [a, b\ngrpc_listen: x\n", 2, "", "invalid YAML"},
    {"MapValueInPlainScalar", B("gloo:\n  timeout: a: b\n"), 5, "", "invalid YAML"},
    {"UnknownAnchor", B("gloo:\n  timeout: *nope\n"), 5, "", "invalid YAML"},
    {"TabIndent", B("gloo:\n\ttimeout: 5s\n"), 5, "", "invalid YAML"},
    {"MultipleDocuments", B("---\nnode: other\n"), 4, "", "more than one YAML document"},
    // Unknown keys.
    {"UnknownTopLevel", B("nodes: x\n"), 4, "nodes", "did you mean 'node'"},
    {"UnknownTopLevelListsAllowed", B("zzz: 1\n"), 4, "zzz",
     "allowed: node, group, labels, grpc_listen, metrics_listen, metrics_web, gloo, schedule, probe, "
     "thresholds, tls, "
     "topology, peers"},
    {"UnknownNestedSuggests", B("schedule:\n  lantency_interval: 5s\n"), 5,
     "schedule.lantency_interval", "unknown key 'lantency_interval'; did you mean 'latency_interval'"},
    {"UnknownGlooKey", B("gloo:\n  timout: 5s\n"), 5, "gloo.timout", "did you mean 'timeout'"},
    {"UnknownProbeKey", B("probe:\n  latency_bursts: 5\n"), 5, "probe.latency_bursts",
     "did you mean 'latency_burst'"},
    {"UnknownThresholdKey", B("thresholds:\n  skew: 1ms\n"), 5, "thresholds.skew",
     "allowed: latency, bandwidth_link_ratio"},
    {"UnknownPeerKey", B("peers:\n  - name: node-b\n    grpc: h:1\n    grp: x\n"), 7, "peers[0].grp",
     "did you mean 'grpc'"},
    {"UpperCaseKey", B("Schedule:\n  jitter: 0.1\n"), 4, "Schedule", "did you mean 'schedule'"},
    {"NonStringKey", B("? [a, b]\n: c\n"), 4, "", "keys must be strings"},
    // Duplicate keys (yaml-cpp keeps both pairs silently).
    {"DuplicateTopLevelKey", B("node: node-b\n"), 4, "node", "duplicate key 'node' (first set on line 1)"},
    {"DuplicateNestedKey", B("gloo:\n  timeout: 1s\n  timeout: 2s\n"), 6, "gloo.timeout",
     "first set on line 5"},
    {"DuplicateSection", B("gloo: {}\ngloo: {}\n"), 5, "gloo", "duplicate key 'gloo'"},
    {"DuplicatePeerKey", B("peers:\n  - name: a\n    name: b\n    grpc: h:1\n"), 6, "peers[0].name",
     "duplicate key"},
    // Wrong types.
    {"SequenceForScalar", "node: [a, b]\ngrpc_listen: h:1\nmetrics_listen: h:2\n", 1, "node",
     "expected a name, got a list"},
    {"MapForScalar", B("gloo:\n  timeout: {s: 5}\n"), 5, "gloo.timeout",
     "expected a duration, got a map"},
    {"ScalarForSection", B("gloo: fast\n"), 4, "gloo", "expected a map, got the scalar 'fast'"},
    {"ListForSection", B("schedule: [1, 2]\n"), 4, "schedule", "expected a map, got a list"},
    {"MapForList", B("peers: {name: node-b}\n"), 4, "peers", "expected a list, got a map"},
    {"ScalarForList", B("peers: node-b\n"), 4, "peers", "expected a list"},
    {"ScalarPeer", B("peers:\n  - node-b\n"), 5, "peers[0]", "expected a map, got the scalar"},
    {"NullRequiredValue", "node:\ngrpc_listen: h:1\nmetrics_listen: h:2\n", 1, "node",
     "expected a name, got nothing"},
    {"NullPeerValue", B("peers:\n  - name: b\n    grpc:\n"), 6, "peers[0].grpc",
     "expected host:port, got nothing"},
    // Durations.
    {"DurationWithoutUnit", B("gloo:\n  timeout: 5\n"), 5, "gloo.timeout", "'5' is not a duration"},
    {"DurationWithSpace", B("gloo:\n  timeout: 5 s\n"), 5, "gloo.timeout", "not a duration"},
    {"DurationDays", B("thresholds:\n  failure_window: 1d\n"), 5, "thresholds.failure_window",
     "not a duration"},
    {"DurationInfinite", B("gloo:\n  timeout: inf\n"), 5, "gloo.timeout", "not a duration"},
    {"DurationHuge", B("gloo:\n  timeout: 99999999999999999999h\n"), 5, "gloo.timeout",
     "not a duration"},
    {"DurationExponent", B("gloo:\n  timeout: 1e400s\n"), 5, "gloo.timeout", "not a duration"},
    {"DurationZero", B("thresholds:\n  latency: 0s\n"), 5, "thresholds.latency", "must be > 0"},
    {"DurationNegative", B("probe:\n  backoff_max: -1s\n"), 5, "probe.backoff_max", "must be > 0"},
    {"DurationTooLong", B("thresholds:\n  clock_offset: 169h\n"), 5, "thresholds.clock_offset",
     "<= 168h"},
    {"IntervalTooShort", B("schedule:\n  latency_interval: 50ms\n"), 5, "schedule.latency_interval",
     "must be >= 100ms and <= 24h"},
    {"IntervalTooLong", B("schedule:\n  skew_interval: 24h1s\n"), 5, "schedule.skew_interval",
     "<= 24h"},
    {"BandwidthIntervalTooShort", B("schedule:\n  bandwidth_interval: 99ms\n"), 5,
     "schedule.bandwidth_interval", ">= 100ms"},
    {"BandwidthBudgetZero", B("schedule:\n  bandwidth_budget: 0\n"), 5,
     "schedule.bandwidth_budget", "must be > 0 and <= 1"},
    {"BandwidthBudgetOverOne", B("schedule:\n  bandwidth_budget: 1.5\n"), 5,
     "schedule.bandwidth_budget", "must be > 0 and <= 1"},
    {"BandwidthBudgetPercent", B("schedule:\n  bandwidth_budget: 1%\n"), 5,
     "schedule.bandwidth_budget", "not a number"},
    // Sizes.
    {"SizeLowerCaseUnit", Probe("bandwidth_bytes", "64mib"), 5, "probe.bandwidth_bytes",
     "'64mib' is not a size"},
    {"SizeFraction", Probe("bandwidth_bytes", "1.5GiB"), 5, "probe.bandwidth_bytes", "not a size"},
    {"SizeNegative", Probe("bandwidth_bytes", "-1"), 5, "probe.bandwidth_bytes", "not a size"},
    {"SizeExponent", Probe("bandwidth_bytes", "1e400"), 5, "probe.bandwidth_bytes", "not a size"},
    {"SizeHuge", Probe("bandwidth_bytes", "99999999999999999999"), 5, "probe.bandwidth_bytes",
     "too large"},
    {"SizeOverflowsWithUnit", Probe("bandwidth_bytes", "18446744073709551615GiB"), 5,
     "probe.bandwidth_bytes", "too large"},
    {"LatencyMessageTooSmall", Probe("latency_message_bytes", "4"), 5, "probe.latency_message_bytes",
     "must be >= 8 and <= 1MiB"},
    {"LatencyMessageTooBig", Probe("latency_message_bytes", "2MiB"), 5,
     "probe.latency_message_bytes", "<= 1MiB"},
    {"LatencyMessageOverflowsU32", Probe("latency_message_bytes", "4294967304"), 5,
     "probe.latency_message_bytes", "out of range"},
    {"BandwidthTooBig", Probe("bandwidth_bytes", "17GiB"), 5, "probe.bandwidth_bytes", "<= 16GiB"},
    {"BandwidthZero", Probe("bandwidth_bytes", "0"), 5, "probe.bandwidth_bytes", "out of range"},
    {"BandwidthMessageTooBig", Probe("bandwidth_message_bytes", "512MiB"), 5,
     "probe.bandwidth_message_bytes", "<= 256MiB"},
    {"BandwidthMessageDoesNotDivide",
     B("probe:\n  bandwidth_bytes: 10MiB\n  bandwidth_message_bytes: 3MiB\n"), 6,
     "probe.bandwidth_message_bytes", "must divide probe.bandwidth_bytes"},
    {"BandwidthNotMultipleOfDefaultMessage", Probe("bandwidth_bytes", "10MB"), 5,
     "probe.bandwidth_bytes", "must divide"},
    {"TlsPartial", B("tls:\n  ca: /etc/gloowatch/ca.pem\n"), 5, "tls",
     "set all of tls.ca, tls.cert and tls.key, or none"},
    {"TooManyBandwidthMessages",
     B("probe:\n  bandwidth_bytes: 1GiB\n  bandwidth_message_bytes: 64KiB\n"), 6,
     "probe.bandwidth_message_bytes", "at most 4096 messages"},
    {"BackoffInitialAboveMax", B("probe:\n  backoff_initial: 1m\n"), 5, "probe.backoff_initial",
     "must not exceed probe.backoff_max"},
    // Counts and ratios.
    {"BurstZero", Probe("latency_burst", "0"), 5, "probe.latency_burst", "must be >= 1 and <= 1000"},
    {"BurstTooBig", Probe("skew_burst", "1001"), 5, "probe.skew_burst", "<= 1000"},
    {"BurstNegative", Probe("latency_burst", "-3"), 5, "probe.latency_burst", "out of range"},
    {"BurstHuge", Probe("latency_burst", "99999999999999999999"), 5, "probe.latency_burst",
     "out of range"},
    {"BurstExponent", Probe("latency_burst", "1e400"), 5, "probe.latency_burst",
     "not a whole number"},
    {"BurstFraction", Probe("latency_burst", "2.5"), 5, "probe.latency_burst", "not a whole number"},
    {"BurstHex", Probe("skew_burst", "0x10"), 5, "probe.skew_burst", "not a whole number"},
    {"FlowsZero", Probe("flows", "0"), 5, "probe.flows", "must be >= 1 and <= 8"},
    {"FlowsTooMany", Probe("flows", "9"), 5, "probe.flows", "must be >= 1 and <= 8"},
    {"FlowsNegative", Probe("flows", "-1"), 5, "probe.flows", "out of range"},
    {"FlowsFraction", Probe("flows", "1.5"), 5, "probe.flows", "not a whole number"},
    {"FlowsNotANumber", Probe("flows", "many"), 5, "probe.flows", "not a whole number"},
    {"JitterTooBig", B("schedule:\n  jitter: 0.6\n"), 5, "schedule.jitter", "must be >= 0 and <= 0.5"},
    {"JitterNegative", B("schedule:\n  jitter: -0.1\n"), 5, "schedule.jitter", "out of range"},
    {"JitterHuge", B("schedule:\n  jitter: 1e400\n"), 5, "schedule.jitter", "out of range"},
    {"JitterNan", B("schedule:\n  jitter: nan\n"), 5, "schedule.jitter", "not a number"},
    {"JitterInf", B("schedule:\n  jitter: .inf\n"), 5, "schedule.jitter", "not a number"},
    {"JitterHexFloat", B("schedule:\n  jitter: 0x1p-2\n"), 5, "schedule.jitter", "not a number"},
    {"JitterPercent", B("schedule:\n  jitter: 10%\n"), 5, "schedule.jitter", "not a number"},
    {"RatioTooBig", B("thresholds:\n  bandwidth_link_ratio: 1.5\n"), 5,
     "thresholds.bandwidth_link_ratio", "must be >= 0 and <= 1"},
    {"ShareNegative", B("thresholds:\n  communication_share: -0.5\n"), 5,
     "thresholds.communication_share", "out of range"},
    {"LinkSpeedBad", B("gloo:\n  link_speed: 10 gigs\n"), 5, "gloo.link_speed",
     "not a link speed"},
    {"LinkSpeedHuge", B("gloo:\n  link_speed: 99999999999999999999Gbps\n"), 5, "gloo.link_speed",
     "out of range"},
    {"LinkSpeedExponent", B("gloo:\n  link_speed: 1e400\n"), 5, "gloo.link_speed",
     "not a link speed"},
    // Required keys: position of the enclosing map, root = line 1.
    {"MissingNode", "grpc_listen: h:1\nmetrics_listen: h:2\n", 1, "", "missing required key 'node'"},
    {"MissingNodeAfterComments", "# comment\n\n# more\ngrpc_listen: h:1\nmetrics_listen: h:2\n", 1,
     "", "missing required key 'node'"},
    {"MissingGrpcListen", "node: a\nmetrics_listen: h:2\n", 1, "",
     "missing required key 'grpc_listen'"},
    {"MissingMetricsListen", "node: a\ngrpc_listen: h:2\n", 1, "",
     "missing required key 'metrics_listen'"},
    {"MissingPeerGrpc", B("peers:\n  - name: node-b\n"), 5, "peers[0]", "missing required key 'grpc'"},
    {"MissingPeerName", B("peers:\n  - name: node-b\n    grpc: h:1\n  - grpc: h:2\n"), 7, "peers[1]",
     "missing required key 'name'"},
    {"MissingPeerNameFlow", B("peers: [{grpc: h:1}]\n"), 4, "peers[0]",
     "missing required key 'name'"},
    // Peers.
    {"DuplicatePeerName", B("peers:\n  - {name: node-b, grpc: h:1}\n  - {name: node-b, grpc: h:2}\n"),
     6, "peers[1].name", "duplicate peer name 'node-b' (also peers[0].name on line 5)"},
    {"PeerIsSelf", B("peers:\n  - name: node-a\n    grpc: h:1\n"), 5, "peers[0].name",
     "has this node's own name"},
    {"DuplicatePeerAddress",
     B("peers:\n  - name: b\n    grpc: 10.0.0.2:7601\n  - name: c\n    grpc: 10.0.0.2:7601\n"), 8,
     "peers[1].grpc", "duplicate peer address '10.0.0.2:7601' (also peers[0].grpc on line 6)"},
    {"DuplicatePeerAddressNormalized",
     B("peers:\n  - {name: b, grpc: Node-X:7601}\n  - {name: c, grpc: node-x:07601}\n"), 6,
     "peers[1].grpc", "duplicate peer address"},
    {"DuplicatePeerAddressIpv6",
     B("peers:\n  - {name: b, grpc: '[::1]:1'}\n  - {name: c, grpc: '[::1]:1'}\n"), 6,
     "peers[1].grpc", "'[::1]:1'"},
    {"BadPeerName", B("peers:\n  - {name: 'node b', grpc: h:1}\n"), 5, "peers[0].name",
     "contains ' '"},
    // Topology labels.
    {"LabelsNotAMap", B("labels: [a]\n"), 4, "labels", "expected a map, got a list"},
    {"LabelReservedName", B("labels:\n  node: x\n"), 5, "labels.node", "is reserved"},
    {"LabelReservedJob", B("labels:\n  job: x\n"), 5, "labels.job", "is reserved"},
    {"LabelReservedGroup", B("labels:\n  group: x\n"), 5, "labels.group", "is reserved"},
    {"LabelDunderName", B("labels:\n  __rack: x\n"), 5, "labels.__rack", "\"__\" prefix"},
    {"LabelNameWithDash", B("labels:\n  rack-id: x\n"), 5, "labels.rack-id",
     "is not a Prometheus label name"},
    {"LabelNameWithDigitFirst", B("labels:\n  1rack: x\n"), 5, "labels.1rack",
     "is not a Prometheus label name"},
    {"LabelValueWithSpace", B("labels:\n  rack: 'r 1'\n"), 5, "labels.rack", "contains ' '"},
    {"LabelValueEmpty", B("labels:\n  rack: ''\n"), 5, "labels.rack", "must not be empty"},
    {"LabelValueMissing", B("labels:\n  rack:\n"), 5, "labels.rack",
     "expected a label value, got nothing"},
    {"LabelValueList", B("labels:\n  rack: [a]\n"), 5, "labels.rack",
     "expected a label value, got a list"},
    {"LabelValueTooLong",
     B("labels:\n  rack: "
       "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n"),
     5, "labels.rack", "is 64 characters; the limit is 63"},
    {"TooManyLabels", B("labels: {a: 1, b: 2, c: 3, d: 4, e: 5}\n"), 4, "labels.e",
     "too many labels: at most 4"},
    {"DuplicateLabel", B("labels:\n  rack: a\n  rack: b\n"), 6, "labels.rack",
     "duplicate label 'rack'"},
    {"PeerLabelReserved", B("peers:\n  - {name: b, grpc: h:1, labels: {peer: x}}\n"), 5,
     "peers[0].labels.peer", "is reserved"},
    {"PeerLabelBadValue", B("peers:\n  - name: b\n    grpc: h:1\n    labels:\n      rack: 'a b'\n"),
     8, "peers[0].labels.rack", "contains ' '"},
    {"BadPeerGroup", B("peers:\n  - {name: b, grpc: h:1, group: 'rack/1'}\n"), 5, "peers[0].group",
     "contains '/'"},
    {"EmptyPeerGroup", B("peers:\n  - {name: b, grpc: h:1, group: ''}\n"), 5, "peers[0].group",
     "must not be empty"},
    // host:port.
    {"EmptyHost", "node: a\ngrpc_listen: :7601\nmetrics_listen: h:2\n", 2, "grpc_listen",
     "empty host"},
    {"PortZero", "node: a\ngrpc_listen: h:0\nmetrics_listen: h:2\n", 2, "grpc_listen",
     "port 0 is out of range 1..65535"},
    {"PortTooBig", "node: a\ngrpc_listen: h:2\nmetrics_listen: h:70000\n", 3, "metrics_listen",
     "port 70000 is out of range"},
    {"PortNotNumeric", "node: a\ngrpc_listen: h:grpc\nmetrics_listen: h:2\n", 2, "grpc_listen",
     "port 'grpc' is not a number"},
    {"MissingPort", "node: a\ngrpc_listen: localhost\nmetrics_listen: h:2\n", 2, "grpc_listen",
     "missing port"},
    {"UnbracketedIpv6", "node: a\ngrpc_listen: h:1\nmetrics_listen: ::1:9601\n", 3,
     "metrics_listen", "brackets"},
    {"BadPeerAddress", B("peers:\n  - name: b\n    grpc: 10.0.0.999:7601\n"), 6, "peers[0].grpc",
     "not an IP address or host name"},
    {"ListenPortClash", "node: a\ngrpc_listen: 0.0.0.0:7601\nmetrics_listen: 127.0.0.1:7601\n", 3,
     "metrics_listen", "clashes with grpc_listen (line 2)"},
    // Gloo.
    {"GlooAddressAndInterface", B("gloo:\n  address: 10.0.0.1\n  interface: eth0\n"), 6,
     "gloo.interface", "set gloo.address (line 5) or gloo.interface, not both"},
    {"GlooAddressIsInterfaceName", B("gloo:\n  address: eth0\n"), 5, "gloo.address",
     "'eth0' is not an IP address"},
    {"GlooAddressIsHostName", B("gloo:\n  address: node-a.example.com\n"), 5, "gloo.address",
     "not an IP address"},
    {"GlooAddressBracketed", B("gloo:\n  address: '[::1]'\n"), 5, "gloo.address",
     "without brackets"},
    {"GlooAddressBadOctet", B("gloo:\n  address: 10.0.0.256\n"), 5, "gloo.address",
     "not an IP address"},
    {"GlooAddressWithPort", B("gloo:\n  address: 10.0.0.1:7601\n"), 5, "gloo.address",
     "not an IP address"},
    {"GlooInterfaceSlash", B("gloo:\n  interface: eth/0\n"), 5, "gloo.interface",
     "not a valid interface name"},
    {"GlooInterfaceTooLong", B("gloo:\n  interface: abcdefghijklmnop\n"), 5, "gloo.interface",
     "1..15 characters"},
    // Node name.
    {"NodeNameSpace", "node: node a\ngrpc_listen: h:1\nmetrics_listen: h:2\n", 1, "node",
     "contains ' '"},
    {"NodeNameSlash", "node: a/b\ngrpc_listen: h:1\nmetrics_listen: h:2\n", 1, "node",
     "contains '/'"},
    {"NodeNameNonAscii", "node: n\xc3\xb6" "de\ngrpc_listen: h:1\nmetrics_listen: h:2\n", 1, "node",
     "contains '\\xc3'"},
    {"NodeNameEmpty", "node: ''\ngrpc_listen: h:1\nmetrics_listen: h:2\n", 1, "node",
     "must not be empty"},
    {"NodeNameTooLong",
     absl::StrCat("grpc_listen: h:1\nmetrics_listen: h:2\nnode: ", std::string(64, 'n'), "\n"), 3,
     "node", "is 64 characters; the limit is 63"},
    {"NodeNameHuge",
     absl::StrCat("grpc_listen: h:1\nmetrics_listen: h:2\nnode: ", std::string(500000, 'n'), "\n"),
     3, "node", "is 500000 characters; the limit is 63"},
    {"HostTooLong",
     absl::StrCat("node: a\ngrpc_listen: h:1\nmetrics_listen: ", std::string(254, 'h'), ":1\n"), 3,
     "metrics_listen", "the limit is 253"},
    // Whole document.
    {"EmptyFile", "", 1, "", "config is empty"},
    {"OnlyComments", "# nothing here\n\n   \n", 1, "", "config is empty"},
    {"ExplicitNull", "~\n", 1, "", "config is empty"},
    {"DocumentMarkerOnly", "---\n", 1, "", "config is empty"},
    {"TopLevelList", "- node: a\n- node: b\n", 1, "", "top level must be a map of settings, got a list"},
    {"TopLevelScalar", "node-a\n", 1, "", "top level must be a map of settings, got the scalar"},
    // Topology.
    {"GroupWithSpace", B("group: rack 1\n"), 4, "group", "contains ' '"},
    {"GroupList", B("group: [a]\n"), 4, "group", "expected a name, got a list"},
    {"TopologyUnknownKey", B("topology:\n  sample_peer: 3\n"), 5, "topology.sample_peer",
     "did you mean 'sample_peers'?"},
    {"TopologyNotAMap", B("topology: sampled\n"), 4, "topology", "expected a map"},
    {"FullMeshZero", B("topology:\n  full_mesh_max_nodes: 0\n"), 5,
     "topology.full_mesh_max_nodes", "must be >= 1 and <= 1000000"},
    {"SamplePeersZero", B("topology:\n  sample_peers: 0\n"), 5, "topology.sample_peers",
     "must be >= 1 and <= 1024"},
    {"SamplePeersTooMany", B("topology:\n  sample_peers: 1025\n"), 5, "topology.sample_peers",
     "out of range"},
    {"SampleRotationTooShort", B("topology:\n  sample_rotation: 1s\n"), 5,
     "topology.sample_rotation", "must be >= 2s and <= 24h"},
    {"SampleRotationNoUnit", B("topology:\n  sample_rotation: 300\n"), 5,
     "topology.sample_rotation", "not a duration"},
    {"GroupPeersNegative", B("topology:\n  group_peers_max: -1\n"), 5,
     "topology.group_peers_max", "out of range"},
    {"CrossGroupPeersZero", B("topology:\n  cross_group_peers_max: 0\n"), 5,
     "topology.cross_group_peers_max", "must be >= 1 and <= 1024"},
    // Hostile input.
    {"AliasCycle", B("peers: &p [*p]\n"), 4, "peers[0]", "expected a map, got a list"},
    {"DeepFlowUnclosed", Repeat("[", 10000), 1, "", "nested deeper than 64 levels"},
    {"DeepFlowClosed", absl::StrCat(Repeat("[", 100000), Repeat("]", 100000)), 1, "",
     "nested deeper than 64 levels"},
    {"DeepFlowMaps", Repeat("{a: ", 100000), 1, "", "nested deeper than 64 levels"},
    {"DeepBlockSequences", absl::StrCat(Repeat("- ", 100000), "x\n"), 1, "",
     "nested deeper than 64 levels"},
    {"DeepUnderKey", absl::StrCat(kBase, "gloo: ", Repeat("[", 100000)), 4, "",
     "nested deeper than 64 levels"},
    {"DeepIndentedMaps",
     [] {
       std::string s;
       for (int i = 0; i < 1000; ++i) absl::StrAppend(&s, std::string(i, ' '), "a:\n");
       return s;
     }(),
     65, "", "nested deeper than 64 levels"},
};

INSTANTIATE_TEST_SUITE_P(Cases, ConfigErrorTest, ::testing::ValuesIn(kErrorCases),
                         [](const ::testing::TestParamInfo<ErrorCase>& info) {
                           return std::string(info.param.name);
                         });

// ---- Other error behaviour -------------------------------------------------

TEST(ConfigTest, UnknownKeyFarFromAnyHasNoSuggestion) {
  const std::string message = ErrorOf(B("colour: blue\n"));
  EXPECT_THAT(message, HasSubstr("unknown key 'colour'"));
  EXPECT_THAT(message, Not(HasSubstr("did you mean")));
}

TEST(ConfigTest, ErrorColumnIsOneBased) {
  EXPECT_THAT(ErrorOf(B("schedule:\n  jitter: 0.9\n")),
              HasSubstr("cfg.yaml:5:11: schedule.jitter:"));
  EXPECT_THAT(ErrorOf(B("peers:\n  - name: b\n")), HasSubstr("cfg.yaml:5:5: peers[0]:"));
}

TEST(ConfigTest, ReportsEveryErrorInOnePass) {
  const std::string message =
      ErrorOf(B("schedule:\n  jitter: 2\nprobe:\n  latency_burst: 0\nbogus: 1\n"));
  EXPECT_THAT(message, AllOf(HasSubstr("cfg.yaml:5:"), HasSubstr("schedule.jitter"),
                             HasSubstr("cfg.yaml:7:"), HasSubstr("probe.latency_burst"),
                             HasSubstr("cfg.yaml:8:"), HasSubstr("bogus")));
  EXPECT_EQ(std::count(message.begin(), message.end(), '\n'), 2);
}

TEST(ConfigTest, CapsTheNumberOfErrors) {
  std::string yaml = kBase;
  for (int i = 0; i < 30; ++i) absl::StrAppend(&yaml, "bogus", i, ": 1\n");
  const std::string message = ErrorOf(yaml);
  EXPECT_THAT(message, HasSubstr("(10 more errors not shown)"));
  EXPECT_EQ(std::count(message.begin(), message.end(), '\n'), 20);
}

TEST(ConfigTest, HostileValuesAreClippedInMessages) {
  const std::string message = ErrorOf(
      absl::StrCat(kBase, "gloo:\n  timeout: \"", std::string(100000, 'x'), "\\n\\x01\"\n"));
  EXPECT_THAT(message, HasSubstr("gloo.timeout"));
  EXPECT_LT(message.size(), 300u);
  // Plain keys are capped at 1024 characters by yaml-cpp; explicit ones are not.
  const std::string key_message =
      ErrorOf(absl::StrCat(kBase, "? ", std::string(200000, 'k'), "\n: 1\n"));
  EXPECT_THAT(key_message, HasSubstr("unknown key"));
  EXPECT_LT(key_message.size(), 500u);
  EXPECT_EQ(std::count(key_message.begin(), key_message.end(), '\n'), 0);
}

TEST(ConfigTest, NestingUpToTheLimitIsNotANestingError) {
  // The root map is level 1, so 63 brackets reach level 64.
  const std::string ok = ErrorOf(absl::StrCat(kBase, "gloo: ", Repeat("[", 63), Repeat("]", 63)));
  EXPECT_THAT(ok, HasSubstr("gloo: expected a map, got a list"));
  const std::string deep = ErrorOf(absl::StrCat(kBase, "gloo: ", Repeat("[", 64), Repeat("]", 64)));
  EXPECT_THAT(deep, HasSubstr("nested deeper than 64 levels"));
}

TEST(ConfigTest, DeepNestingIsSafeOnASmallStack) {
  // yaml-cpp's parser recurses per level; a 128 KiB stack only survives if
  // the depth check stops it early.
  struct Arg {
    std::string yaml;
    std::string message;
  } arg{absl::StrCat(Repeat("[", 100000), Repeat("]", 100000)), ""};
  pthread_attr_t attr;
  ASSERT_EQ(pthread_attr_init(&attr), 0);
  ASSERT_EQ(pthread_attr_setstacksize(&attr, 128 << 10), 0);
  pthread_t thread;
  ASSERT_EQ(pthread_create(
                &thread, &attr,
                [](void* p) -> void* {
                  auto* a = static_cast<Arg*>(p);
                  absl::StatusOr<Config> c = ParseConfig(a->yaml, "deep.yaml");
                  a->message = std::string(c.status().message());
                  return nullptr;
                },
                &arg),
            0);
  ASSERT_EQ(pthread_join(thread, nullptr), 0);
  pthread_attr_destroy(&attr);
  EXPECT_THAT(arg.message, HasSubstr("deep.yaml:1:"));
  EXPECT_THAT(arg.message, HasSubstr("nested deeper than 64 levels"));
}

TEST(ConfigTest, RejectsOversizedInput) {
  std::string yaml = absl::StrCat(kBase, "#", std::string(kMaxConfigBytes, ' '), "\n");
  absl::StatusOr<Config> c = Parse(yaml);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), AllOf(HasSubstr("cfg.yaml"), HasSubstr("1 MiB")));
}

// ---- Files -----------------------------------------------------------------

class ConfigFileTest : public ::testing::Test {
 protected:
  std::string Write(absl::string_view name, absl::string_view text) {
    const std::string path =
        absl::StrCat(::testing::TempDir(), "/config_test_", getpid(), "_", name);
    std::ofstream(path, std::ios::binary) << text;
    paths_.push_back(path);
    return path;
  }
  ~ConfigFileTest() override {
    for (const std::string& p : paths_) {
      chmod(p.c_str(), 0600);
      std::remove(p.c_str());
    }
  }
  std::vector<std::string> paths_;
};

TEST_F(ConfigFileTest, LoadsAndRecordsSource) {
  const std::string path = Write("ok.yaml", kMinimal);
  absl::StatusOr<Config> c = LoadConfigFile(path);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->source, path);
  EXPECT_EQ(c->peers.size(), 2u);
}

TEST_F(ConfigFileTest, ErrorsNameThePath) {
  const std::string path = Write("bad.yaml", B("gloo:\n  timeout: soon\n"));
  absl::StatusOr<Config> c = LoadConfigFile(path);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr(absl::StrCat(path, ":5:12: gloo.timeout: ")));
}

// systemd's LoadCredential= copies the files into $CREDENTIALS_DIRECTORY;
// tls.* names relative to it are read there, absolute paths as they are.
TEST_F(ConfigFileTest, RelativeTlsPathsAreReadFromCredentialsDirectory) {
  const std::string prefix = absl::StrCat("config_test_", getpid(), "_");
  Write("ca", "-----BEGIN CERTIFICATE-----\nca\n");
  Write("cert", "-----BEGIN CERTIFICATE-----\ncert\n");
  const std::string key = Write("key", "-----BEGIN PRIVATE KEY-----\nkey\n");
  TlsConfig config;
  config.ca_file = prefix + "ca";
  config.cert_file = prefix + "cert";
  config.key_file = key;  // absolute: not moved
  ASSERT_EQ(setenv("CREDENTIALS_DIRECTORY", ::testing::TempDir().c_str(), 1), 0);
  absl::StatusOr<TlsMaterial> tls = LoadTls(config);
  ASSERT_TRUE(tls.ok()) << tls.status();
  EXPECT_TRUE(tls->enabled);
  EXPECT_EQ(tls->ca_pem, "-----BEGIN CERTIFICATE-----\nca\n");
  EXPECT_EQ(tls->cert_pem, "-----BEGIN CERTIFICATE-----\ncert\n");
  EXPECT_EQ(tls->key_pem, "-----BEGIN PRIVATE KEY-----\nkey\n");

  config.cert_file = "missing";
  tls = LoadTls(config);
  ASSERT_FALSE(tls.ok());
  EXPECT_THAT(
      tls.status().message(),
      AllOf(HasSubstr(absl::StrCat("tls.cert: cannot read '", ::testing::TempDir(), "/missing'")),
            HasSubstr("$CREDENTIALS_DIRECTORY")));
  // Without it, relative means the working directory, as before.
  ASSERT_EQ(unsetenv("CREDENTIALS_DIRECTORY"), 0);
  config.cert_file = prefix + "cert";
  tls = LoadTls(config);
  ASSERT_FALSE(tls.ok());
  EXPECT_THAT(tls.status().message(),
              HasSubstr(absl::StrCat("tls.ca: cannot read '", prefix, "ca'")));
}

TEST_F(ConfigFileTest, MissingFile) {
  const std::string path = absl::StrCat(::testing::TempDir(), "/no/such/gloowatchd.yaml");
  absl::StatusOr<Config> c = LoadConfigFile(path);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(c.status().message(), AllOf(HasSubstr(path), HasSubstr("No such file or directory")));
}

TEST_F(ConfigFileTest, DirectoryIsUnreadable) {
  absl::StatusOr<Config> c = LoadConfigFile(::testing::TempDir());
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(),
              AllOf(HasSubstr("cannot read config file"), HasSubstr(::testing::TempDir())));
}

TEST_F(ConfigFileTest, PermissionDenied) {
  if (geteuid() == 0) GTEST_SKIP() << "root can read mode-000 files";
  const std::string path = Write("secret.yaml", kMinimal);
  ASSERT_EQ(chmod(path.c_str(), 0), 0);
  absl::StatusOr<Config> c = LoadConfigFile(path);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(c.status().message(), HasSubstr(path));
}

TEST_F(ConfigFileTest, RejectsFilesOverOneMiB) {
  const std::string path =
      Write("big.yaml", absl::StrCat(kMinimal, "#", std::string(kMaxConfigBytes, 'x'), "\n"));
  absl::StatusOr<Config> c = LoadConfigFile(path);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), AllOf(HasSubstr(path), HasSubstr("larger than 1 MiB")));
}

TEST_F(ConfigFileTest, EmptyFile) {
  const std::string path = Write("empty.yaml", "");
  absl::StatusOr<Config> c = LoadConfigFile(path);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr(absl::StrCat(path, ":1:1: config is empty")));
}

}  // namespace
}  // namespace gloowatch
