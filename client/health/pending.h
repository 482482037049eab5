// Figures an up link does not have yet, and when each is due: a fresh
// cluster has latency within a second, but under the bandwidth budget a
// link's first bandwidth figure can take minutes, and the daemons say when
// (PeerStatus.next_bandwidth_probe).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "client/health/cluster.h"

namespace gloowatch::client {

struct PendingFigure {
  std::string from, to;  // from's view of to
  const char* figure;    // "latency", "bandwidth", "clock offset"
  // When it is due, as the measuring daemon scheduled it (bandwidth only;
  // not known from Prometheus).
  std::optional<absl::Time> due;
};

// Every pending figure of every up view, soonest due first (unknown last).
std::vector<PendingFigure> PendingFigures(const ClusterPicture& c);

// "due in 42 s (04:50:12 UTC)", "overdue by 3 s (...)", or "due time unknown".
std::string DueText(const PendingFigure& p, absl::Time now);

}  // namespace gloowatch::client
