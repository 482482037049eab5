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
// that every peer probing it sees down is a dead node (confidence near 1), as
// is one whose daemon's port refuses us (nothing listens: the daemon is gone)
// while a peer sees it down; one whose transport still answers its peers
// while they hear its daemon is silent is a stuck daemon, not a network fault;
// one whose daemon answers but whose transport died (a peer's pair to it is
// to the dead process, or none runs) is the node, however few peers have
// noticed yet.
//
// After the bad links, pooled TCP loss: at the default schedule a direction
// carries too few segments for its own loss ratio to count (a direction
// needs 1,000 in its minute), yet a lossy NIC loses on every link of its
// node. Each node, group uplink and link is tested on the segments of all
// its directions together against the rest of the cluster (PooledLoss
// below); the most likely is named, its links set aside, and again.
//
// What is left is named link by link, but not while it may still be the
// start or end of a wider fault: a link bad only because it is down or cut
// for less than kLoneLinkSettleSeconds (the other peers of a failing node
// notice within their next probe; kSpreadCutSettleSeconds while an end has
// another link cut), nor one with an end starved of CPU now
// (an overload starting), nor a link (bad, or lossy when pooled)
// while one of its ends loses on another of its links too (a node's or an
// uplink's loss crosses the thresholds link by link as it starts and
// clears, and a probe it drops takes a link down for a while).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gloowatch::client {

enum class SuspectKind { kNode, kGroupUplink, kLink, kOverloadedHost, kDaemon, kPath };
// node, group_uplink, link, overloaded_host, daemon, path
const char* SuspectKindName(SuspectKind k);

struct LocaliseNode {
  std::string name;
  std::string group;  // empty: no group
  // Whether its daemon answered us (or Prometheus scrapes it now).
  bool reachable = true;
  // Non-empty when the host itself is too busy (scheduling delay, steal, run
  // queue): what says so. Its bad links are then blamed on the host.
  std::string overload;
  // Its main threads waited for a CPU at least the threshold over the last
  // seconds (HostLoad.recent_scheduling_delay_seconds): an overload may be
  // starting, which its peers feel (a slow transfer) before its mean over
  // every thread says so. Few runs, so no evidence against the host: its
  // links alone are not named meanwhile.
  bool starved_now = false;
  // Unreachable because its daemon's port refused us: the host answers, no
  // process listens (the daemon is dead or restarting). A path problem
  // between us and it would time out instead.
  bool refused = false;
};

// TCP data segments sent over a window and, of them, lost (retransmitted,
// not reported spurious by the receiver).
struct LossCount {
  uint64_t lost = 0;
  uint64_t sent = 0;
};

// One probe flow of a direction (PeerStatus.flows): its segments over the
// loss window and its probes that timed out within the same window.
struct FlowObservation {
  uint32_t flow = 0;
  LossCount loss;
  uint64_t failures_in_window = 0;
  // Of the window, while the direction's loss lasted (from its earliest
  // lost segment on any flow to its latest), when it lost any; and what the
  // flow carried after its own last loss, when it lost any (FlowFigures).
  std::optional<LossCount> while_losing = std::nullopt;
  std::optional<uint64_t> sent_since_last_loss = std::nullopt;
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
  // What `from` sent `to` over the loss window and lost, when the source
  // knows (GetStatus does; Prometheus has no segment count): pooled evidence.
  std::optional<LossCount> loss = std::nullopt;
  // The same over the recent part of the window (RecentLoss in
  // link_state.h: back to the last loss when that is older): a pooled loss
  // its recent segments rule out is past.
  std::optional<LossCount> recent_loss = std::nullopt;
  // The same over the window's last 10 s (TcpFigures.latest_*): what a loss
  // starting shows first, while the clean transfers from before it still
  // fill the recent part.
  std::optional<LossCount> latest_loss = std::nullopt;
  // False for a direction that is no evidence either way for the bad-link
  // judgement (a loss ratio above the threshold over too few segments): it
  // counts in the pooled loss only.
  bool judged = true;
  // Its probe flows (probe.flows), when the source knows them: some lossy
  // and some clean is a path-dependent fault (path_faults.h).
  std::vector<FlowObservation> flows = {};
  // Bad because `to`'s transport process is gone or was restarted after the
  // pair came up (its daemon says so): `to`'s fault, not the link's.
  bool peer_restarted = false;
  // Bad for its loss ratio alone (nothing else that blames: not down, slow
  // or below link speed): what a loss clearing leaves (Clearing in
  // localise.cc).
  bool loss_only = false;
  // How long `from` has seen `to` down or cut (nothing gets through), when
  // that is why the direction is bad. A link is named on such evidence once
  // it is kLoneLinkSettle old: at the start of a node's fault its first
  // peers to notice see only their own link.
  std::optional<double> cut_seconds = std::nullopt;
};

// What a training job's own connections (its Gloo pairs, read by the
// daemons: TrainingJobStatus.sockets) sent from node `from` to node `to` over
// their loss window (15 s) and lost: pooled evidence like the probes', and
// recent (the window is shorter than the probes' recent half). Never the
// connections into a rank that does not read (a stopped process is a job
// signal, not the network's fault): the caller leaves those out.
struct JobLinkLoss {
  uint32_t from = 0, to = 0;  // indices into LocaliseInput::nodes
  LossCount loss;
};

struct LocaliseInput {
  std::vector<LocaliseNode> nodes;
  std::vector<LinkObservation> observations;  // measured directions only, any order
  std::vector<JobLinkLoss> job_links;         // per direction, any order
  // The loss ratio above which pooled loss is a fault (the directions'
  // threshold, 1%).
  double loss_ratio = 0.01;
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
  // Named on pooled TCP loss: the loss ratio of its links' segments.
  std::optional<double> pooled_loss_ratio;
  // Of those segments, the training jobs' own connections' (JobLinkLoss).
  std::optional<LossCount> job_loss;
};

// A daemon whose transport has not heard from it for longer is stuck: the
// daemon ticks its transport every second (PeerDaemon in the status).
inline constexpr double kDaemonSilentSeconds = 3;

// A link bad only because it is down or cut is named once one of its
// directions has been so for this long: the other peers of a node whose
// fault starts notice within their next probe (every 0.5-5 s); a link fault
// stays a link.
inline constexpr double kLoneLinkSettleSeconds = 2;

// The same for a link while one of its ends has another link down or cut:
// a node's fault starting, until its other peers have put a command on their
// pairs (the keepalive every half a Gloo timeout, 2.5 s by default, or the
// next latency probe) and seen it go unanswered (the watch, about 2 s on).
// Two links of one node cut on their own stay links, named this late.
inline constexpr double kSpreadCutSettleSeconds = 8;

// At most this many suspects are returned (the worst first).
inline constexpr size_t kMaxSuspects = 100;

// Pooled loss (docs/client.md, "Suspects"): the segments of a hypothesis'
// links are tested against a healthy network's loss rate, the rest of the
// cluster's (at least kBaseLossRatio): named when their loss ratio is at
// least the threshold, the likelihood-ratio statistic (LossEvidence) is at
// least kPooledEvidence, they carry kPooledMinSegments and kPooledMinLost,
// the loss is spread (without its worst link a node or uplink still loses
// at half the threshold), and the recent segments do not rule it out.
inline constexpr double kBaseLossRatio = 0.001;
inline constexpr double kPooledEvidence = 30;
inline constexpr uint64_t kPooledMinSegments = 500;
inline constexpr uint64_t kPooledMinLost = 5;

// The likelihood-ratio statistic of `c` against a loss rate `base`:
// 2 [k ln(p/base) + (n-k) ln((1-p)/(1-base))], p = k/n; 0 when p <= base.
double LossEvidence(const LossCount& c, double base);

// Whether `c` rules out a loss rate of `ratio` or more: at most c.lost of
// c.sent lost is less likely than 1% at that rate (Poisson).
bool LossRuledOut(const LossCount& c, double ratio);

// Ranked suspects, most damaging explanation first; empty when no measured
// direction is bad.
std::vector<Suspect> Localise(const LocaliseInput& input);

}  // namespace gloowatch::client
