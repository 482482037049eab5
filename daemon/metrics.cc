#include "daemon/metrics.h"

#include "absl/strings/str_cat.h"
#include "common/failure.h"
#include "daemon/scrape_server.h"
#include "prometheus/text_serializer.h"

namespace gloowatch {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;

constexpr v1::FailureReason kReasons[] = {
    v1::FAILURE_REASON_REFUSED, v1::FAILURE_REASON_UNREACHABLE, v1::FAILURE_REASON_TIMEOUT,
    v1::FAILURE_REASON_RESET,   v1::FAILURE_REASON_PROTOCOL,    v1::FAILURE_REASON_WRONG_INTERFACE,
    v1::FAILURE_REASON_OTHER,
};

}  // namespace

const std::vector<double>& RttBucketBounds() {
  static const std::vector<double>* const bounds =
      new std::vector<double>{10e-6, 20e-6, 50e-6, 100e-6, 200e-6, 500e-6, 1e-3, 2e-3, 5e-3,
                              10e-3, 20e-3, 50e-3, 100e-3, 200e-3, 500e-3, 1.0,  2.0};
  return *bounds;
}

void Metrics::SetGroup(const std::string& group) {
  if (build_info_series_ != nullptr && group == identity_.group) return;
  if (build_info_series_ != nullptr) build_info_->Remove(build_info_series_);
  identity_.group = group;
  build_info_series_ = &build_info_->Add({{"node", identity_.node},
                                          {"version", identity_.version},
                                          {"gloo_version", identity_.gloo_version},
                                          {"group", group}});
  build_info_series_->Set(1);
}

Metrics::Metrics(Identity identity)
    : identity_(std::move(identity)), registry_(std::make_shared<prometheus::Registry>()) {
  auto& r = *registry_;
  build_info_ = &BuildGauge()
                     .Name("gloowatch_build_info")
                     .Help(
                         "Always 1; labels carry the gloowatch and Gloo versions and the "
                         "node's group")
                     .Register(r);
  SetGroup(identity_.group);
  if (identity_.link_speed_bytes_per_second) {
    BuildGauge()
        .Name("gloowatch_link_speed_bytes_per_second")
        .Help("Link speed of the interface the Gloo pairs use")
        .Register(r)
        .Add({{"node", identity_.node}, {"interface", identity_.interface}})
        .Set(*identity_.link_speed_bytes_per_second);
  }
  up_ = &BuildGauge()
             .Name("gloowatch_peer_up")
             .Help("1 when the Gloo probe pair to the peer is connected and answering")
             .Register(r);
  rtt_ = &BuildHistogram()
              .Name("gloowatch_peer_rtt_seconds")
              .Help("Round-trip time of small messages over the Gloo pair")
              .Register(r);
  rtt_p50_ = &BuildGauge()
                  .Name("gloowatch_peer_rtt_p50_seconds")
                  .Help("Median round-trip time over the sliding window")
                  .Register(r);
  rtt_p99_ = &BuildGauge()
                  .Name("gloowatch_peer_rtt_p99_seconds")
                  .Help("99th percentile round-trip time over the sliding window")
                  .Register(r);
  bandwidth_ = &BuildGauge()
                    .Name("gloowatch_peer_bandwidth_bytes_per_second")
                    .Help("Throughput of the last timed bulk transfer (direction tx|rx)")
                    .Register(r);
  link_ratio_ = &BuildGauge()
                     .Name("gloowatch_peer_bandwidth_link_ratio")
                     .Help("Last measured bandwidth over the local link speed (direction tx|rx)")
                     .Register(r);
  offset_ = &BuildGauge()
                 .Name("gloowatch_peer_clock_offset_seconds")
                 .Help("Peer wall clock minus ours, best sample of the last burst")
                 .Register(r);
  offset_error_ = &BuildGauge()
                       .Name("gloowatch_peer_clock_offset_error_seconds")
                       .Help("Error bound (half the round trip) of the clock offset")
                       .Register(r);
  failures_ = &BuildCounter()
                   .Name("gloowatch_peer_probe_failures_total")
                   .Help("Failed probes and connection attempts, by classified reason")
                   .Register(r);
  probes_ = &BuildCounter()
                 .Name("gloowatch_peer_probes_total")
                 .Help("Completed probes by kind (latency|skew|bandwidth)")
                 .Register(r);
  tcp_retransmitted_ =
      &BuildCounter()
           .Name("gloowatch_peer_tcp_retransmitted_segments_total")
           .Help(
               "TCP segments the probe pairs' sockets retransmitted to the peer (kernel tcp_info)")
           .Register(r);
  tcp_spurious_ = &BuildCounter()
                       .Name("gloowatch_peer_tcp_spurious_retransmitted_segments_total")
                       .Help("Of those, retransmissions the peer reported it already had (DSACK)")
                       .Register(r);
  tcp_sent_ = &BuildCounter()
                   .Name("gloowatch_peer_tcp_sent_segments_total")
                   .Help(
                       "TCP data segments the probe pairs' sockets sent to the peer, "
                       "retransmissions included")
                   .Register(r);
  tcp_loss_ratio_ = &BuildGauge()
                         .Name("gloowatch_peer_tcp_loss_ratio")
                         .Help(
                             "Lost (retransmitted, not spurious) over sent TCP segments of the "
                             "probe pairs, last 60 s")
                         .Register(r);
  tcp_rtt_ = &BuildGauge()
                  .Name("gloowatch_peer_tcp_rtt_seconds")
                  .Help("Kernel's smoothed round-trip time of the command pair's TCP connection")
                  .Register(r);
  tcp_rtt_variation_ = &BuildGauge()
                            .Name("gloowatch_peer_tcp_rtt_variation_seconds")
                            .Help("Kernel's round-trip time variation of the same connection")
                            .Register(r);
  training_step_ = &BuildCounter()
                        .Name("gloowatch_training_step_seconds_total")
                        .Help("Wall time of reported training steps")
                        .Register(r);
  training_comm_ = &BuildCounter()
                        .Name("gloowatch_training_communication_seconds_total")
                        .Help("Time reported training steps spent in communication")
                        .Register(r);
  transport_restarts_ = &BuildCounter()
                             .Name("gloowatch_transport_restarts_total")
                             .Help("Restarts of the probe transport process after it died")
                             .Register(r)
                             .Add({{"node", identity_.node}});
  bandwidth_transfer_ = &BuildCounter()
                             .Name("gloowatch_bandwidth_probe_seconds_total")
                             .Help(
                                 "Time this node's link spent in bandwidth probe transfers, its "
                                 "own and the peers' it served")
                             .Register(r)
                             .Add({{"node", identity_.node}});
  training_steps_ = &BuildCounter()
                         .Name("gloowatch_training_steps_total")
                         .Help("Number of reported training steps")
                         .Register(r);
  training_inside_ = &BuildGauge()
                          .Name("gloowatch_training_collective_seconds")
                          .Help(
                              "How long the rank has been inside its current collective (0: "
                              "between collectives)")
                          .Register(r);
  training_seq_ = &BuildGauge()
                       .Name("gloowatch_training_collective_seq")
                       .Help("Sequence number of the rank's current or last collective")
                       .Register(r);
  auto threshold = [&](const char* name, const char* help) {
    return &BuildGauge().Name(name).Help(help).Register(r).Add({{"node", identity_.node}});
  };
  threshold_latency_ = threshold("gloowatch_threshold_latency_seconds",
                                 "Latency p50 at or above which a link is degraded");
  threshold_link_ratio_ = threshold("gloowatch_threshold_bandwidth_link_ratio",
                                    "Link ratio below which a link is degraded");
  threshold_clock_offset_ = threshold("gloowatch_threshold_clock_offset_seconds",
                                      "Absolute clock offset at or above which a link is degraded");
  threshold_failure_window_ = threshold("gloowatch_threshold_failure_window_seconds",
                                        "Window in which any probe failure degrades a link");
  threshold_communication_share_ =
      threshold("gloowatch_threshold_communication_share",
                "Communication share of step time above which a training job is degraded");
  threshold_scheduling_delay_ = threshold(
      "gloowatch_threshold_scheduling_delay_seconds",
      "Mean scheduling delay of gloowatch's threads at or above which the host is overloaded");
  threshold_cpu_steal_ = threshold("gloowatch_threshold_cpu_steal_ratio",
                                   "CPU steal ratio at or above which the host is overloaded");
}

void Metrics::SetThresholds(const v1::Thresholds& t) {
  threshold_latency_->Set(t.latency_seconds());
  threshold_link_ratio_->Set(t.bandwidth_link_ratio());
  threshold_clock_offset_->Set(t.clock_offset_seconds());
  threshold_failure_window_->Set(t.failure_window_seconds());
  threshold_communication_share_->Set(t.communication_share());
  threshold_scheduling_delay_->Set(t.scheduling_delay_seconds());
  threshold_cpu_steal_->Set(t.cpu_steal_ratio());
}

Metrics::~Metrics() = default;

absl::Status Metrics::Serve(const std::string& host_port, const MetricsWebConfig& web) {
  ScrapeServer::Options options;
  if (web.tls()) {
    auto tls = TlsServerContext::Load(web.tls_cert_file, web.tls_key_file, web.tls_client_ca_file);
    if (!tls.ok()) return tls.status();
    options.tls = *std::move(tls);
  }
  if (web.basic_auth()) {
    options.basic_auth =
        std::make_shared<BasicAuth>(web.basic_auth_user, web.basic_auth_password_hash);
  }
  absl::StatusOr<std::unique_ptr<ScrapeServer>> server = ScrapeServer::Start(
      host_port,
      [registry = registry_, collectables = collectables_] {
        std::vector<prometheus::MetricFamily> families = registry->Collect();
        for (const auto& collectable : collectables) {
          for (prometheus::MetricFamily& family : collectable->Collect()) {
            families.push_back(std::move(family));
          }
        }
        return prometheus::TextSerializer().Serialize(families);
      },
      std::move(options));
  if (!server.ok()) return server.status();
  server_ = *std::move(server);
  return absl::OkStatus();
}

void Metrics::RecordTrainingStep(const std::string& job, int rank, double step_seconds,
                                 double communication_seconds) {
  const prometheus::Labels labels = {
      {"node", identity_.node}, {"training_job", job}, {"rank", absl::StrCat(rank)}};
  training_step_->Add(labels).Increment(step_seconds);
  training_comm_->Add(labels).Increment(communication_seconds);
  training_steps_->Add(labels).Increment();
}

void Metrics::SetTrainingCollective(const std::string& job, int rank, double inside_seconds,
                                    uint64_t seq) {
  const prometheus::Labels labels = {
      {"node", identity_.node}, {"training_job", job}, {"rank", absl::StrCat(rank)}};
  training_inside_->Add(labels).Set(inside_seconds);
  training_seq_->Add(labels).Set(static_cast<double>(seq));
}

void Metrics::RemoveTrainingSeries(const std::string& job, int rank) {
  const prometheus::Labels labels = {
      {"node", identity_.node}, {"training_job", job}, {"rank", absl::StrCat(rank)}};
  // Add() returns the existing series for these labels.
  for (auto* family : {training_step_, training_comm_, training_steps_}) {
    family->Remove(&family->Add(labels));
  }
  RemoveTrainingCollective(job, rank);
}

void Metrics::RemoveTrainingCollective(const std::string& job, int rank) {
  const prometheus::Labels labels = {
      {"node", identity_.node}, {"training_job", job}, {"rank", absl::StrCat(rank)}};
  for (auto* family : {training_inside_, training_seq_}) family->Remove(&family->Add(labels));
}

std::unique_ptr<PeerMetrics> Metrics::AddPeer(const std::string& peer) {
  return std::unique_ptr<PeerMetrics>(new PeerMetrics(this, peer));
}

PeerMetrics::PeerMetrics(Metrics* metrics, const std::string& peer)
    : metrics_(metrics), labels_({{"node", metrics->identity_.node}, {"peer", peer}}) {
  up_ = &metrics_->up_->Add(labels_);
  up_->Set(0);
  rtt_ = &metrics_->rtt_->Add(labels_, RttBucketBounds());
  // Zero-valued counters from the start, so rate() and increase() see the
  // first failure.
  for (v1::FailureReason reason : kReasons) {
    failures_[reason] =
        &metrics_->failures_->Add(With("reason", std::string(ReasonName(reason)).c_str()));
  }
  const char* kinds[] = {"latency", "skew", "bandwidth"};
  for (int i = 0; i < 3; ++i) probes_[i] = &metrics_->probes_->Add(With("kind", kinds[i]));
  tcp_retransmitted_ = &metrics_->tcp_retransmitted_->Add(labels_);
  tcp_spurious_ = &metrics_->tcp_spurious_->Add(labels_);
  tcp_sent_ = &metrics_->tcp_sent_->Add(labels_);
}

PeerMetrics::~PeerMetrics() {
  Metrics& m = *metrics_;
  m.up_->Remove(up_);
  m.rtt_->Remove(rtt_);
  if (rtt_p50_) m.rtt_p50_->Remove(rtt_p50_);
  if (rtt_p99_) m.rtt_p99_->Remove(rtt_p99_);
  for (int i = 0; i < 2; ++i) {
    if (bandwidth_[i]) m.bandwidth_->Remove(bandwidth_[i]);
    if (link_ratio_[i]) m.link_ratio_->Remove(link_ratio_[i]);
  }
  if (offset_) m.offset_->Remove(offset_);
  if (offset_error_) m.offset_error_->Remove(offset_error_);
  for (auto& [reason, counter] : failures_) m.failures_->Remove(counter);
  for (prometheus::Counter* c : probes_) m.probes_->Remove(c);
  m.tcp_retransmitted_->Remove(tcp_retransmitted_);
  m.tcp_spurious_->Remove(tcp_spurious_);
  m.tcp_sent_->Remove(tcp_sent_);
  if (tcp_loss_ratio_) m.tcp_loss_ratio_->Remove(tcp_loss_ratio_);
  if (tcp_rtt_) m.tcp_rtt_->Remove(tcp_rtt_);
  if (tcp_rtt_variation_) m.tcp_rtt_variation_->Remove(tcp_rtt_variation_);
}

prometheus::Labels PeerMetrics::With(const char* key, const char* value) const {
  prometheus::Labels labels = labels_;
  labels[key] = value;
  return labels;
}

prometheus::Gauge& PeerMetrics::Lazy(prometheus::Family<prometheus::Gauge>* family,
                                     prometheus::Gauge*& slot, const char* key, const char* value) {
  if (slot == nullptr) slot = &family->Add(key ? With(key, value) : labels_);
  return *slot;
}

void PeerMetrics::SetUp(bool up) { up_->Set(up ? 1 : 0); }

void PeerMetrics::ObserveRtt(double seconds) { rtt_->Observe(seconds); }

void PeerMetrics::SetRttPercentiles(double p50, double p99) {
  absl::MutexLock lock(&mu_);
  Lazy(metrics_->rtt_p50_, rtt_p50_).Set(p50);
  Lazy(metrics_->rtt_p99_, rtt_p99_).Set(p99);
}

void PeerMetrics::SetBandwidth(bool tx, double bytes_per_second, std::optional<double> link_ratio) {
  absl::MutexLock lock(&mu_);
  const int i = tx ? 0 : 1;
  const char* direction = tx ? "tx" : "rx";
  Lazy(metrics_->bandwidth_, bandwidth_[i], "direction", direction).Set(bytes_per_second);
  if (link_ratio) {
    Lazy(metrics_->link_ratio_, link_ratio_[i], "direction", direction).Set(*link_ratio);
  }
}

void PeerMetrics::SetClockOffset(double offset_seconds, double error_seconds) {
  absl::MutexLock lock(&mu_);
  Lazy(metrics_->offset_, offset_).Set(offset_seconds);
  Lazy(metrics_->offset_error_, offset_error_).Set(error_seconds);
}

void PeerMetrics::CountFailure(v1::FailureReason reason) {
  auto it = failures_.find(reason);
  (it != failures_.end() ? it->second : failures_[v1::FAILURE_REASON_OTHER])->Increment();
}

void PeerMetrics::CountProbe(Probe kind) { probes_[static_cast<int>(kind)]->Increment(); }

void PeerMetrics::AddTcp(uint64_t retransmitted, uint64_t spurious, uint64_t sent,
                         std::optional<double> loss_ratio, std::optional<double> rtt_seconds,
                         std::optional<double> rtt_variation_seconds) {
  tcp_retransmitted_->Increment(static_cast<double>(retransmitted));
  tcp_spurious_->Increment(static_cast<double>(spurious));
  tcp_sent_->Increment(static_cast<double>(sent));
  absl::MutexLock lock(&mu_);
  if (loss_ratio) Lazy(metrics_->tcp_loss_ratio_, tcp_loss_ratio_).Set(*loss_ratio);
  if (rtt_seconds) Lazy(metrics_->tcp_rtt_, tcp_rtt_).Set(*rtt_seconds);
  if (rtt_variation_seconds) {
    Lazy(metrics_->tcp_rtt_variation_, tcp_rtt_variation_).Set(*rtt_variation_seconds);
  }
}

}  // namespace gloowatch
