// Which peers this node probes (docs/topology.md). Pure: the same nodes,
// config and epoch give the same answer on every node, so the cluster agrees
// on who probes whom without talking about it.
//
// Up to `full_mesh_max_nodes` nodes every node probes every other ("mesh").
// Above, nodes are put on a ring sorted by (group, name); each group is a
// contiguous arc. A node probes:
//   ring         its two ring neighbours;
//   group        the other members of its group, at most group_peers_max
//                (the nearest ones on the group's own circle);
//   cross_group  one member of each of the other groups assigned to it: the
//                other groups are dealt round-robin over the members of its
//                group, so every pair of groups is probed directly in every
//                epoch (while no member gets more than cross_group_peers_max);
//   sample       sample_peers nodes, walking a seeded pseudo-random
//                permutation of the other nodes, a new one per cycle, so every
//                other node is sampled within ceil((N-1)/sample_peers) epochs
//                of a cycle start.
// A peer picked for several reasons is listed once, under the first of
// ring, group, cross_group, sample.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/config.h"

namespace gloowatch {

enum class Selection { kMesh, kRing, kGroup, kCrossGroup, kSample };

// "mesh", "ring", "group", "cross_group", "sample" (PeerStatus.selection).
absl::string_view SelectionName(Selection selection);

// The rotation epoch at wall-clock time `now`: floor(unix time / rotation).
// Every node with a roughly right clock computes the same one.
uint64_t SampleEpoch(absl::Time now, absl::Duration rotation);

struct TopologyNode {
  std::string name;
  std::string group;  // empty is a group of its own ("no group")
};

struct ProbeTarget {
  size_t index;  // ring index of the peer (Topology::node)
  Selection selection;
};

class Topology {
 public:
  // `nodes`: every node of the cluster, this one included; names unique.
  Topology(std::vector<TopologyNode> nodes, const TopologyConfig& config);
  // This node (config.node, config.group) and its peers.
  static Topology FromConfig(const Config& config);

  size_t size() const { return nodes_.size(); }
  bool sampled() const { return sampled_; }
  // Ring order: sorted by (group, name).
  const TopologyNode& node(size_t index) const { return nodes_[index]; }
  // Ring index of `name`, or size() when unknown. O(log N).
  size_t IndexOf(absl::string_view name) const;
  size_t group_count() const { return groups_.size(); }
  // Group (index into the sorted groups) of the node at ring index `index`.
  size_t GroupOf(size_t index) const { return group_of_[index]; }

  // The peers node `self` probes in `epoch`, each once: ring, then group,
  // cross_group and sample entries. O(k) for k targets (plus up to
  // sample_peers * cross_group_peers_max comparisons); k is bounded
  // independent of size() when sampled.
  std::vector<ProbeTarget> Select(size_t self, uint64_t epoch) const;
  // The same into `out` (cleared first), reusing its memory: for simulations
  // that call it millions of times.
  void Select(size_t self, uint64_t epoch, std::vector<ProbeTarget>* out) const;

  // Epochs in one sample cycle: ceil((N-1) / sample_peers). Within one
  // cycle (epochs c*C .. c*C+C-1) each node samples every other node once.
  uint64_t SampleCycle() const;
  // Epochs after which every pair of groups has been probed directly at
  // least once (1 unless a node has more than cross_group_peers_max other
  // groups to cover).
  uint64_t CrossGroupCycle() const;
  // The sample alone of `self` in `epoch` (ring indexes, unsorted), before
  // merging with the other parts.
  std::vector<size_t> SampleOf(size_t self, uint64_t epoch) const;

 private:
  struct Group {
    std::string name;
    size_t begin = 0;  // first ring index
    size_t size = 0;
  };
  void CrossGroupTargets(size_t self, uint64_t epoch, std::vector<ProbeTarget>& out) const;
  void GroupTargets(size_t self, std::vector<ProbeTarget>& out) const;
  template <typename Add>
  void ForEachSampled(size_t self, uint64_t epoch, Add add) const;
  // Whether `i` is in the group part of `self`.
  bool InGroupPart(size_t self, size_t i) const;
  // Rows of the round-robin deal of the other groups over group g's members.
  size_t CrossGroupRows(size_t g) const;

  TopologyConfig config_;
  std::vector<TopologyNode> nodes_;
  std::vector<Group> groups_;
  std::vector<size_t> group_of_;
  std::vector<size_t> by_name_;  // ring indexes sorted by name
  std::vector<uint64_t> seed_;   // per node, from a stable hash of its name
  bool sampled_ = false;
};

// Stable across processes and builds (unlike absl::Hash): FNV-1a.
uint64_t StableHash(absl::string_view text);

// A pseudo-random permutation of [0, n) chosen by `key`: a small Feistel
// network with cycle walking, so any element is found in O(1) expected time
// without building the permutation.
class Permutation {
 public:
  Permutation(uint64_t n, uint64_t key);
  uint64_t operator()(uint64_t x) const;
  uint64_t size() const { return n_; }

 private:
  uint64_t Round(uint64_t x) const;
  uint64_t n_;
  uint64_t key_;
  int half_bits_ = 1;
  uint64_t half_mask_ = 1;
};

}  // namespace gloowatch
