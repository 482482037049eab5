#include "daemon/peers/topology.h"

#include <algorithm>
#include <tuple>
#include <utility>

namespace gloowatch {
namespace {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t CeilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

}  // namespace

absl::string_view SelectionName(Selection selection) {
  switch (selection) {
    case Selection::kMesh:
      return "mesh";
    case Selection::kRing:
      return "ring";
    case Selection::kGroup:
      return "group";
    case Selection::kCrossGroup:
      return "cross_group";
    case Selection::kSample:
      return "sample";
  }
  return "mesh";
}

uint64_t SampleEpoch(absl::Time now, absl::Duration rotation) {
  if (now <= absl::UnixEpoch() || rotation <= absl::ZeroDuration()) return 0;
  absl::Duration remainder;
  return static_cast<uint64_t>(absl::IDivDuration(now - absl::UnixEpoch(), rotation, &remainder));
}

uint64_t StableHash(absl::string_view text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

// --- Permutation -------------------------------------------------------------

Permutation::Permutation(uint64_t n, uint64_t key) : n_(n), key_(SplitMix64(key)) {
  int bits = 2;
  while (bits < 62 && (uint64_t{1} << bits) < n) bits += 2;  // even, so halves are equal
  half_bits_ = bits / 2;
  half_mask_ = (uint64_t{1} << half_bits_) - 1;
}

uint64_t Permutation::Round(uint64_t x) const {
  uint64_t left = x >> half_bits_;
  uint64_t right = x & half_mask_;
  for (uint64_t round = 0; round < 4; ++round) {
    const uint64_t f = SplitMix64(right ^ key_ ^ (round * 0x632be59bd9b4e019ull)) & half_mask_;
    std::tie(left, right) = std::make_pair(right, left ^ f);
  }
  return (left << half_bits_) | right;
}

uint64_t Permutation::operator()(uint64_t x) const {
  if (n_ <= 1) return x;
  // Cycle walking: the Feistel network permutes [0, 4^half_bits), at most
  // 4n; stepping along x's cycle until it is back below n stays a bijection
  // on [0, n) and takes fewer than 4 steps on average.
  uint64_t y = Round(x);
  while (y >= n_) y = Round(y);
  return y;
}

// --- Topology ----------------------------------------------------------------

Topology::Topology(std::vector<TopologyNode> nodes, const TopologyConfig& config)
    : config_(config), nodes_(std::move(nodes)) {
  std::sort(nodes_.begin(), nodes_.end(), [](const TopologyNode& a, const TopologyNode& b) {
    return std::tie(a.group, a.name) < std::tie(b.group, b.name);
  });
  group_of_.resize(nodes_.size());
  seed_.resize(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (groups_.empty() || groups_.back().name != nodes_[i].group) {
      groups_.push_back({nodes_[i].group, i, 0});
    }
    ++groups_.back().size;
    group_of_[i] = groups_.size() - 1;
    seed_[i] = StableHash(nodes_[i].name);
  }
  by_name_.resize(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) by_name_[i] = i;
  std::sort(by_name_.begin(), by_name_.end(),
            [this](size_t a, size_t b) { return nodes_[a].name < nodes_[b].name; });
  sampled_ = nodes_.size() > config_.full_mesh_max_nodes;
}

Topology Topology::FromConfig(const Config& config) {
  std::vector<TopologyNode> nodes;
  nodes.reserve(config.peers.size() + 1);
  nodes.push_back({config.node, config.group});
  for (const PeerConfig& peer : config.peers) nodes.push_back({peer.name, peer.group});
  return Topology(std::move(nodes), config.topology);
}

size_t Topology::IndexOf(absl::string_view name) const {
  auto it = std::lower_bound(by_name_.begin(), by_name_.end(), name,
                             [this](size_t i, absl::string_view n) { return nodes_[i].name < n; });
  return it != by_name_.end() && nodes_[*it].name == name ? *it : nodes_.size();
}

uint64_t Topology::SampleCycle() const {
  const uint64_t others = nodes_.size() > 1 ? nodes_.size() - 1 : 1;
  return CeilDiv(others, std::min<uint64_t>(config_.sample_peers, others));
}

size_t Topology::CrossGroupRows(size_t g) const {
  return CeilDiv(groups_.size() - 1, groups_[g].size);
}

uint64_t Topology::CrossGroupCycle() const {
  uint64_t cycle = 1;
  for (size_t g = 0; g < groups_.size(); ++g) {
    cycle = std::max<uint64_t>(cycle, CeilDiv(CrossGroupRows(g), config_.cross_group_peers_max));
  }
  return cycle;
}

void Topology::GroupTargets(size_t self, std::vector<ProbeTarget>& out) const {
  const Group& group = groups_[group_of_[self]];
  const size_t m = group.size;
  const size_t j = self - group.begin;
  const bool all = m - 1 <= config_.group_peers_max;
  // The nearest members on the group's own circle, so the part stays the same
  // from epoch to epoch (continuous figures inside a rack).
  const size_t after = all ? m - 1 : CeilDiv(config_.group_peers_max, 2);
  const size_t before = all ? 0 : config_.group_peers_max / 2;
  // Written through a pointer: push_back stores the vector's end on every
  // element, which made this the slowest part of a simulation.
  const size_t at = out.size();
  out.resize(at + after + before);
  ProbeTarget* next = out.data() + at;
  size_t up = j, down = j;
  for (size_t d = 1; d <= after; ++d) {
    up = up + 1 == m ? 0 : up + 1;
    *next++ = {group.begin + up, Selection::kGroup};
  }
  for (size_t d = 1; d <= before; ++d) {
    down = down == 0 ? m - 1 : down - 1;
    *next++ = {group.begin + down, Selection::kGroup};
  }
}

void Topology::CrossGroupTargets(size_t self, uint64_t epoch, std::vector<ProbeTarget>& out) const {
  const size_t group_count = groups_.size();
  if (group_count < 2) return;
  const size_t g = group_of_[self];
  const Group& own = groups_[g];
  const size_t m = own.size;
  const size_t others = group_count - 1;
  // The other groups, listed from the next one on (t = 0 .. others-1), are
  // dealt out in rows of m: group t goes to member (t + epoch) mod m, so the
  // dealer rotates through the members and a dead member costs one epoch.
  const size_t rows = CrossGroupRows(g);
  const size_t column = (self - own.begin + m - epoch % m) % m;
  const size_t cap = config_.cross_group_peers_max;
  const size_t taken = std::min(rows, cap);
  // With more rows than the cap, every member of the group takes the same
  // window of rows, sliding by `cap` each epoch.
  const size_t first_row = rows <= cap ? 0 : (epoch % rows) * cap % rows;
  for (size_t u = 0; u < taken; ++u) {
    const size_t t = ((first_row + u) % rows) * m + column;
    if (t >= others) continue;
    const Group& target = groups_[(g + 1 + t) % group_count];
    // Spread over the target's members: source groups differ, and so do epochs.
    out.push_back({target.begin + (g + epoch) % target.size, Selection::kCrossGroup});
  }
}

template <typename Add>
void Topology::ForEachSampled(size_t self, uint64_t epoch, Add add) const {
  const uint64_t n = nodes_.size();
  if (n < 2) return;
  const uint64_t others = n - 1;
  const uint64_t count = std::min<uint64_t>(config_.sample_peers, others);
  const uint64_t cycle = SampleCycle();
  const Permutation permutation(others, seed_[self] ^ SplitMix64(epoch / cycle));
  const uint64_t first = (epoch % cycle) * count;
  for (uint64_t u = 0; u < count; ++u) {
    // The last slice of a cycle wraps to its start, keeping the size constant.
    const uint64_t offset = permutation((first + u) % others);
    add(static_cast<size_t>((self + 1 + offset) % n));
  }
}

std::vector<size_t> Topology::SampleOf(size_t self, uint64_t epoch) const {
  std::vector<size_t> sample;
  ForEachSampled(self, epoch, [&](size_t i) { sample.push_back(i); });
  return sample;
}

std::vector<ProbeTarget> Topology::Select(size_t self, uint64_t epoch) const {
  std::vector<ProbeTarget> out;
  Select(self, epoch, &out);
  return out;
}

bool Topology::InGroupPart(size_t self, size_t i) const {
  if (i == self || group_of_[i] != group_of_[self]) return false;
  const Group& group = groups_[group_of_[self]];
  const size_t m = group.size;
  if (m - 1 <= config_.group_peers_max) return true;
  const size_t forward = (i - group.begin + m - (self - group.begin)) % m;  // 1 .. m-1
  return forward <= CeilDiv(config_.group_peers_max, 2) ||
         m - forward <= config_.group_peers_max / 2;
}

void Topology::Select(size_t self, uint64_t epoch, std::vector<ProbeTarget>* targets) const {
  std::vector<ProbeTarget>& out = *targets;
  out.clear();
  const size_t n = nodes_.size();
  if (self >= n || n < 2) return;
  if (!sampled_) {
    out.reserve(n - 1);
    for (size_t i = 0; i < n; ++i) {
      if (i != self) out.push_back({i, Selection::kMesh});
    }
    return;
  }
  // Each part is free of repeats by construction (the group part lists
  // distinct members, the cross-group part distinct groups, the sample a
  // slice of a permutation), so a peer is dropped from a later part when an
  // earlier one has it. No sort: simulations call this millions of times.
  const size_t next = (self + 1) % n;
  const size_t previous = (self + n - 1) % n;
  out.push_back({next, Selection::kRing});
  if (previous != next) out.push_back({previous, Selection::kRing});
  const auto is_ring = [&](const ProbeTarget& t) { return t.index == next || t.index == previous; };
  const size_t group_begin = out.size();
  GroupTargets(self, out);
  out.erase(std::remove_if(out.begin() + group_begin, out.end(), is_ring), out.end());
  const size_t cross_begin = out.size();
  CrossGroupTargets(self, epoch, out);
  out.erase(std::remove_if(out.begin() + cross_begin, out.end(), is_ring), out.end());
  const size_t cross_end = out.size();
  ForEachSampled(self, epoch, [&](size_t i) {
    if (i == next || i == previous || InGroupPart(self, i)) return;
    for (size_t c = cross_begin; c < cross_end; ++c) {
      if (out[c].index == i) return;
    }
    out.push_back({i, Selection::kSample});
  });
}

}  // namespace gloowatch
