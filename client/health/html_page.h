// Renders a ClusterPicture as one self-contained HTML page: the verdict, the
// nodes, the latency / bandwidth ratio / clock offset / TCP loss matrices as
// colour heatmaps with their legends and thresholds, and the worst links.
// Inline CSS only (no script, no external asset), so the file opens offline
// and can be attached to an incident; every name from a daemon is escaped.
#pragma once

#include <string>

#include "absl/strings/string_view.h"
#include "client/health/cluster.h"

namespace gloowatch::client {

struct HtmlPageOptions {
  // > 0: the page reloads itself every this many seconds (gloowatch serve).
  int refresh_seconds = 0;
};

std::string RenderHealthHtml(const ClusterPicture& c, const HtmlPageOptions& options = {});

// `text` with & < > " ' replaced by entities: safe in element text and in
// quoted attribute values.
std::string HtmlEscape(absl::string_view text);

}  // namespace gloowatch::client
