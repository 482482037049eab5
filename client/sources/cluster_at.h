// What gloowatch saw on the cluster's links around one moment, read back from
// Prometheus: explain-log puts it next to the root cause of a log, so the
// failure of a training job meets the link, node or rack that was sick then.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/sources/prometheus_source.h"
#include "nlohmann/json.hpp"

namespace gloowatch::client {

// One directed link that was not healthy in the window.
struct LinkAtTime {
  std::string node, peer;
  bool down = false;                       // peer_up was 0 at some point
  std::map<std::string, double> failures;  // reason -> probe failures in the window
  std::optional<double> bandwidth_ratio;   // lowest link ratio, when below the threshold
};

struct ClusterAtTime {
  double time = 0;                    // the moment, unix seconds
  absl::Duration margin;              // the window is time +- margin
  int links_seen = 0;                 // links with any series then
  std::vector<LinkAtTime> unhealthy;  // sorted by node, peer
};

struct ClusterAtOptions {
  // The window is time +- margin; explain-log --prometheus uses the default.
  absl::Duration margin = absl::Seconds(30);
  double bandwidth_threshold = 0.8;  // link ratios below it are named
};

// Three instant queries: peer_up's minimum, probe failures by reason, and the
// bandwidth link ratio below the threshold, over the window around `time`.
absl::StatusOr<ClusterAtTime> ClusterAt(const PrometheusOptions& prometheus, double time,
                                        const ClusterAtOptions& options = {});

std::string RenderClusterAt(const ClusterAtTime& cluster, const std::string& url);
nlohmann::json ClusterAtToJson(const ClusterAtTime& cluster);

}  // namespace gloowatch::client
