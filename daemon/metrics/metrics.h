// Prometheus export: the daemon-wide metric families and the collectables
// read at scrape time (per-peer series, process_*), rendered as the body of
// /metrics; the daemon's hub serves it (http/scrape_server). Names follow
// Prometheus conventions (gloowatch_ prefix, base units); labels are `node`
// (ours) and `peer`, nothing per probe.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/config.h"
#include "daemon/metrics/process_metrics.h"
#include "prometheus/collectable.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/metric_family.h"
#include "prometheus/registry.h"
#include "proto/gloowatch.pb.h"

namespace gloowatch {

class Metrics {
 public:
  struct Identity {
    std::string node;
    std::string version;
    std::string gloo_version;
    std::string interface;
    std::optional<double> link_speed_bytes_per_second;
    std::string group;  // the `group` label of gloowatch_build_info
    // The node's topology labels, each a label of gloowatch_build_info.
    TopologyLabels labels;
  };

  explicit Metrics(Identity identity);

  // Adds the families `collectable` builds at every scrape (the per-peer
  // series) to what /metrics serves.
  void AddCollectable(std::shared_ptr<prometheus::Collectable> collectable);
  // Everything /metrics serves: the registry's families, the collectables'
  // and the process_* series.
  std::vector<prometheus::MetricFamily> Collect() const;
  // Collect() in Prometheus' text format: the body of GET /metrics. Safe to
  // call from any thread.
  std::string Render() const;
  prometheus::Registry& registry() { return *registry_; }

  // Training-step reports, per (job, rank) series.
  void RecordTrainingStep(const std::string& job, int rank, double step_seconds,
                          double communication_seconds);
  // Where the rank stands in its collectives (hang attribution).
  // `report_age_seconds`: since its last report (a stopped rank's grows).
  // `inside_seconds` nullopt: the rank is in no call whatever it reported
  // last (its process is gone), so it has no collective_seconds series.
  void SetTrainingCollective(const std::string& job, int rank, std::optional<double> inside_seconds,
                             uint64_t seq, double report_age_seconds);
  void RemoveTrainingCollective(const std::string& job, int rank);
  // gloowatch_training_rank_process_state: 1 for `state` ("running",
  // "stopped", "gone"), 0 for the two others; "" (unknown) removes them.
  void SetTrainingProcessState(const std::string& job, int rank, const std::string& state);
  // gloowatch_training_job_ended{how}: 1 while the job has ended on this node
  // (every rank's process gone), `how` as TrainingJobSummary.ended_how; ""
  // (not ended) removes it.
  void SetTrainingJobEnded(const std::string& job, const std::string& how);
  void RemoveTrainingSeries(const std::string& job, int rank);
  void CountTransportRestart() { transport_restarts_->Increment(); }
  // The transport child's process_* series follow this pid (-1: none runs).
  void SetTransportPid(pid_t pid) { process_->SetTransportPid(pid); }
  void CountBandwidthTransferTime(double seconds) { bandwidth_transfer_->Increment(seconds); }
  // gloowatch_threshold_*: the thresholds the verdict uses (set at start and
  // on every reload).
  void SetThresholds(const v1::Thresholds& t);
  // The node's group and topology labels on gloowatch_build_info (at start
  // and on every reload), so `gloowatch health --prometheus` knows the racks
  // and alert rules can join the labels onto per-peer series.
  void SetPlacement(const std::string& group, const TopologyLabels& labels);
  const Identity& identity() const { return identity_; }

 private:
  Identity identity_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::shared_ptr<ProcessCollector> process_ = std::make_shared<ProcessCollector>();
  mutable absl::Mutex collectables_mu_;
  std::vector<std::shared_ptr<prometheus::Collectable>> collectables_
      ABSL_GUARDED_BY(collectables_mu_);
  prometheus::Family<prometheus::Gauge>* build_info_ = nullptr;
  prometheus::Gauge* build_info_series_ = nullptr;
  prometheus::Family<prometheus::Counter>* training_step_;
  prometheus::Family<prometheus::Counter>* training_comm_;
  prometheus::Family<prometheus::Counter>* training_steps_;
  prometheus::Family<prometheus::Gauge>* training_inside_;
  prometheus::Family<prometheus::Gauge>* training_seq_;
  prometheus::Family<prometheus::Gauge>* training_report_age_;
  prometheus::Family<prometheus::Gauge>* training_process_state_;
  prometheus::Family<prometheus::Gauge>* training_job_ended_;
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
