// `gloowatch job NAME`: where the ranks of one training job stand in their
// collectives, from the daemons' NodeStatus.training (reported by
// gloowatch_report.instrument). Names the ranks waiting in a collective and
// the ranks that keep them waiting: silent ones (stopped, hung, gone) and
// ones that have not entered it, and the links between the job's nodes that
// are down (the daemons' own probes), the likely reason of a hang.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "client/job/job_links.h"
#include "client/sources/fetch.h"
#include "nlohmann/json.hpp"

namespace gloowatch::client {

enum class RankState {
  kRunning,     // between calls, or inside one for less than kWaitingAfter
  kWaiting,     // inside a call for kWaitingAfter or more
  kNotEntered,  // heard from, but behind the call others wait in
  kSilent,      // nothing heard for kSilentAfter or more
  kGone,        // silent, and its daemon sees its process no more
  kUnknown,     // reports steps only (not instrumented)
};

struct RankView {
  std::string node;  // the daemon holding the series
  int rank = 0;
  RankState state = RankState::kUnknown;
  std::string op;  // current call, empty between calls
  uint64_t seq = 0;
  std::string group;
  uint64_t bytes = 0;
  double inside_seconds = 0;
  double silent_seconds = 0;  // since the rank's last report
  std::string process;        // running, stopped, gone; "" unknown (TrainingJobStatus.process)
  // On its daemon's clock: its last report, and when it entered its current
  // call (InfinitePast between calls).
  absl::Time last_heard = absl::InfinitePast();
  absl::Time entered = absl::InfinitePast();
};

// One moment of a rank, on one clock for every host: its daemon's clock less
// the offset gloowatch measured from the reference host's
// (client/sources/clock_offsets.h), so the ranks' moments on several hosts
// compare: who stopped first, who entered the call last.
struct JobEvent {
  absl::Time time;
  int rank = 0;
  std::string node;
  std::string what;        // "entered all_reduce #41", "last heard (inside all_reduce #39)"
  bool corrected = false;  // false: its host's offset is unknown (its own clock)
};

// A link between two nodes that hold ranks of the job, as `node`'s daemon
// sees its probes to `peer`, when it is not up.
struct JobLink {
  std::string node, peer;
  std::string state;   // "down" (a failure came last) or "connecting" (none yet)
  std::string reason;  // of the last failure: refused, timeout, ...; may be empty
  std::string message;
  std::optional<double> last_failure_seconds;  // ago, as of the daemon's now
  std::vector<int> node_ranks, peer_ranks;     // the job's ranks on each side
};

struct JobView {
  std::string job;
  std::vector<RankView> ranks;                  // by rank
  std::vector<std::string> unreachable;         // daemons that did not answer: "name: error"
  std::vector<JobLink> links;                   // not up, between the job's nodes; by node, peer
  int links_checked = 0;                        // directed links between them the daemons reported
  JobLinks job_links;                           // the ranks' own connections
  std::vector<JobEvent> events;                 // in time order, on the reference clock
  std::string clock_reference;                  // whose clock the events are on
  std::map<std::string, double> clock_offsets;  // node -> its clock minus the reference's
  // The call the waiting ranks are in (the highest seq among them).
  std::string waiting_op, waiting_group;
  uint64_t waiting_seq = 0;
  double waiting_seconds = 0;  // the longest wait
  bool hung() const { return waiting_seq != 0; }
  // 2 hung, 1 silent ranks, links down, job links that drop or are not
  // read, or unreachable daemons, 0 running
  int ExitCode() const;
};

inline constexpr absl::Duration kWaitingAfter = absl::Seconds(5);
inline constexpr absl::Duration kSilentAfter = absl::Seconds(3);

// NOT_FOUND when no daemon that answered reports the job.
absl::StatusOr<JobView> BuildJobView(const std::vector<FetchResult>& fetched,
                                     const std::string& job);
std::string RenderJobText(const JobView& view);
nlohmann::json JobToJson(const JobView& view);
const char* RankStateName(RankState state);

}  // namespace gloowatch::client
