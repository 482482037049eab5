// Renders a ClusterPicture as aligned text tables or as JSON
// (schema gloowatch.health.v1, documented in docs/client.md).
#pragma once

#include <string>

#include "client/health/cluster.h"
#include "nlohmann/json.hpp"

namespace gloowatch::client {

struct HealthTextOptions {
  bool color = false;
  // The figure matrices: always with `matrices`, else for clusters of at most
  // kMatricesUpTo nodes.
  bool matrices = false;
  // More columns in the node table (-o wide): address, version, Gloo
  // endpoint, labels; implies matrices.
  bool wide = false;
};
inline constexpr size_t kMatricesUpTo = 8;

// Summary first: the verdict and why, the suspects, the node table (NODE
// STATUS REASON AGE), the problem links, the history (never counted), the
// pending figures, the jobs, then the matrices.
std::string RenderHealthText(const ClusterPicture& c, const HealthTextOptions& options);
nlohmann::json HealthToJson(const ClusterPicture& c);

}  // namespace gloowatch::client
