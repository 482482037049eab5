// `gloowatch job NAME --prometheus URL`: the same view as from the daemons,
// read from a Prometheus server: the nodes and their links as `health
// --prometheus` reads them, plus the job's gloowatch_training_collective_*
// and _report_age_seconds series. What Prometheus does not carry: the call's
// name and group (a rank inside a call shows op "collective"), and whether a
// silent rank's process is stopped or gone.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/sources/fetch.h"
#include "client/sources/prometheus_source.h"
#include "nlohmann/json.hpp"

namespace gloowatch::client {

// The op a rank inside a call shows when read from Prometheus.
inline constexpr char kPrometheusCallName[] = "collective";

// gloowatch_training_collective_seconds, _seq and report_age_seconds of
// training job `job`.
std::string CollectiveQuery(const PrometheusOptions& options, const std::string& job);

// Puts the collective series (an instant vector's "data.result") into the
// training entries of `nodes` (by the series' `node` label), adding entries
// for ranks that have no other series. A rank's last report is its node's
// `now` minus its report age; without that series (an older daemon) `now`. INVALID_ARGUMENT when
// `result` is not a vector.
absl::Status AddCollectives(const nlohmann::json& result, const std::string& job,
                            std::vector<FetchResult>& nodes);

// FetchFromPrometheus, then CollectiveQuery at the nodes' time.
absl::StatusOr<std::vector<FetchResult>> FetchJobFromPrometheus(const PrometheusOptions& options,
                                                                const std::string& job);

}  // namespace gloowatch::client
