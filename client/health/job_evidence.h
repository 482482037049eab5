// The training jobs' own connections as evidence for the suspects: what each
// direction between two nodes carried of the jobs' Gloo pairs and lost
// (TrainingJobStatus.sockets, read by the daemons), for Localise's pooled
// loss. A job's thousands of segments a second name a lossy NIC or link
// that gloowatch's own light probes would take minutes to see, or that only
// the job's paths cross (docs/client.md, "Suspects").
#pragma once

#include <string>
#include <vector>

#include "client/health/localise.h"
#include "client/sources/fetch.h"

namespace gloowatch::client {

// A socket read longer ago than this (its daemon reads every 5 s) is a
// connection that closed: no evidence of now.
inline constexpr double kJobSocketStaleSeconds = 20;

// Per direction between two of `nodes` (sorted names; indices into them),
// summed over every job's Gloo pair connections that the daemons in
// `statuses` read: segments sent and lost (retransmitted, not DSACKed) in
// the sockets' loss window. Left out, because they are job signals and no
// network's fault: connections of a rank whose process is stopped or gone,
// and connections into a rank that does not read (its end holds unread
// data for kJobUnreadSeconds, or advertises a zero window).
std::vector<JobLinkLoss> JobLinkLossOf(const std::vector<const v1::NodeStatus*>& statuses,
                                       const std::vector<std::string>& nodes);

inline constexpr double kJobUnreadSeconds = 2;

}  // namespace gloowatch::client
