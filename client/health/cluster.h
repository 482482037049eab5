// Merges every daemon's NodeStatus into one cluster picture and judges nodes
// and links against the thresholds the daemons report.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "client/health/link_state.h"
#include "client/health/localise.h"
#include "client/sources/fetch.h"

namespace gloowatch::client {

// Why the node's host counts as overloaded ("scheduling delay 41.2 ms >= 10.0
// ms"), or empty.
std::string OverloadOf(const v1::NodeStatus& s, const EffectiveThresholds& t);

struct NodeReport {
  std::string name;
  std::string address;
  bool reachable = false;
  std::string error;  // when unreachable
  const v1::NodeStatus* status = nullptr;
  Health health = Health::kHealthy;   // now
  std::vector<std::string> problems;  // now
  std::vector<std::string> history;   // the past, never counted in the verdict
  // The daemon's uptime, when known: the AGE column.
  std::optional<absl::Duration> age;
};

struct LinkReport {
  std::string a, b;                                       // a < b
  const v1::PeerStatus* ab = nullptr;                     // a's view of b
  const v1::PeerStatus* ba = nullptr;                     // b's view of a
  Health health = Health::kHealthy;                       // now
  std::vector<std::string> problems;                      // now
  std::vector<std::pair<Finding, std::string>> findings;  // now, by kind
  std::vector<std::string> history;                       // the past, never counted
  double worst_p50_seconds = 0;
};

// A job signal (client/job judges hangs): reported on the job, never as a
// problem of its hosts or links.
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

struct NodeFilter;

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
  // Judged on now alone: history and job signals never change it.
  Health verdict = Health::kHealthy;
  // Why, worst first: "1 link lossy (h1<->h3 4.8%)", "node c unreachable".
  std::vector<std::string> reasons;
  int ExitCode() const;  // 0 healthy, 1 degraded, 2 failed/unreachable

  // view(i, j): node i's PeerStatus for node j, or null.
  const v1::PeerStatus* View(size_t i, size_t j) const;

  // Whether nodes i and j probe each other in at least one direction.
  bool Measured(size_t i, size_t j) const;

 private:
  friend ClusterPicture BuildCluster(std::vector<FetchResult> fetched);
  friend void ApplyNodeFilter(const NodeFilter& filter, ClusterPicture& c);
  void IndexViews();

  std::set<std::pair<std::string, std::string>> measured_;  // (a, b), a < b
  // i * nodes.size() + j -> View(i, j), built once: matrices ask for every
  // (i, j), and a scan of every report per cell is cubic in the nodes.
  std::unordered_map<uint64_t, const v1::PeerStatus*> views_;
};

ClusterPicture BuildCluster(std::vector<FetchResult> fetched);

// Which nodes to show (health --node, --group, -l key=value): a node matches
// when it passes every criterion given. Its group and labels are its own, or
// what its peers' configs say of it when it does not answer.
struct NodeFilter {
  std::set<std::string> names;
  std::string group;
  std::map<std::string, std::string> labels;
  bool empty() const { return names.empty() && group.empty() && labels.empty(); }
};
// Keeps the matching nodes, the links with an end among them, the suspects
// that name one of them or explain one of their links, and their jobs; the
// verdict and its reasons are judged again over what is kept. The suspects
// were found over the whole cluster: a culprit outside the selection that
// explains a selected node's links is kept.
void ApplyNodeFilter(const NodeFilter& filter, ClusterPicture& c);

}  // namespace gloowatch::client
