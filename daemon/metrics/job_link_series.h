// The per job link series (gloowatch_training_link_*): one label set per
// Gloo pair socket of a reporting rank, built from TrainingReports'
// snapshot at each scrape, so a connection that closed has no series. At
// most kMaxJobLinkSeries label sets (the first by job, rank and remote
// address), like the cap on the training series.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "prometheus/collectable.h"
#include "proto/gloowatch.pb.h"

namespace gloowatch {

inline constexpr size_t kMaxJobLinkSeries = 1024;

class JobLinkSeries : public prometheus::Collectable {
 public:
  using Source = std::function<std::vector<v1::TrainingJobStatus>()>;
  JobLinkSeries(std::string node, Source source)
      : node_(std::move(node)), source_(std::move(source)) {}
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const std::string node_;
  const Source source_;
};

}  // namespace gloowatch
