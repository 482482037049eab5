// `gloowatch job NAME --prometheus URL`: the same view as from the daemons,
// read from a Prometheus server: the nodes and their links as `health
// --prometheus` reads them, plus the job's gloowatch_training_collective_*
// series. What Prometheus cannot carry: the call's name and group (a rank
// inside a call shows op "collective"), and when a rank last reported, so a
// stopped rank is not told from a waiting one (it shows as not entered when
// it stopped between calls, as waiting when it stopped inside one).
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/fetch.h"
#include "client/prometheus_source.h"
#include "nlohmann/json.hpp"

namespace gloowatch::client {

// The op a rank inside a call shows when read from Prometheus.
inline constexpr char kPrometheusCallName[] = "collective";

// gloowatch_training_collective_seconds and _seq of training job `job`.
std::string CollectiveQuery(const PrometheusOptions& options, const std::string& job);

// Puts the collective series (an instant vector's "data.result") into the
// training entries of `nodes` (by the series' `node` label), adding entries
// for ranks that have no other series; each such rank counts as heard from
// at its node's `now`. INVALID_ARGUMENT when `result` is not a vector.
absl::Status AddCollectives(const nlohmann::json& result, const std::string& job,
                            std::vector<FetchResult>& nodes);

// FetchFromPrometheus, then CollectiveQuery at the nodes' time.
absl::StatusOr<std::vector<FetchResult>> FetchJobFromPrometheus(const PrometheusOptions& options,
                                                                const std::string& job);

}  // namespace gloowatch::client
