// The suspects of `gloowatch health` as text (the section the report leads
// with) and as the `suspects` array of gloowatch.health.v1 (docs/client.md).
// Kept apart from render.cc so other outputs reuse it.
#pragma once

#include <string>
#include <vector>

#include "client/health/localise.h"
#include "nlohmann/json.hpp"

namespace gloowatch::client {

// Empty when there are no suspects. At most `max_shown` are listed, with a
// line saying how many more there are.
std::string RenderSuspectsText(const std::vector<Suspect>& suspects, bool color,
                               size_t max_shown = 10);
nlohmann::json SuspectsToJson(const std::vector<Suspect>& suspects);

}  // namespace gloowatch::client
