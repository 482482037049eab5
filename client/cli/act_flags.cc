#include "client/cli/act_flags.h"

#include <cmath>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "client/cli/command.h"

ABSL_FLAG(double, min_confidence, 0.9,
          "node-check, act: the least confidence (0..1) of health's suspect before a node is "
          "named.");
ABSL_FLAG(int, min_peers, 2,
          "node-check, act: the least number of peers that must see the node bad themselves.");
ABSL_FLAG(std::string, max_drained, "2",
          "node-check, act: the most nodes named (drained, flagged) at once: a count (2) or a "
          "share of the nodes (10%, at least 1).");

namespace gloowatch::client {

std::optional<CulpritOptions> CulpritFlags(int* exit) {
  CulpritOptions o;
  o.min_confidence = absl::GetFlag(FLAGS_min_confidence);
  if (!(o.min_confidence >= 0 && o.min_confidence <= 1)) {
    *exit = Usage("--min-confidence must be in [0, 1]");
    return std::nullopt;
  }
  const int peers = absl::GetFlag(FLAGS_min_peers);
  if (peers < 1 || peers > 10000) {
    *exit = Usage("--min-peers must be in [1, 10000]");
    return std::nullopt;
  }
  o.min_peers = static_cast<size_t>(peers);
  absl::StatusOr<NodeLimit> limit = ParseNodeLimit(absl::GetFlag(FLAGS_max_drained));
  if (!limit.ok()) {
    *exit = Usage(absl::StrCat("--max-drained: ", limit.status().message()));
    return std::nullopt;
  }
  o.max_nodes = *limit;
  return o;
}

}  // namespace gloowatch::client
