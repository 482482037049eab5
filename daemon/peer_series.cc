#include "daemon/peer_series.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "common/failure.h"
#include "daemon/metric_families.h"

namespace gloowatch {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

ClientMetric RttHistogram(const PeerSnapshot& peer, std::vector<ClientMetric::Label> labels) {
  const std::vector<double>& bounds = RttBucketBounds();
  ClientMetric metric;
  metric.label = std::move(labels);
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

}  // namespace

PeerSeries::PeerSeries(std::string node, TrackerSource trackers)
    : node_(std::move(node)), trackers_(std::move(trackers)) {}

std::vector<MetricFamily> PeerSeries::Collect() const {
  MetricFamily up = Family("gloowatch_peer_up",
                           "1 when the Gloo probe pair to the peer is connected and answering",
                           MetricType::Gauge);
  MetricFamily rtt =
      Family("gloowatch_peer_rtt_seconds", "Round-trip time of small messages over the Gloo pair",
             MetricType::Histogram);
  MetricFamily rtt_p50 =
      Family("gloowatch_peer_rtt_p50_seconds", "Median round-trip time over the sliding window",
             MetricType::Gauge);
  MetricFamily rtt_p99 =
      Family("gloowatch_peer_rtt_p99_seconds",
             "99th percentile round-trip time over the sliding window", MetricType::Gauge);
  MetricFamily rtt_jitter = Family(
      "gloowatch_peer_rtt_jitter_seconds",
      "Latency jitter: p99 minus p50 round-trip time over the sliding window", MetricType::Gauge);
  MetricFamily latency_lost = Family(
      "gloowatch_peer_latency_probes_lost_total",
      "Latency probes whose ping timed out (each also ends the session as a timeout failure)",
      MetricType::Counter);
  MetricFamily bandwidth =
      Family("gloowatch_peer_bandwidth_bytes_per_second",
             "Throughput of the last timed bulk transfer (direction tx|rx)", MetricType::Gauge);
  MetricFamily link_ratio = Family(
      "gloowatch_peer_bandwidth_link_ratio",
      "Last measured bandwidth over the local link speed (direction tx|rx)", MetricType::Gauge);
  MetricFamily offset =
      Family("gloowatch_peer_clock_offset_seconds",
             "Peer wall clock minus ours, best sample of the last burst", MetricType::Gauge);
  MetricFamily offset_error =
      Family("gloowatch_peer_clock_offset_error_seconds",
             "Error bound (half the round trip) of the clock offset", MetricType::Gauge);
  MetricFamily failures =
      Family("gloowatch_peer_probe_failures_total",
             "Failed probes and connection attempts, by classified reason", MetricType::Counter);
  MetricFamily probes =
      Family("gloowatch_peer_probes_total", "Completed probes by kind (latency|skew|bandwidth)",
             MetricType::Counter);
  MetricFamily tcp_retransmitted =
      Family("gloowatch_peer_tcp_retransmitted_segments_total",
             "TCP segments the probe pairs' sockets retransmitted to the peer (kernel tcp_info)",
             MetricType::Counter);
  MetricFamily tcp_spurious = Family(
      "gloowatch_peer_tcp_spurious_retransmitted_segments_total",
      "Of those, retransmissions the peer reported it already had (DSACK)", MetricType::Counter);
  MetricFamily tcp_sent = Family(
      "gloowatch_peer_tcp_sent_segments_total",
      "TCP data segments the probe pairs' sockets sent to the peer, retransmissions included",
      MetricType::Counter);
  MetricFamily tcp_loss_ratio = Family(
      "gloowatch_peer_tcp_loss_ratio",
      "Lost (retransmitted, not spurious) over sent TCP segments of the probe pairs, last 60 s",
      MetricType::Gauge);
  MetricFamily tcp_rtt = Family(
      "gloowatch_peer_tcp_rtt_seconds",
      "Kernel's smoothed round-trip time of the command pair's TCP connection", MetricType::Gauge);
  MetricFamily tcp_rtt_variation =
      Family("gloowatch_peer_tcp_rtt_variation_seconds",
             "Kernel's round-trip time variation of the same connection", MetricType::Gauge);
  MetricFamily rtt_recent_p50 =
      Family("gloowatch_peer_rtt_recent_p50_seconds",
             "Median round-trip time over the last 60 s (absent without a round trip in it)",
             MetricType::Gauge);
  MetricFamily drops =
      Family("gloowatch_peer_drops_total",
             "Times the peer went from up to down (a restart or partition is one, however many "
             "reconnects fail after it)",
             MetricType::Counter);
  MetricFamily last_failure = Family(
      "gloowatch_peer_last_failure_timestamp_seconds",
      "Unix time of the last failed probe or connection attempt to the peer", MetricType::Gauge);
  MetricFamily daemon_silent = Family(
      "gloowatch_peer_daemon_silent_seconds",
      "How long the peer's daemon had been silent when its transport last answered us (over 3: "
      "frozen while its transport answers)",
      MetricType::Gauge);

  for (const std::shared_ptr<const PeerTracker>& tracker : trackers_()) {
    const PeerSnapshot peer = tracker->Snapshot();
    const v1::PeerStatus& status = peer.status;
    // In label name order, as prometheus-cpp's families (a std::map) write them.
    auto labels = [&](const char* key = nullptr, const char* value = nullptr) {
      std::vector<ClientMetric::Label> out = {{"node", node_}, {"peer", status.name()}};
      if (key != nullptr) {
        out.push_back({key, value});
        std::sort(out.begin(), out.end());
      }
      return out;
    };

    Add(up, labels(), peer.up ? 1 : 0);
    rtt.metric.push_back(RttHistogram(peer, labels()));
    const v1::LatencyFigures& latency = status.latency();
    if (latency.has_p50_seconds()) Add(rtt_p50, labels(), latency.p50_seconds());
    if (latency.has_p99_seconds()) Add(rtt_p99, labels(), latency.p99_seconds());
    if (latency.has_jitter_seconds()) Add(rtt_jitter, labels(), latency.jitter_seconds());
    if (latency.has_recent_p50_seconds()) {
      Add(rtt_recent_p50, labels(), latency.recent_p50_seconds());
    }
    Add(latency_lost, labels(), static_cast<double>(latency.lost_probes()));
    Add(drops, labels(), static_cast<double>(peer.drops));
    if (status.last_failure().has_time()) {
      Add(last_failure, labels(),
          static_cast<double>(status.last_failure().time().seconds()) +
              status.last_failure().time().nanos() / 1e9);
    }
    if (status.peer_daemon().has_silent_seconds()) {
      Add(daemon_silent, labels(), status.peer_daemon().silent_seconds());
    }

    // Each direction's own ratio; the status' link_ratio is the slower one's.
    const v1::BandwidthFigures& bw = status.bandwidth();
    const std::optional<double> speed = peer.link_speed_bytes_per_second;
    const bool with_ratio = speed && *speed > 0;
    if (bw.has_tx_bytes_per_second()) {
      Add(bandwidth, labels("direction", "tx"), bw.tx_bytes_per_second());
      if (with_ratio) Add(link_ratio, labels("direction", "tx"), bw.tx_bytes_per_second() / *speed);
    }
    if (bw.has_rx_bytes_per_second()) {
      Add(bandwidth, labels("direction", "rx"), bw.rx_bytes_per_second());
      if (with_ratio) Add(link_ratio, labels("direction", "rx"), bw.rx_bytes_per_second() / *speed);
    }

    // No offset before the first measurement: 0 would read as healthy.
    const v1::ClockFigures& clock = status.clock();
    if (clock.has_offset_seconds()) Add(offset, labels(), clock.offset_seconds());
    if (clock.has_error_seconds()) Add(offset_error, labels(), clock.error_seconds());

    // Every reason has a series from the start, so rate() and increase() see
    // the first failure.
    for (v1::FailureReason reason : kFailureReasons) {
      const std::string name(ReasonName(reason));
      const auto it = status.failures_by_reason().find(name);
      Add(failures, labels("reason", name.c_str()),
          it == status.failures_by_reason().end() ? 0 : static_cast<double>(it->second));
    }
    Add(probes, labels("kind", "latency"), static_cast<double>(peer.latency_probes));
    Add(probes, labels("kind", "skew"), static_cast<double>(peer.skew_probes));
    Add(probes, labels("kind", "bandwidth"), static_cast<double>(peer.bandwidth_probes));

    const v1::TcpFigures& tcp = status.tcp();
    Add(tcp_retransmitted, labels(), static_cast<double>(tcp.retransmitted_segments()));
    Add(tcp_spurious, labels(), static_cast<double>(tcp.spurious_retransmitted_segments()));
    Add(tcp_sent, labels(), static_cast<double>(tcp.sent_segments()));
    if (tcp.has_loss_ratio()) Add(tcp_loss_ratio, labels(), tcp.loss_ratio());
    if (tcp.has_rtt_seconds()) Add(tcp_rtt, labels(), tcp.rtt_seconds());
    if (tcp.has_rtt_variation_seconds()) {
      Add(tcp_rtt_variation, labels(), tcp.rtt_variation_seconds());
    }
  }

  std::vector<MetricFamily> out;
  for (MetricFamily* family : {&up,
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
                               &tcp_rtt_variation}) {
    if (!family->metric.empty()) out.push_back(std::move(*family));
  }
  return out;
}

}  // namespace gloowatch
