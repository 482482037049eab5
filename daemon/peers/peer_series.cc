#include "daemon/peers/peer_series.h"

#include <limits>
#include <utility>

#include "common/failure.h"
#include "daemon/metrics/metric_catalogue.h"
#include "daemon/metrics/metric_families.h"

namespace gloowatch {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

ClientMetric RttHistogram(const PeerSnapshot& peer, const prometheus::Labels& labels) {
  const std::vector<double>& bounds = RttBucketBounds();
  ClientMetric metric;
  metric.label = SampleLabels(labels);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < peer.rtt_buckets.size(); ++i) {
    cumulative += peer.rtt_buckets[i];
    metric.histogram.bucket.push_back(
        {cumulative, i < bounds.size() ? bounds[i] : std::numeric_limits<double>::infinity()});
  }
  metric.histogram.sample_count = cumulative;
  metric.histogram.sample_sum = peer.rtt_sum_seconds;
  return metric;
}

// A family of per-peer series and the catalogue entry it is made from.
struct PeerFamily {
  explicit PeerFamily(const MetricSpec& s) : spec(&s), family(Family(s)) {}
  const MetricSpec* spec;
  MetricFamily family;
};

}  // namespace

PeerSeries::PeerSeries(std::string node, TrackerSource trackers)
    : node_(std::move(node)), trackers_(std::move(trackers)) {}

std::vector<MetricFamily> PeerSeries::Collect() const {
  PeerFamily up(metric::kPeerUp);
  PeerFamily rtt(metric::kPeerRtt);
  PeerFamily rtt_p50(metric::kPeerRttP50);
  PeerFamily rtt_p99(metric::kPeerRttP99);
  PeerFamily rtt_jitter(metric::kPeerRttJitter);
  PeerFamily rtt_recent_p50(metric::kPeerRttRecentP50);
  PeerFamily drops(metric::kPeerDrops);
  PeerFamily last_failure(metric::kPeerLastFailureTimestamp);
  PeerFamily daemon_silent(metric::kPeerDaemonSilent);
  PeerFamily latency_lost(metric::kPeerLatencyProbesLost);
  PeerFamily bandwidth(metric::kPeerBandwidth);
  PeerFamily link_ratio(metric::kPeerBandwidthLinkRatio);
  PeerFamily offset(metric::kPeerClockOffset);
  PeerFamily offset_error(metric::kPeerClockOffsetError);
  PeerFamily failures(metric::kPeerProbeFailures);
  PeerFamily probes(metric::kPeerProbes);
  PeerFamily tcp_retransmitted(metric::kPeerTcpRetransmitted);
  PeerFamily tcp_spurious(metric::kPeerTcpSpuriousRetransmitted);
  PeerFamily tcp_sent(metric::kPeerTcpSent);
  PeerFamily tcp_loss_ratio(metric::kPeerTcpLossRatio);
  PeerFamily tcp_rtt(metric::kPeerTcpRtt);
  PeerFamily tcp_rtt_variation(metric::kPeerTcpRttVariation);
  PeerFamily flow_sent(metric::kPeerFlowSent);
  PeerFamily flow_lost(metric::kPeerFlowLost);
  PeerFamily flow_loss_ratio(metric::kPeerFlowLossRatio);
  PeerFamily flow_failures(metric::kPeerFlowFailures);

  for (const std::shared_ptr<const PeerTracker>& tracker : trackers_()) {
    const PeerSnapshot peer = tracker->Snapshot();
    const v1::PeerStatus& status = peer.status;
    // node, peer and, in some families, the one label more their entry names.
    auto labels = [&](const PeerFamily& f, const std::string& extra = "") {
      return extra.empty() ? MetricLabels(*f.spec, {node_, status.name()})
                           : MetricLabels(*f.spec, {node_, status.name(), extra});
    };
    auto add = [&](PeerFamily& f, double value, const std::string& extra = "") {
      Add(f.family, labels(f, extra), value);
    };

    add(up, peer.up ? 1 : 0);
    rtt.family.metric.push_back(RttHistogram(peer, labels(rtt)));
    const v1::LatencyFigures& latency = status.latency();
    if (latency.has_p50_seconds()) add(rtt_p50, latency.p50_seconds());
    if (latency.has_p99_seconds()) add(rtt_p99, latency.p99_seconds());
    if (latency.has_jitter_seconds()) add(rtt_jitter, latency.jitter_seconds());
    if (latency.has_recent_p50_seconds()) add(rtt_recent_p50, latency.recent_p50_seconds());
    add(latency_lost, static_cast<double>(latency.lost_probes()));
    add(drops, static_cast<double>(peer.drops));
    if (status.last_failure().has_time()) {
      add(last_failure, static_cast<double>(status.last_failure().time().seconds()) +
                            status.last_failure().time().nanos() / 1e9);
    }
    if (status.peer_daemon().has_silent_seconds()) {
      add(daemon_silent, status.peer_daemon().silent_seconds());
    }

    // Each direction's own ratio, on the better of its last two transfers;
    // the status' link_ratio is the slower one's.
    const v1::BandwidthFigures& bw = status.bandwidth();
    const std::optional<double> speed = peer.link_speed_bytes_per_second;
    const bool with_ratio = speed && *speed > 0;
    if (bw.has_tx_bytes_per_second()) {
      add(bandwidth, bw.tx_bytes_per_second(), "tx");
      const double judged = peer.tx_judged_bytes_per_second.value_or(bw.tx_bytes_per_second());
      if (with_ratio) add(link_ratio, judged / *speed, "tx");
    }
    if (bw.has_rx_bytes_per_second()) {
      add(bandwidth, bw.rx_bytes_per_second(), "rx");
      const double judged = peer.rx_judged_bytes_per_second.value_or(bw.rx_bytes_per_second());
      if (with_ratio) add(link_ratio, judged / *speed, "rx");
    }

    // No offset before the first measurement: 0 would read as healthy.
    const v1::ClockFigures& clock = status.clock();
    if (clock.has_offset_seconds()) add(offset, clock.offset_seconds());
    if (clock.has_error_seconds()) add(offset_error, clock.error_seconds());

    // Every reason has a series from the start, so rate() and increase() see
    // the first failure.
    for (v1::FailureReason reason : kFailureReasons) {
      const std::string name(ReasonName(reason));
      const auto it = status.failures_by_reason().find(name);
      add(failures, it == status.failures_by_reason().end() ? 0 : static_cast<double>(it->second),
          name);
    }
    add(probes, static_cast<double>(peer.latency_probes), "latency");
    add(probes, static_cast<double>(peer.skew_probes), "skew");
    add(probes, static_cast<double>(peer.bandwidth_probes), "bandwidth");

    const v1::TcpFigures& tcp = status.tcp();
    add(tcp_retransmitted, static_cast<double>(tcp.retransmitted_segments()));
    add(tcp_spurious, static_cast<double>(tcp.spurious_retransmitted_segments()));
    add(tcp_sent, static_cast<double>(tcp.sent_segments()));
    if (tcp.has_loss_ratio()) add(tcp_loss_ratio, tcp.loss_ratio());
    if (tcp.has_rtt_seconds()) add(tcp_rtt, tcp.rtt_seconds());
    if (tcp.has_rtt_variation_seconds()) add(tcp_rtt_variation, tcp.rtt_variation_seconds());

    for (const v1::FlowFigures& f : status.flows()) {
      const std::string flow = std::to_string(f.flow());
      add(flow_sent, static_cast<double>(f.sent_segments()), flow);
      add(flow_lost, static_cast<double>(f.lost_segments()), flow);
      if (f.has_loss_ratio()) add(flow_loss_ratio, f.loss_ratio(), flow);
      add(flow_failures, static_cast<double>(f.failures()), flow);
    }
  }

  std::vector<MetricFamily> out;
  for (PeerFamily* f : {&up,
                        &rtt,
                        &rtt_p50,
                        &rtt_p99,
                        &rtt_jitter,
                        &rtt_recent_p50,
                        &latency_lost,
                        &bandwidth,
                        &link_ratio,
                        &offset,
                        &offset_error,
                        &failures,
                        &probes,
                        &drops,
                        &last_failure,
                        &daemon_silent,
                        &tcp_retransmitted,
                        &tcp_spurious,
                        &tcp_sent,
                        &tcp_loss_ratio,
                        &tcp_rtt,
                        &tcp_rtt_variation,
                        &flow_sent,
                        &flow_lost,
                        &flow_loss_ratio,
                        &flow_failures}) {
    if (!f->family.metric.empty()) out.push_back(std::move(f->family));
  }
  return out;
}

}  // namespace gloowatch
