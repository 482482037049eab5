// Putting events of several hosts in one order: each host's clock relative to
// one reference host's, from the offsets the daemons measure between peers
// (PeerStatus.clock: the peer's clock minus ours, NTP-style from the latency
// probes), and which host runs each rank of a job. A log line stamped by
// host X at t happened at t - offset(X) on the reference clock.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "client/sources/fetch.h"

namespace gloowatch::client {

struct ClockOffsets {
  std::string reference;  // the host whose clock the corrected times are on
  // Host -> its clock minus the reference's, in seconds (the reference's own
  // entry is 0). Hosts with no measured path to the reference are absent.
  std::map<std::string, double> offset_seconds;
};

// The offsets of `hosts` (node names) from `nodes`. The reference is the
// first of `hosts` (by name) that measures or is measured by most of the
// others. A direct measurement is used in whichever direction exists (both:
// their mean, each end's sign turned); else one hop through a third host.
ClockOffsets ClockOffsetsOf(const std::vector<FetchResult>& nodes,
                            const std::vector<std::string>& hosts);

// Rank -> the node whose daemon holds its series, for job `job`; a rank
// reported on two nodes (a restart elsewhere) takes the one heard from last.
std::map<int, std::string> RankNodes(const std::vector<FetchResult>& nodes, const std::string& job);

// "+0.84 s", "-0.02 s"; "+0.00 s" under 5 ms either way.
std::string OffsetText(double seconds);

}  // namespace gloowatch::client
