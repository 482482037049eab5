// Test support: a fault-catalogue bed that outlives one test process, so
// that ctest entries (one a row) share it (docs/testing.md, "The fault
// catalogue"). `netns_fault_bed up` (a ctest fixture's setup) starts a small
// supervisor, the keeper: a process of its own (setsid, its output in a log)
// that builds the bed, keeps its daemons and job running and runs the rows
// it is asked for, one at a time, over a unix socket. `netns_fault_bed down`
// (the fixture's cleanup) stops it; it also stops itself after an hour, or
// after 15 minutes without a request, so a run killed halfway leaves no
// namespace behind for long (and the next NetnsCluster::Setup deletes the
// namespaces of a dead keeper).
//
// Protocol, one request a connection: "ping\n" -> "pong\n"; "down\n" ->
// "bye\n"; "run <row> <healthy seconds>\n" -> "log <text>\n"... then
// "result <RowResult as one line of JSON>\n".
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tests/support/fault_catalogue.h"

namespace gloowatch::testing {

struct KeeperPaths {
  std::string socket, pid, log;
};
KeeperPaths KeeperPathsOf(const std::string& dir, CatalogueBed bed);

// Whether a keeper answers at `dir` for `bed`.
bool KeeperAlive(const std::string& dir, CatalogueBed bed);

// Starts a keeper (unless one answers already) and returns once its bed is
// up: 0, or 1 with why on stderr. Forks before any thread exists: call it
// first thing in a process of its own (netns_fault_bed).
int KeeperUp(const std::string& dir, CatalogueBed bed, CatalogueSchedule schedule);

// Stops the keeper and its bed (bounded; a keeper that does not answer is
// killed, and namespaces of dead owners are deleted). 0 unless it could not.
int KeeperDown(const std::string& dir, CatalogueBed bed);

// Runs `row` on the keeper at `dir`, passing its log lines to `log`;
// `healthy` is how long the healthy row asks.
absl::StatusOr<RowResult> RunRowOnKeeper(const std::string& dir, CatalogueBed bed,
                                         const std::string& row, absl::Duration healthy,
                                         absl::Duration timeout, const CatalogueLog& log);

}  // namespace gloowatch::testing
