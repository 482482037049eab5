// `gloowatch serve`: asks the cluster every `refresh`, renders the heatmap
// page and the health JSON, and hands them to a PageServer until stopped.
#pragma once

#include <functional>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/health/cluster.h"
#include "client/health/page_server.h"

namespace gloowatch::client {

using ObserveCluster = std::function<absl::StatusOr<ClusterPicture>()>;

// The snapshot of one observation: the page (reloading itself every
// `refresh`) and the JSON, or a page naming the error when there is none.
PageSnapshot SnapshotOf(const absl::StatusOr<ClusterPicture>& picture, absl::Duration refresh);

// Publishes a first snapshot, then serves while a thread refreshes it, until
// SIGINT or SIGTERM.
absl::Status ServeHealth(PageServer& server, const ObserveCluster& observe, absl::Duration refresh);

}  // namespace gloowatch::client
