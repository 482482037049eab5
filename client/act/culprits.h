// Which nodes to act on: the culprits `health` names, behind guard rails.
// A pure function over the cluster picture (no I/O), shared by node-check
// (one node's verdict, for Slurm's HealthCheckProgram / NHC and for
// node-problem-detector) and act (drain and resume in Slurm).
//
// A node is acted on only when health names it as a `node` suspect (a host
// whose links are bad, or that is down, as its peers see it) with at least
// `min_confidence`, when at least `min_peers` of its peers that answered say
// so themselves (their own view of it is bad), when most daemons answered
// (from a client cut off from the cluster everything looks down), and when
// no more than `max_nodes` nodes qualify before it (most confident first).
// Link, uplink, overloaded-host and stuck-daemon suspects are never acted on:
// draining one end of a link, a whole rack, a host the job itself keeps busy
// or a host whose monitor is stuck would not fix what they name.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "client/health/cluster.h"

namespace gloowatch::client {

// "2" (nodes) or "10%" (of the nodes in the picture, at least 1).
struct NodeLimit {
  size_t count = 2;
  double share = 0;  // > 0: a share instead of a count
  size_t Of(size_t nodes) const;
  std::string ToString() const;
};
absl::StatusOr<NodeLimit> ParseNodeLimit(absl::string_view text);

struct CulpritOptions {
  double min_confidence = 0.9;
  size_t min_peers = 2;
  NodeLimit max_nodes;
};

struct Culprit {
  std::string node;
  double confidence = 0;
  size_t peers_agree = 0;  // peers that answered and see it bad themselves
  // One line for an operator, a Slurm reason or a NodeCondition message:
  // "h3: its daemon does not answer and all 2 peers probing it see it down
  // (confidence 0.99, 2 peers agree)".
  std::string summary;
  bool accepted = false;
  std::string declined;  // why not, when !accepted
};

// Why nothing can be judged (too few daemons answered), or empty.
std::string CannotJudge(const ClusterPicture& c);

// Every node suspect, most confident first, each accepted or declined.
std::vector<Culprit> FindCulprits(const ClusterPicture& c, const CulpritOptions& o);

// One node's verdict for node-check.
struct NodeVerdict {
  enum class Kind { kOk, kProblem, kUnknown };
  Kind kind = Kind::kOk;
  std::string line;  // one line, no newline, at most kMaxVerdictLine bytes
};
inline constexpr size_t kMaxVerdictLine = 200;

// What is wrong with `node`'s Gloo links as its daemon and its peers see it:
// a problem when it is an accepted culprit, or when its daemon answers and
// reaches none of at least `min_peers` peers that do not answer us either
// (this host is cut off); unknown when it is not in the picture, too few
// daemons answered, or nothing answers for it; ok otherwise.
NodeVerdict JudgeNode(const ClusterPicture& c, const std::string& node, const CulpritOptions& o);

// `text` clipped to `max` bytes (on a UTF-8 boundary, ending in "...").
std::string ClipLine(std::string text, size_t max);

}  // namespace gloowatch::client
