#include "daemon/metrics/job_link_series.h"

#include "absl/strings/str_cat.h"
#include "daemon/metrics/metric_catalogue.h"
#include "daemon/metrics/metric_families.h"

namespace gloowatch {

std::vector<prometheus::MetricFamily> JobLinkSeries::Collect() const {
  struct Figure {
    const MetricSpec* spec;
    double (*value)(const v1::JobSocket&);
  };
  static const Figure kFigures[] = {
      {&metric::kTrainingLinkSentSegments,
       [](const v1::JobSocket& s) { return double(s.sent_segments()); }},
      {&metric::kTrainingLinkRetransmittedSegments,
       [](const v1::JobSocket& s) { return double(s.retransmitted_segments()); }},
      {&metric::kTrainingLinkSpuriousRetransmittedSegments,
       [](const v1::JobSocket& s) { return double(s.spurious_retransmitted_segments()); }},
      {&metric::kTrainingLinkRtt, [](const v1::JobSocket& s) { return s.rtt_seconds(); }},
      {&metric::kTrainingLinkUnackedBytes,
       [](const v1::JobSocket& s) { return double(s.unacked_bytes()); }},
      {&metric::kTrainingLinkReceiveQueueBytes,
       [](const v1::JobSocket& s) { return double(s.receive_queue_bytes()); }},
      {&metric::kTrainingLinkBackoff, [](const v1::JobSocket& s) { return double(s.backoff()); }},
  };
  std::vector<prometheus::MetricFamily> out;
  for (const Figure& f : kFigures) out.push_back(Family(*f.spec));
  size_t series = 0;
  for (const v1::TrainingJobStatus& t : source_()) {
    for (const v1::JobSocket& s : t.sockets()) {
      if (s.kind() != "pair") continue;
      if (series++ >= kMaxJobLinkSeries) break;
      for (size_t i = 0; i < out.size(); ++i) {
        Add(out[i],
            MetricLabels(*kFigures[i].spec, {node_, t.job(), absl::StrCat(t.rank()), s.remote()}),
            kFigures[i].value(s));
      }
    }
  }
  // No series, no family: nothing to say before a rank lists its sockets.
  if (series == 0) out.clear();
  return out;
}

}  // namespace gloowatch
