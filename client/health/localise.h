// Localisation: which node, group (rack) uplink, link or overloaded host
// explains the bad links of a cluster. A pure function over the link matrix
// (no proto, no I/O), so it is tested on synthetic matrices and benchmarked.
//
// Method (after Pingmesh / NetNORAD: intersect the bad paths): every
// hypothesis predicts a set of links to be bad. A node predicts all its
// links, a group's uplink all links leaving the group, a link itself. The
// hypothesis that explains the most bad links not yet explained, minus the
// measured links it predicts bad that are fine, is taken first; repeat until
// no node or group explains at least kMinExplained links more than it
// contradicts. What is left is blamed on single links. Unmeasured pairs (a
// sampled mesh, an unreachable daemon) are evidence neither way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gloowatch::client {

enum class SuspectKind { kNode, kGroupUplink, kLink, kOverloadedHost };
const char* SuspectKindName(SuspectKind k);  // node, group_uplink, link, overloaded_host

struct LocaliseNode {
  std::string name;
  std::string group;  // empty: no group
  bool reachable = true;
  // Non-empty when the host itself is too busy (scheduling delay, steal, run
  // queue): what says so. Its bad links are then blamed on the host.
  std::string overload;
};

// One direction of one link, as node `from` measured node `to`.
struct LinkObservation {
  uint32_t from = 0, to = 0;  // indices into LocaliseInput::nodes
  bool bad = false;
  std::string evidence;  // why it is bad, e.g. "a->b: TCP loss 5.1% > 1.0%"
};

struct LocaliseInput {
  std::vector<LocaliseNode> nodes;
  std::vector<LinkObservation> observations;  // measured directions only, any order
};

struct Suspect {
  SuspectKind kind = SuspectKind::kLink;
  std::string name;                 // node, "group" or "a <-> b"
  std::vector<std::string> groups;  // group uplink: the group(s) it may be
  std::vector<std::string> evidence;
  // The bad links (a < b by index order of the input) it explains.
  std::vector<std::pair<std::string, std::string>> links;
  size_t bad_links = 0;   // measured links it predicts bad that are bad
  size_t fine_links = 0;  // measured links it predicts bad that are fine
  double confidence = 0;  // 0..1, see docs/client.md
};

// At most this many suspects are returned (the worst first).
inline constexpr size_t kMaxSuspects = 100;

// Ranked suspects, most damaging explanation first; empty when no measured
// direction is bad.
std::vector<Suspect> Localise(const LocaliseInput& input);

}  // namespace gloowatch::client
