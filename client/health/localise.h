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
//
// Before that, the control plane: a node whose daemon does not answer and
// that every peer probing it sees down is a dead node (confidence near 1);
// one whose transport still answers its peers while they hear its daemon is
// silent is a stuck daemon, not a network fault.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gloowatch::client {

enum class SuspectKind { kNode, kGroupUplink, kLink, kOverloadedHost, kDaemon };
// node, group_uplink, link, overloaded_host, daemon
const char* SuspectKindName(SuspectKind k);

struct LocaliseNode {
  std::string name;
  std::string group;  // empty: no group
  // Whether its daemon answered us (or Prometheus scrapes it now).
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
  bool down = false;     // `from` sees `to` down
  // How long `to`'s daemon had been silent when its transport last answered
  // `from` (PeerDaemon.silent_seconds), when `from` sees it up and knows.
  std::optional<double> daemon_silent_seconds;
};

struct LocaliseInput {
  std::vector<LocaliseNode> nodes;
  std::vector<LinkObservation> observations;  // measured directions only, any order
};

struct Suspect {
  SuspectKind kind = SuspectKind::kLink;
  std::string name;                 // node, "group" or "a <-> b"
  std::vector<std::string> groups;  // group uplink: the group(s) it may be
  // All of it: the counts that make the case, then evidence_self, then
  // evidence_peers.
  std::vector<std::string> evidence;
  // What the suspect says of itself: its daemon's own views, its host's
  // load, whether its daemon answers us.
  std::vector<std::string> evidence_self;
  // What its peers say of it (for a link or an uplink: what its ends say).
  std::vector<std::string> evidence_peers;
  // The bad links (a < b by index order of the input) it explains.
  std::vector<std::pair<std::string, std::string>> links;
  size_t bad_links = 0;   // measured links it predicts bad that are bad
  size_t fine_links = 0;  // measured links it predicts bad that are fine
  double confidence = 0;  // 0..1, see docs/client.md
};

// A daemon whose transport has not heard from it for longer is stuck: the
// daemon ticks its transport every second (PeerDaemon in the status).
inline constexpr double kDaemonSilentSeconds = 3;

// At most this many suspects are returned (the worst first).
inline constexpr size_t kMaxSuspects = 100;

// Ranked suspects, most damaging explanation first; empty when no measured
// direction is bad.
std::vector<Suspect> Localise(const LocaliseInput& input);

}  // namespace gloowatch::client
