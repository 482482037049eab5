// The state model (docs/design.md, "Now, history and jobs"): what one
// direction of a link (node -> peer, as the node's daemon reports it) says
// of the present, and what it says of the past.
//  - now: the peer's state and the figures of a short recent window (TCP
//    loss over 60 s, latency p50 over the last minute, the latest bandwidth
//    transfer) and a link that keeps dropping. Verdicts and suspects judge
//    this alone.
//  - history: failures and recoveries within the failure window, with their
//    age ("recovered 3m ago after 5 failures, last refused"). Shown beside
//    the verdict; never blames.
// Job signals (communication share, hangs) are judged on the job
// (client/job), not as a problem of the hosts' links.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "client/health/localise.h"
#include "proto/gloowatch.pb.h"

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
// NodeStatus.thresholds with defaults for unset (zero) fields.
EffectiveThresholds ThresholdsOf(const v1::NodeStatus& s);

// A link that went down this often within the failure window, the last time
// within kFlappingRecent, is flapping: a present fault although it is up
// right now. One partition or one restart is a single drop.
inline constexpr uint64_t kFlappingDrops = 3;
inline constexpr absl::Duration kFlappingRecent = absl::Minutes(10);

// What kind of present fault a direction shows, for the verdict's reasons
// ("2 links lossy (h1<->h3 4.8%, ...)").
enum class Finding {
  kDown,
  kFlapping,
  kLossy,
  kSlow,
  kLowBandwidth,
  kClockOffset,
  kConnecting,
  kUnanswered,
};
// "down", "flapping", "lossy", "slow", "below link speed", "clock offset",
// "connecting", "not answering"
const char* FindingWord(Finding f);

// One direction judged.
struct DirectionState {
  Health health = Health::kHealthy;  // now
  // Now, each phrased "A->B: ..." for the link's problem list.
  std::vector<std::string> problems;
  // The same, as kinds with a short figure ("4.8%", "3.1 ms", "" for down).
  std::vector<std::pair<Finding, std::string>> findings;
  // Why the direction counts as bad for localisation ("A->B: down (last:
  // refused)"), or empty: a clock offset is no network fault, "connecting"
  // no evidence either way.
  std::string bad;
  // A loss above the threshold over too few segments: no evidence that the
  // direction is bad, nor that it is fine.
  bool inconclusive = false;
  // Nothing gets through now although the state still says up: what the
  // command pair sent is unacknowledged (PeerStatus.unacknowledged), or the
  // pair is to a transport process that is gone (DirectionContext). Down,
  // for localisation.
  bool cut = false;
  // Bad because the peer's transport process is gone or was restarted after
  // this pair came up: the peer node's fault, not the link's.
  bool peer_restarted = false;
  // Down since before the peer was shown to accept pairs again (its
  // transport started, or a session of either end recovered), with no
  // failed attempt since: the reconnect backoff runs. Evidence neither way.
  bool reconnecting = false;
  // Down or cut (nothing gets through) for this long: since the drop
  // (PeerStatus.down_since, else the last failure) or since the data went
  // unacknowledged. Unset when the direction is not down or cut, or the
  // cause is the peer's restart.
  std::optional<absl::Duration> cut_for;
  // The past, "A->B: recovered 3m ago after 5 failures (last: refused)", or
  // empty.
  std::string history;
};

// What a direction is judged with beyond its own view: what the peer says of
// itself.
struct DirectionContext {
  // When the peer's running transport process started
  // (NodeStatus.transport.started_at, its clock). A pair up since before
  // then is to the process that died: broken now, though the prober has not
  // sent over it since.
  std::optional<absl::Time> peer_transport_started;
  // The peer's daemon answered and says no transport process runs now (it
  // died; the daemon restarts it): every pair to the peer is broken.
  bool peer_transport_stopped = false;
  // When a session of either end last came up again after a failure (on
  // this node's clock): whatever broke it was gone by then. A direction
  // down since before, with no failed attempt since, has not retried yet.
  std::optional<absl::Time> recovered_since;
  // The later of the two ends' HostLoad.starved_until (on this node's
  // clock): a transfer measured by then was slowed by a host short of CPU.
  std::optional<absl::Time> starved_until;
};

// A pair up since at least this long before the peer's transport started
// is to the old process (a margin for the two clocks); a direction whose
// last failure is this long before the peer accepted pairs again is
// reconnecting.
inline constexpr absl::Duration kStalePairMargin = absl::Seconds(1);

// A pair refused or reset this soon after the peer's transport started was
// refused by its start-up (the daemon's gRPC and the transport's listeners
// come up one after the other; about a second here): reconnecting, not a
// fault of the link.
inline constexpr absl::Duration kPeerStartup = absl::Seconds(5);

// `now`: the reporting daemon's clock (NodeStatus.now).
DirectionState JudgeDirection(const std::string& from, const std::string& to,
                              const v1::PeerStatus& p, const EffectiveThresholds& t, absl::Time now,
                              const DirectionContext& context = {});

// What a direction sent and lost lately: its window's recent part
// (TcpFigures.recent_*), reaching back to its last loss when that is older
// (sent_since_last_loss, all clean). Absent before the first TCP report.
std::optional<LossCount> RecentLoss(const v1::TcpFigures& tcp);

// A loss ratio over the window that the recent segments (RecentLoss) rule
// out: the fault is past.
bool LossPast(const v1::PeerStatus& p, const EffectiveThresholds& t);

// Whether the peer's daemon is silent while its transport answers, as `p`
// (another node's view of it) says; the silence in seconds, or 0.
double PeerDaemonSilence(const v1::PeerStatus& p);

// "3m", "2h5m", "41s": a compact age for tables.
std::string AgeText(absl::Duration d);

// `h` becomes `to` when `to` is worse.
inline void Worsen(Health& h, Health to) { h = std::max(h, to); }

// "up", "down", "connecting", "unknown".
const char* PeerStateWord(v1::PeerState s);

}  // namespace gloowatch::client
