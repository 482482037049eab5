// Prometheus export: metric families, per-peer handles and the /metrics
// server. Names follow Prometheus conventions (gloowatch_ prefix, base
// units); labels are `node` (ours) and `peer`, nothing per probe.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/config.h"
#include "daemon/process_metrics.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "proto/gloowatch.pb.h"

namespace gloowatch {

class ScrapeServer;

// Upper bounds of the RTT histogram buckets, in seconds (10 us .. 2 s).
const std::vector<double>& RttBucketBounds();

class Metrics;

// The series of one peer. A gauge appears only once it has a value (a clock
// offset of 0 before any measurement would read as healthy); destroying the
// object removes every series of the peer.
class PeerMetrics {
 public:
  ~PeerMetrics();
  PeerMetrics(const PeerMetrics&) = delete;
  PeerMetrics& operator=(const PeerMetrics&) = delete;

  void SetUp(bool up);
  void ObserveRtt(double seconds);
  void SetRttPercentiles(double p50, double p99);
  // `link_ratio` only when the link speed is known.
  void SetBandwidth(bool tx, double bytes_per_second, std::optional<double> link_ratio);
  void SetClockOffset(double offset_seconds, double error_seconds);
  void CountFailure(v1::FailureReason reason);
  enum class Probe { kLatency, kSkew, kBandwidth };
  void CountProbe(Probe kind);
  // Segments retransmitted (of them spurious) and sent since the last call;
  // the windowed loss ratio and the RTT figures when known.
  void AddTcp(uint64_t retransmitted, uint64_t spurious, uint64_t sent,
              std::optional<double> loss_ratio, std::optional<double> rtt_seconds,
              std::optional<double> rtt_variation_seconds);

 private:
  friend class Metrics;
  PeerMetrics(Metrics* metrics, const std::string& peer);
  prometheus::Gauge& Lazy(prometheus::Family<prometheus::Gauge>* family, prometheus::Gauge*& slot,
                          const char* key = nullptr, const char* value = nullptr);
  prometheus::Labels With(const char* key, const char* value) const;

  Metrics* metrics_;
  prometheus::Labels labels_;
  absl::Mutex mu_;
  prometheus::Gauge* up_ = nullptr;
  prometheus::Histogram* rtt_ = nullptr;
  prometheus::Gauge* rtt_p50_ = nullptr;
  prometheus::Gauge* rtt_p99_ = nullptr;
  prometheus::Gauge* bandwidth_[2] = {nullptr, nullptr};  // tx, rx
  prometheus::Gauge* link_ratio_[2] = {nullptr, nullptr};
  prometheus::Gauge* offset_ = nullptr;
  prometheus::Gauge* offset_error_ = nullptr;
  std::map<v1::FailureReason, prometheus::Counter*> failures_;
  prometheus::Counter* probes_[3] = {nullptr, nullptr, nullptr};
  prometheus::Counter* tcp_retransmitted_ = nullptr;
  prometheus::Counter* tcp_spurious_ = nullptr;
  prometheus::Counter* tcp_sent_ = nullptr;
  prometheus::Gauge* tcp_loss_ratio_ = nullptr;
  prometheus::Gauge* tcp_rtt_ = nullptr;
  prometheus::Gauge* tcp_rtt_variation_ = nullptr;
};

class Metrics {
 public:
  struct Identity {
    std::string node;
    std::string version;
    std::string gloo_version;
    std::string interface;
    std::optional<double> link_speed_bytes_per_second;
    std::string group;  // the `group` label of gloowatch_build_info
  };

  explicit Metrics(Identity identity);
  ~Metrics();

  // Serves /metrics on host:port, with the TLS and basic auth `web` asks
  // for. Fails (never throws) when the port is taken or a TLS file is bad.
  absl::Status Serve(const std::string& host_port, const MetricsWebConfig& web);

  // Series read at scrape time, next to the registry's; before Serve.
  void AddCollectable(std::shared_ptr<const prometheus::Collectable> c) {
    collectables_.push_back(std::move(c));
  }

  std::unique_ptr<PeerMetrics> AddPeer(const std::string& peer);
  prometheus::Registry& registry() { return *registry_; }

  // Training-step reports, per (job, rank) series.
  void RecordTrainingStep(const std::string& job, int rank, double step_seconds,
                          double communication_seconds);
  // Where the rank stands in its collectives (hang attribution).
  void SetTrainingCollective(const std::string& job, int rank, double inside_seconds, uint64_t seq);
  void RemoveTrainingCollective(const std::string& job, int rank);
  void RemoveTrainingSeries(const std::string& job, int rank);
  void CountTransportRestart() { transport_restarts_->Increment(); }
  // The transport child's process_* series follow this pid (-1: none runs).
  void SetTransportPid(pid_t pid) { process_->SetTransportPid(pid); }
  void CountBandwidthTransferTime(double seconds) { bandwidth_transfer_->Increment(seconds); }
  // gloowatch_threshold_*: the thresholds the verdict uses (set at start and
  // on every reload).
  void SetThresholds(const v1::Thresholds& t);
  // The node's group on gloowatch_build_info (at start and on every reload),
  // so `gloowatch health --prometheus` knows the racks.
  void SetGroup(const std::string& group);
  const Identity& identity() const { return identity_; }

 private:
  friend class PeerMetrics;
  Identity identity_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::shared_ptr<ProcessCollector> process_ = std::make_shared<ProcessCollector>();
  std::vector<std::shared_ptr<const prometheus::Collectable>> collectables_ = {process_};
  prometheus::Family<prometheus::Gauge>* build_info_ = nullptr;
  prometheus::Gauge* build_info_series_ = nullptr;
  std::unique_ptr<ScrapeServer> server_;
  prometheus::Family<prometheus::Gauge>* up_;
  prometheus::Family<prometheus::Histogram>* rtt_;
  prometheus::Family<prometheus::Gauge>* rtt_p50_;
  prometheus::Family<prometheus::Gauge>* rtt_p99_;
  prometheus::Family<prometheus::Gauge>* bandwidth_;
  prometheus::Family<prometheus::Gauge>* link_ratio_;
  prometheus::Family<prometheus::Gauge>* offset_;
  prometheus::Family<prometheus::Gauge>* offset_error_;
  prometheus::Family<prometheus::Counter>* failures_;
  prometheus::Family<prometheus::Counter>* probes_;
  prometheus::Family<prometheus::Counter>* tcp_retransmitted_;
  prometheus::Family<prometheus::Counter>* tcp_spurious_;
  prometheus::Family<prometheus::Counter>* tcp_sent_;
  prometheus::Family<prometheus::Gauge>* tcp_loss_ratio_;
  prometheus::Family<prometheus::Gauge>* tcp_rtt_;
  prometheus::Family<prometheus::Gauge>* tcp_rtt_variation_;
  prometheus::Family<prometheus::Counter>* training_step_;
  prometheus::Family<prometheus::Counter>* training_comm_;
  prometheus::Family<prometheus::Counter>* training_steps_;
  prometheus::Family<prometheus::Gauge>* training_inside_;
  prometheus::Family<prometheus::Gauge>* training_seq_;
  prometheus::Counter* transport_restarts_;
  prometheus::Counter* bandwidth_transfer_;
  prometheus::Gauge* threshold_latency_;
  prometheus::Gauge* threshold_link_ratio_;
  prometheus::Gauge* threshold_clock_offset_;
  prometheus::Gauge* threshold_failure_window_;
  prometheus::Gauge* threshold_communication_share_;
  prometheus::Gauge* threshold_scheduling_delay_;
  prometheus::Gauge* threshold_cpu_steal_;
};

}  // namespace gloowatch
