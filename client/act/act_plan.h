// gloowatch act: what to drain and what to resume in Slurm, from the
// cluster picture, Slurm's node states and act's own state file. A pure
// function (the clock is a parameter), so every guard rail is tested
// without a controller:
//  - drain only accepted culprits (client/act/culprits.h);
//  - never more than `max_nodes` drained by act at once (its own drains are
//    the nodes whose Slurm reason starts with `reason_prefix`);
//  - never touch a node drained by anyone else;
//  - resume only its own drains, and only after the node has been healthy
//    (its daemon answers, healthy now, named by no suspect) for `healthy_for`
//    without a break, as seen by consecutive runs (the state file);
//  - when too few daemons answer to judge, change nothing.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/act/culprits.h"
#include "client/act/slurm.h"
#include "client/health/cluster.h"

namespace gloowatch::client {

// What act remembers between runs, per node it drained.
struct ActRecord {
  std::optional<absl::Time> drained_at;     // unknown for a drain it found without a record
  std::string reason;                       // the reason it set
  std::optional<absl::Time> healthy_since;  // healthy without a break since
};
struct ActState {
  std::map<std::string, ActRecord> nodes;
};

// The state file (JSON, schema gloowatch.act.v1). A missing file is an empty
// state; a malformed one is an error naming what is wrong.
absl::StatusOr<ActState> LoadActState(const std::string& path);
// Written beside it and renamed: a crash never leaves half a file.
absl::Status SaveActState(const std::string& path, const ActState& state);

struct ActOptions {
  CulpritOptions culprits;
  absl::Duration healthy_for = absl::Minutes(10);
  std::string reason_prefix = "gloowatch:";
  // When set, act on this node alone (the others are still counted).
  std::string only_node;
};

struct ActAction {
  enum class Kind { kDrain, kResume };
  Kind kind = Kind::kDrain;
  std::string node;
  std::string reason;  // kDrain: the Slurm reason; kResume: why now
};

struct ActPlan {
  std::vector<ActAction> actions;
  std::vector<std::string> notes;  // what it left alone, and why
  // A culprit held back by a guard rail (the limit of drained nodes), or the
  // cluster could not be judged: an operator should look.
  bool held_back = false;
  ActState next;  // the state to save once the actions are done
};

ActPlan PlanActions(const ClusterPicture& c, const std::vector<SlurmNode>& slurm,
                    const ActState& state, const ActOptions& o, absl::Time now);

}  // namespace gloowatch::client
