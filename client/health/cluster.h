// Merges every daemon's NodeStatus into one cluster picture and judges nodes
// and links against the thresholds the daemons report.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "client/health/localise.h"
#include "client/sources/fetch.h"

namespace gloowatch::client {

enum class Health { kHealthy, kDegraded, kFailed };
const char* HealthName(Health h);  // healthy, degraded, failed

struct EffectiveThresholds {
  double latency_seconds = 0.002;
  double link_ratio = 0.8;
  double clock_offset_seconds = 0.1;
  double communication_share = 0.3;
  // TCP loss (node -> peer, 60 s window) above which a direction is bad. Not
  // in the daemon's config yet: the loss alert's 1%.
  double loss_ratio = 0.01;
  // ... judged only over at least this many segments in the window (when the
  // source says how many: Prometheus does not).
  uint64_t loss_min_segments = 1000;
  // Host load (NodeStatus.host_load) at or above which the host is overloaded.
  double scheduling_delay_seconds = 0.01;
  double cpu_steal_ratio = 0.1;
};
// Why the node's host counts as overloaded ("scheduling delay 41.2 ms >= 10.0
// ms"), or empty.
std::string OverloadOf(const v1::NodeStatus& s, const EffectiveThresholds& t);
// NodeStatus.thresholds with defaults for unset (zero) fields.
EffectiveThresholds ThresholdsOf(const v1::NodeStatus& s);

struct NodeReport {
  std::string name;
  std::string address;
  bool reachable = false;
  std::string error;  // when unreachable
  const v1::NodeStatus* status = nullptr;
  Health health = Health::kHealthy;
  std::vector<std::string> problems;
};

struct LinkReport {
  std::string a, b;                    // a < b
  const v1::PeerStatus* ab = nullptr;  // a's view of b
  const v1::PeerStatus* ba = nullptr;  // b's view of a
  Health health = Health::kHealthy;
  std::vector<std::string> problems;
  double worst_p50_seconds = 0;
};

struct TrainingReport {
  std::string node;
  v1::TrainingJobStatus job;
  bool over_threshold = false;
  double threshold = 0;
};

// How much of the node-pair matrix is measured directly. In a full mesh every
// daemon probes every peer; in a sampled mesh (NodeStatus.topology.mode
// "sampled") each probes a bounded set, and pairs nobody probes are simply
// not measured: not a failure.
struct Coverage {
  bool sampled = false;           // some daemon reports topology mode "sampled"
  size_t node_pairs = 0;          // n(n-1)/2 over every node named
  size_t measured_pairs = 0;      // pairs probed by at least one end
  size_t measured_both_ways = 0;  // pairs probed by both ends
};

// Move-only: the reports point into `fetched`.
struct ClusterPicture {
  ClusterPicture() = default;
  ClusterPicture(ClusterPicture&&) = default;
  ClusterPicture& operator=(ClusterPicture&&) = default;
  ClusterPicture(const ClusterPicture&) = delete;
  ClusterPicture& operator=(const ClusterPicture&) = delete;

  std::vector<FetchResult> fetched;  // owns the NodeStatus the pointers refer to
  std::vector<std::string> nodes;    // matrix order: sorted names
  std::vector<NodeReport> node_reports;
  std::vector<LinkReport> links;  // worst first
  std::vector<TrainingReport> training;
  // Who is to blame for the bad links, worst first (client/localise.h);
  // empty when no measured direction is bad.
  std::vector<Suspect> suspects;
  Coverage coverage;
  // Where the statuses came from: "daemons" (GetStatus fan-out) or
  // "prometheus" (with its URL).
  std::string source = "daemons";
  std::string source_url;
  Health verdict = Health::kHealthy;
  // 0 healthy, 1 degraded, 2 failed; 69 when no daemon asked answered (the
  // cluster could not be judged from here at all).
  int ExitCode() const;
  bool NothingAnswered() const;

  // view(i, j): node i's PeerStatus for node j, or null.
  const v1::PeerStatus* View(size_t i, size_t j) const;

  // Whether nodes i and j probe each other in at least one direction.
  bool Measured(size_t i, size_t j) const;

 private:
  friend ClusterPicture BuildCluster(std::vector<FetchResult> fetched);
  std::set<std::pair<std::string, std::string>> measured_;  // (a, b), a < b
  // i * nodes.size() + j -> View(i, j), built once: matrices ask for every
  // (i, j), and a scan of every report per cell is cubic in the nodes.
  std::unordered_map<uint64_t, const v1::PeerStatus*> views_;
};

ClusterPicture BuildCluster(std::vector<FetchResult> fetched);

}  // namespace gloowatch::client
