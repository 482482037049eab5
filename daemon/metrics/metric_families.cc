#include "daemon/metrics/metric_families.h"

#include <string>
#include <utility>

namespace gloowatch {

prometheus::Family<prometheus::Gauge>& RegisterGauge(const MetricSpec& spec,
                                                     prometheus::Registry& registry) {
  return prometheus::BuildGauge()
      .Name(std::string(spec.name))
      .Help(std::string(spec.help))
      .Register(registry);
}

prometheus::Family<prometheus::Counter>& RegisterCounter(const MetricSpec& spec,
                                                         prometheus::Registry& registry) {
  return prometheus::BuildCounter()
      .Name(std::string(spec.name))
      .Help(std::string(spec.help))
      .Register(registry);
}

prometheus::MetricFamily Family(const MetricSpec& spec) {
  prometheus::MetricFamily family;
  family.name = std::string(spec.name);
  family.help = std::string(spec.help);
  family.type = spec.type;
  return family;
}

std::vector<prometheus::ClientMetric::Label> SampleLabels(const prometheus::Labels& labels) {
  std::vector<prometheus::ClientMetric::Label> out;
  out.reserve(labels.size());
  for (const auto& [name, value] : labels) out.push_back({name, value});
  return out;
}

void Add(prometheus::MetricFamily& family, const prometheus::Labels& labels, double value) {
  prometheus::ClientMetric metric;
  metric.label = SampleLabels(labels);
  if (family.type == prometheus::MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  family.metric.push_back(std::move(metric));
}

}  // namespace gloowatch
