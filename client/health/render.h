// Renders a ClusterPicture as aligned text tables or as JSON
// (schema gloowatch.health.v1, documented in docs/client.md).
#pragma once

#include <string>

#include "client/health/cluster.h"
#include "nlohmann/json.hpp"

namespace gloowatch::client {

std::string RenderHealthText(const ClusterPicture& c, bool color);
nlohmann::json HealthToJson(const ClusterPicture& c);

}  // namespace gloowatch::client
