// Path-dependent faults: some probe flows of a link lossy or failing and
// others clean. Each flow (probe.flows) is its own TCP connection on its own
// ports, and ECMP hashes each connection onto one path; so when the flows of
// one direction disagree, one of the paths they take is bad (a bad ECMP
// member, or a link of one path), not a node, an uplink or the link as a
// whole, which would make all of them lossy alike.
//
// The unit is the pair of groups (racks) a direction joins, or its pair of
// nodes when it stays inside a group or the nodes have none. A unit is a
// path fault when, over its directions' flows:
//  - some flows are lossy (at least kPathMinSegments, kPathMinLost losses,
//    at least the loss threshold, LossEvidence against kBaseLossRatio at
//    least kPathEvidence, and a loss that goes on: what it carried after
//    its last loss does not rule out half its ratio) or had a probe time
//    out within the loss window, its direction's flows at least
//    kPathMinFailures times (recurring);
//  - some are clean: kPathMinSegments while their direction's loss lasted
//    (a flow quiet then, or busy only after a repair, is no evidence), no
//    failure, and a loss of half
//    the lossy flows' (at least the threshold; half of everything when the
//    lossy flows are failed ones alone) ruled out (LossRuledOut);
//  - at least one direction has both (the flows of one connection pair
//    disagree: no node, uplink or link explains that);
//  - every node that sends a lossy flow in the unit also sends a clean one
//    (there or anywhere else, inside its group too), and every node that
//    receives one also receives a clean one (a lossy NIC loses on all its
//    flows, whatever their path).
// - no node with a lossy flow in the unit loses (at half the threshold,
//   over a direction's window or its recent part) with two or more peers
//   outside it: a lossy NIC's flows split into lossy and clean by chance
//   and by windows that straddle the loss's start.
// - only directions whose loss holds still count: one whose recent part
//   loses much more or much less than its whole window (a loss starting or
//   clearing) splits its flows by when each last carried data.
// All flows equally lossy is the link's, a node's or an uplink's: no path
// fault. A pure function over LocaliseInput, like Localise.
#pragma once

#include <cstdint>
#include <vector>

#include "client/health/localise.h"

namespace gloowatch::client {

inline constexpr uint64_t kPathMinSegments = 100;
inline constexpr uint64_t kPathMinLost = 3;
inline constexpr double kPathEvidence = 10;
// Failed probes of one direction's flows within their window that make
// them path evidence (Failing in path_faults.cc).
inline constexpr uint64_t kPathMinFailures = 2;
// How much more one part of a direction's loss window may lose than the
// other for its flows to count (Steady in path_faults.cc).
inline constexpr double kPathSteadyFactor = 1.5;

struct PathFaults {
  // One `path` suspect a unit, the most lossy flows first.
  std::vector<Suspect> suspects;
  // The input with the lossy directions of those units set aside (not bad,
  // no loss), for the rest of the localisation; set only with suspects.
  LocaliseInput rest;
};

PathFaults FindPathFaults(const LocaliseInput& input);

}  // namespace gloowatch::client
