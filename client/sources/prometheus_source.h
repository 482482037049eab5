// `gloowatch health --prometheus URL`: the cluster picture from a Prometheus
// server's instant-query API instead of one GetStatus per daemon. A handful of
// queries (whatever the cluster size) are turned into the same NodeStatus
// protos the daemons would answer, one per `node`, so BuildCluster and the
// renderers work unchanged.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/core/http_client.h"
#include "client/sources/fetch.h"
#include "nlohmann/json.hpp"

namespace gloowatch::client {

struct PrometheusOptions {
  std::string url;                // base URL: http(s)://host:port[/path prefix]
  std::string job = "gloowatch";  // scrape job of the daemons' /metrics
  std::string selector;           // extra label matchers for every query, e.g. cluster="eu1"
  // A node whose series stopped within this long is still listed (as
  // unreachable) rather than forgotten.
  absl::Duration lookback = absl::Minutes(10);
  HttpOptions http;
};

// What the queries answered ("data.result" of each vector), evaluated at one
// instant so the figures are consistent.
struct PrometheusSnapshot {
  double time = 0;                   // evaluation time, unix seconds
  nlohmann::json up;                 // up{job}
  nlohmann::json build_info;         // gloowatch_build_info now
  nlohmann::json build_info_recent;  // last_over_time(gloowatch_build_info[lookback])
  nlohmann::json series;             // every per-peer, threshold, link speed, training series
  nlohmann::json training_share;     // communication share per (node, job, rank)
  // TCP segments each direction sent over the daemons' 60 s loss window
  // (what PeerStatus.tcp.window_sent_segments says); null: not asked.
  nlohmann::json tcp_sent_in_window;
  // failure window (seconds) -> increase(gloowatch_peer_probe_failures_total[w]) > 0
  std::map<int64_t, nlohmann::json> failures_by_window;
  // window -> failures since the peer was first up within the window, for
  // those series of failures_by_window whose peer was up at some point in it
  // (the daemon does not count failures before a peer was first up, so the
  // refused connections of a cluster that starts one daemon after the other
  // are not failures). Series of peers never up in the window keep increase().
  std::map<int64_t, nlohmann::json> failures_since_up_by_window;
  // window -> increase(gloowatch_peer_drops_total[w]) > 0
  std::map<int64_t, nlohmann::json> drops_by_window;
};

// A label value quoted for a PromQL selector (backslash, quote, newline).
std::string EscapeLabelValue(const std::string& value);
// The label matchers every query uses: job="..." plus the selector.
std::string SeriesSelector(const PrometheusOptions& options);
// The PromQL of each query (also shown in docs/client.md).
std::string UpQuery(const PrometheusOptions& options);
std::string BuildInfoQuery(const PrometheusOptions& options);
std::string BuildInfoRecentQuery(const PrometheusOptions& options);
std::string SeriesQuery(const PrometheusOptions& options);
std::string FailuresQuery(const PrometheusOptions& options, int64_t window_seconds);
std::string DropsQuery(const PrometheusOptions& options, int64_t window_seconds);
// `nodes`: restrict to these nodes (empty: all).
std::string FailuresSinceUpQuery(const PrometheusOptions& options, int64_t window_seconds,
                                 const std::set<std::string>& nodes);
std::string TrainingShareQuery(const PrometheusOptions& options);
std::string TcpSentInWindowQuery(const PrometheusOptions& options);

// The failure windows the nodes' gloowatch_threshold_failure_window_seconds
// ask for (1h for nodes that do not export it).
std::vector<int64_t> FailureWindows(const nlohmann::json& series);

// Query results -> one FetchResult per node: reachable ones with a
// NodeStatus, the others (target down, series gone stale) with an error.
// INVALID_ARGUMENT when a result is not a Prometheus vector; NOT_FOUND when
// there is no gloowatch node at all.
absl::StatusOr<std::vector<FetchResult>> NodesFromSnapshot(const PrometheusSnapshot& snapshot,
                                                           const PrometheusOptions& options);

// One instant query at `time` (unix seconds): its "data.result" array, with
// the errors FetchFromPrometheus describes below.
absl::StatusOr<nlohmann::json> QueryPrometheus(const PrometheusOptions& options,
                                               const std::string& promql, double time);

// Runs the queries (6, plus one or two per distinct failure window) and converts.
// Errors name the URL and the problem: INVALID_ARGUMENT for a bad URL,
// UNAVAILABLE / DEADLINE_EXCEEDED for transport failures, FAILED_PRECONDITION
// when the server is not a Prometheus query API or rejects a query, NOT_FOUND
// when it holds no gloowatch series.
absl::StatusOr<std::vector<FetchResult>> FetchFromPrometheus(const PrometheusOptions& options);

}  // namespace gloowatch::client
