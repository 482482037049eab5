// The one reader of the Prometheus text format (a /metrics scrape) in tests.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gloowatch::testing {

// Prometheus text format -> {"name{a=\"x\",b=\"y\"}" -> value}; labels are
// kept in the order written, which for prometheus-cpp is sorted by name.
std::map<std::string, double> ParseMetrics(const std::string& text);

// The value of `name` whose labels include every pair of `labels`.
std::optional<double> FindMetric(const std::map<std::string, double>& metrics,
                                 const std::string& name,
                                 const std::map<std::string, std::string>& labels);

// One sample line, taken apart.
struct MetricSample {
  std::string name;
  std::map<std::string, std::string> labels;  // values unescaped
  double value = 0;
};
// Every sample of a scrape, in the order written; lines that are not a
// well-formed sample are left out.
std::vector<MetricSample> ParseSamples(const std::string& text);

// The "# TYPE <family> <type>" lines: family -> type.
std::map<std::string, std::string> MetricTypes(const std::string& text);

}  // namespace gloowatch::testing
