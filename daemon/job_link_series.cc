#include "daemon/job_link_series.h"

#include "absl/strings/str_cat.h"
#include "daemon/metric_families.h"

namespace gloowatch {

std::vector<prometheus::MetricFamily> JobLinkSeries::Collect() const {
  using prometheus::MetricType;
  struct Figure {
    const char* name;
    const char* help;
    MetricType type;
    double (*value)(const v1::JobSocket&);
  };
  static const Figure kFigures[] = {
      {"gloowatch_training_link_sent_segments_total",
       "Data segments a rank's Gloo pair connection sent, retransmissions included",
       MetricType::Counter, [](const v1::JobSocket& s) { return double(s.sent_segments()); }},
      {"gloowatch_training_link_retransmitted_segments_total",
       "Segments of that connection the kernel retransmitted", MetricType::Counter,
       [](const v1::JobSocket& s) { return double(s.retransmitted_segments()); }},
      {"gloowatch_training_link_spurious_retransmitted_segments_total",
       "Of those, the ones the other end reported it already had (DSACK)", MetricType::Counter,
       [](const v1::JobSocket& s) { return double(s.spurious_retransmitted_segments()); }},
      {"gloowatch_training_link_rtt_seconds", "The kernel's smoothed RTT of the connection",
       MetricType::Gauge, [](const v1::JobSocket& s) { return s.rtt_seconds(); }},
      {"gloowatch_training_link_unacked_bytes",
       "Bytes the rank sent on the connection that are not acknowledged yet", MetricType::Gauge,
       [](const v1::JobSocket& s) { return double(s.unacked_bytes()); }},
      {"gloowatch_training_link_receive_queue_bytes",
       "Bytes that arrived on the connection and the rank has not read yet", MetricType::Gauge,
       [](const v1::JobSocket& s) { return double(s.receive_queue_bytes()); }},
      {"gloowatch_training_link_backoff",
       "Exponent of the connection's retransmission timer backoff (0 when healthy)",
       MetricType::Gauge, [](const v1::JobSocket& s) { return double(s.backoff()); }},
  };
  std::vector<prometheus::MetricFamily> out;
  for (const Figure& f : kFigures) out.push_back(Family(f.name, f.help, f.type));
  size_t series = 0;
  for (const v1::TrainingJobStatus& t : source_()) {
    for (const v1::JobSocket& s : t.sockets()) {
      if (s.kind() != "pair") continue;
      if (series++ >= kMaxJobLinkSeries) break;
      const std::vector<prometheus::ClientMetric::Label> labels = {{"node", node_},
                                                                   {"training_job", t.job()},
                                                                   {"rank", absl::StrCat(t.rank())},
                                                                   {"remote", s.remote()}};
      for (size_t i = 0; i < out.size(); ++i) Add(out[i], labels, kFigures[i].value(s));
    }
  }
  // No series, no family: nothing to say before a rank lists its sockets.
  if (series == 0) out.clear();
  return out;
}

}  // namespace gloowatch
