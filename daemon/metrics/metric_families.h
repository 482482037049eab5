// Building prometheus-cpp MetricFamily values by hand, for the Collectables
// that read their figures at scrape time (peer_series, process_metrics,
// host_load).
#pragma once

#include <vector>

#include "prometheus/metric_family.h"

namespace gloowatch {

// An empty family.
prometheus::MetricFamily Family(const char* name, const char* help, prometheus::MetricType type);

// Adds one counter or gauge sample (by the family's type).
void Add(prometheus::MetricFamily& family, std::vector<prometheus::ClientMetric::Label> labels,
         double value);

}  // namespace gloowatch
