// Slurm as gloowatch act sees it: each node's state and reason, and the two
// changes it makes (drain with a reason, resume). Behind an interface so the
// planner is tested without a controller; the real one runs scontrol.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace gloowatch::client {

struct SlurmNode {
  std::string name;
  std::string state;     // "IDLE+DRAIN", "MIXED", "DOWN+DRAIN+NOT_RESPONDING"...
  std::string reason;    // without Slurm's " [user@time]" suffix; "" when none
  bool drained() const;  // DRAIN among the state's flags (draining or drained)
};

// `scontrol show node -o` (one node a line, Reason= last); lines that are not
// a node are skipped.
std::vector<SlurmNode> ParseScontrolNodes(absl::string_view text);

class SlurmControl {
 public:
  virtual ~SlurmControl() = default;
  virtual absl::StatusOr<std::vector<SlurmNode>> Nodes() = 0;
  virtual absl::Status Drain(const std::string& node, const std::string& reason) = 0;
  virtual absl::Status Resume(const std::string& node) = 0;
};

// Runs `scontrol` (looked up in PATH unless a path), each call bounded by
// `timeout`.
std::unique_ptr<SlurmControl> ScontrolSlurm(std::string scontrol, absl::Duration timeout);

}  // namespace gloowatch::client
