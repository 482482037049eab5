// The guard-rail flags node-check and act share (client/act/culprits.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "client/act/culprits.h"

ABSL_DECLARE_FLAG(double, min_confidence);
ABSL_DECLARE_FLAG(int, min_peers);
ABSL_DECLARE_FLAG(std::string, max_drained);
ABSL_DECLARE_FLAG(std::vector<std::string>, node);

namespace gloowatch::client {

// nullopt with *exit set (a usage error) when a flag is out of range.
std::optional<CulpritOptions> CulpritFlags(int* exit);

}  // namespace gloowatch::client
