#include "daemon/metrics/metric_catalogue.h"

namespace gloowatch {

absl::string_view MetricTypeName(prometheus::MetricType type) {
  switch (type) {
    case prometheus::MetricType::Counter:
      return "counter";
    case prometheus::MetricType::Gauge:
      return "gauge";
    case prometheus::MetricType::Summary:
      return "summary";
    case prometheus::MetricType::Histogram:
      return "histogram";
    case prometheus::MetricType::Untyped:
      return "untyped";
  }
  return "untyped";
}

prometheus::Labels MetricLabels(const MetricSpec& spec, std::initializer_list<std::string> values) {
  prometheus::Labels out;
  size_t i = 0;
  // A value without a name, or a name without a value, is a mistake at the
  // call site: metrics_doc_test sees the series' labels differ from the
  // catalogue's.
  for (const std::string& value : values) {
    if (i == spec.label_count()) break;
    out.emplace(std::string(spec.labels[i++]), value);
  }
  return out;
}

}  // namespace gloowatch
