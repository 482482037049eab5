// Metric families made from their catalogue entries (metric_catalogue.h):
// registered in a prometheus-cpp Registry (metrics), or built by hand for the
// Collectables that read their figures at scrape time (peer_series,
// process_metrics, host_load).
#pragma once

#include <vector>

#include "daemon/metrics/metric_catalogue.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/labels.h"
#include "prometheus/metric_family.h"
#include "prometheus/registry.h"

namespace gloowatch {

prometheus::Family<prometheus::Gauge>& RegisterGauge(const MetricSpec& spec,
                                                     prometheus::Registry& registry);
prometheus::Family<prometheus::Counter>& RegisterCounter(const MetricSpec& spec,
                                                         prometheus::Registry& registry);

// An empty family.
prometheus::MetricFamily Family(const MetricSpec& spec);

// The labels of a sample, in name order as prometheus-cpp's families write them.
std::vector<prometheus::ClientMetric::Label> SampleLabels(const prometheus::Labels& labels);

// Adds one counter or gauge sample (by the family's type).
void Add(prometheus::MetricFamily& family, const prometheus::Labels& labels, double value);

}  // namespace gloowatch
