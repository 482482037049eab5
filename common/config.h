// Daemon configuration: the YAML file's schema, defaults and validation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace gloowatch {

// host:port. Host is an IPv4/IPv6 literal or a DNS name ("[::1]:7601" for v6).
struct HostPort {
  std::string host;
  uint16_t port = 0;
  std::string ToString() const;  // re-brackets IPv6 literals
};

// Parses "host:port" / "[v6]:port". Port must be 1..65535; host non-empty.
absl::StatusOr<HostPort> ParseHostPort(absl::string_view text);

// Topology labels of a node (rack, switch, zone...): `labels:` of the node
// or of a peer entry. Keys are Prometheus label names that clash with none
// gloowatch or Prometheus sets; at most kMaxTopologyLabels, values bounded.
using TopologyLabels = std::map<std::string, std::string>;
inline constexpr size_t kMaxTopologyLabels = 4;
inline constexpr size_t kMaxTopologyLabelValue = 63;

struct PeerConfig {
  std::string name;
  HostPort grpc;
  std::string group;  // optional rack/switch label
  TopologyLabels labels;
};

struct GlooConfig {
  // At most one of address/interface is set; neither means: GLOO_SOCKET_IFNAME
  // if set, else the address the host name resolves to (what PyTorch does).
  std::string address;
  std::string interface;
  absl::Duration timeout = absl::Seconds(5);
  // Overrides the link speed read from sysfs (bytes/s); 0 = read it.
  double link_speed_bytes_per_second = 0;
};

struct ScheduleConfig {
  absl::Duration latency_interval = absl::Seconds(5);
  absl::Duration skew_interval = absl::Seconds(10);
  absl::Duration bandwidth_interval = absl::Seconds(60);
  double jitter = 0.1;  // +-fraction of each interval, in [0, 0.5]
  // Fraction of wall time this node's link may spend in bandwidth transfers
  // (ours and the peers' we serve), in (0, 1]. 0.5%: with 31 peers the
  // daemon's whole footprint stays under 1% of a core (docs/performance.md).
  double bandwidth_budget = 0.005;
};

// Messages per bandwidth transfer the probe protocol allows.
inline constexpr uint64_t kMaxBandwidthMessages = 4096;
// Command pairs (flows) per peer the probe protocol allows (probe.flows).
inline constexpr uint32_t kMaxProbeFlows = 8;

struct ProbeConfig {
  uint32_t latency_message_bytes = 8;             // >= 8, <= 1 MiB
  uint32_t latency_burst = 5;                     // round trips per latency probe
  uint64_t bandwidth_bytes = 64ull << 20;         // per direction per transfer
  uint64_t bandwidth_message_bytes = 4ull << 20;  // divides bandwidth_bytes
  uint32_t skew_burst = 8;                        // samples per skew probe
  // Command pairs per peer, on distinct ports, that the latency probes take
  // in turn, so that ECMP spreads them over several paths (1..kMaxProbeFlows).
  uint32_t flows = 4;
  absl::Duration latency_window = absl::Minutes(5);  // p50/p99 window
  absl::Duration backoff_initial = absl::Milliseconds(500);
  absl::Duration backoff_max = absl::Seconds(30);
};

// Mutual TLS for the gRPC API and the peer-to-peer RPCs: all three or none.
struct TlsConfig {
  std::string ca_file;    // PEM CA bundle that signs every node's and client's certificate
  std::string cert_file;  // this node's certificate (also its client certificate)
  std::string key_file;   // its private key
  bool enabled() const { return !cert_file.empty(); }
};

// Optional TLS and HTTP basic auth for /metrics, in the spirit of
// Prometheus' exporter-toolkit web config (one user: the scraper).
struct MetricsWebConfig {
  std::string tls_cert_file;       // PEM certificate the endpoint presents
  std::string tls_key_file;        // its private key
  std::string tls_client_ca_file;  // with it, only clients with a certificate it signed
  std::string basic_auth_user;
  std::string basic_auth_password_hash;  // bcrypt ($2a$, $2b$, $2y$), as htpasswd -B writes
  bool tls() const { return !tls_cert_file.empty(); }
  bool basic_auth() const { return !basic_auth_user.empty(); }
  auto Tied() const {
    return std::tie(tls_cert_file, tls_key_file, tls_client_ca_file, basic_auth_user,
                    basic_auth_password_hash);
  }
};

struct Thresholds {
  absl::Duration latency = absl::Milliseconds(2);
  double bandwidth_link_ratio = 0.8;
  absl::Duration clock_offset = absl::Milliseconds(100);
  absl::Duration failure_window = absl::Hours(1);
  double communication_share = 0.3;
  // A host whose gloowatch threads wait this long for a CPU on average, or
  // whose hypervisor steals this share, is overloaded: its slow links are
  // blamed on the host, not the network.
  absl::Duration scheduling_delay = absl::Milliseconds(10);
  double cpu_steal_ratio = 0.1;
};

// Which peers a node probes (docs/topology.md). Up to full_mesh_max_nodes
// nodes (this one included) every node probes every other; above, each probes
// a bounded set: ring neighbours, its own group (capped), a share of the other
// groups and a rotating sample.
struct TopologyConfig {
  uint32_t full_mesh_max_nodes = 64;
  uint32_t sample_peers = 8;                          // size of the rotating sample
  absl::Duration sample_rotation = absl::Minutes(5);  // epoch length of the sample
  uint32_t group_peers_max = 32;                      // cap of the own-group part
  uint32_t cross_group_peers_max = 16;                // cap of the other-groups part
};

struct Config {
  std::string source;  // file name the config came from, for messages
  std::string yaml;    // the text it was parsed from
  std::string node;
  std::string group;      // this node's rack/switch label, like PeerConfig::group
  TopologyLabels labels;  // this node's topology labels, like PeerConfig::labels
  HostPort grpc_listen;
  HostPort metrics_listen;
  MetricsWebConfig metrics_web;
  GlooConfig gloo;
  ScheduleConfig schedule;
  ProbeConfig probe;
  Thresholds thresholds;
  TlsConfig tls;
  TopologyConfig topology;
  std::vector<PeerConfig> peers;
};

// What the command line adds to the file.
struct ConfigOptions {
  // gloowatchd --node: this node's name, instead of (or over) `node:`. The
  // peer list may then hold this node too (it is left out), so that one
  // file, listing every node, serves the whole fleet (a Kubernetes
  // DaemonSet's ConfigMap, one file pushed to every host).
  std::string node;
};

// Parses and validates YAML text. `source` names the file in error messages,
// which have the form "<source>:<line>:<column>: <key path>: <problem>".
absl::StatusOr<Config> ParseConfig(absl::string_view yaml, absl::string_view source,
                                   const ConfigOptions& options = {});

// Reads `path` and parses it.
absl::StatusOr<Config> LoadConfigFile(const std::string& path, const ConfigOptions& options = {});

// Config text (or file) larger than this is rejected before parsing.
inline constexpr size_t kMaxConfigBytes = size_t{1} << 20;

// Byte count: a plain integer, or one with suffix B, KiB, MiB, GiB (binary)
// or KB, MB, GB (decimal): "4096", "64MiB", "1GB". No range check.
absl::StatusOr<uint64_t> ParseByteSize(absl::string_view text);

// Link speed in bytes/s. Bits: "10Gbps", "25Gbit", "100Mbps", "100Mbit";
// bytes: "1.25GB/s", "500MB/s"; a plain number is bytes/s. No range check.
absl::StatusOr<double> ParseLinkSpeed(absl::string_view text);

}  // namespace gloowatch
