#include "daemon/metrics/metrics.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "daemon/metrics/metric_catalogue.h"
#include "daemon/metrics/metric_families.h"
#include "prometheus/text_serializer.h"

namespace gloowatch {

namespace {

// The series of one (job, rank) in a training family.
prometheus::Labels TrainingLabels(const MetricSpec& spec, const std::string& node,
                                  const std::string& job, int rank) {
  return MetricLabels(spec, {node, job, absl::StrCat(rank)});
}

}  // namespace

void Metrics::SetPlacement(const std::string& group, const TopologyLabels& labels) {
  if (build_info_series_ != nullptr && group == identity_.group && labels == identity_.labels) {
    return;
  }
  if (build_info_series_ != nullptr) build_info_->Remove(build_info_series_);
  identity_.group = group;
  identity_.labels = labels;
  prometheus::Labels all = MetricLabels(
      metric::kBuildInfo, {identity_.node, identity_.version, identity_.gloo_version, group});
  // The config keeps label names clear of the catalogue's four.
  all.insert(labels.begin(), labels.end());
  build_info_series_ = &build_info_->Add(all);
  build_info_series_->Set(1);
}

Metrics::Metrics(Identity identity)
    : identity_(std::move(identity)), registry_(std::make_shared<prometheus::Registry>()) {
  auto& r = *registry_;
  const std::string& node = identity_.node;
  build_info_ = &RegisterGauge(metric::kBuildInfo, r);
  SetPlacement(identity_.group, identity_.labels);
  if (identity_.link_speed_bytes_per_second) {
    RegisterGauge(metric::kLinkSpeed, r)
        .Add(MetricLabels(metric::kLinkSpeed, {node, identity_.interface}))
        .Set(*identity_.link_speed_bytes_per_second);
  }
  training_step_ = &RegisterCounter(metric::kTrainingStepSeconds, r);
  training_comm_ = &RegisterCounter(metric::kTrainingCommunicationSeconds, r);
  transport_restarts_ = &RegisterCounter(metric::kTransportRestarts, r)
                             .Add(MetricLabels(metric::kTransportRestarts, {node}));
  bandwidth_transfer_ = &RegisterCounter(metric::kBandwidthProbeSeconds, r)
                             .Add(MetricLabels(metric::kBandwidthProbeSeconds, {node}));
  training_steps_ = &RegisterCounter(metric::kTrainingSteps, r);
  training_inside_ = &RegisterGauge(metric::kTrainingCollectiveSeconds, r);
  training_seq_ = &RegisterGauge(metric::kTrainingCollectiveSeq, r);
  training_report_age_ = &RegisterGauge(metric::kTrainingReportAge, r);
  training_process_state_ = &RegisterGauge(metric::kTrainingRankProcessState, r);
  training_job_ended_ = &RegisterGauge(metric::kTrainingJobEnded, r);
  auto threshold = [&](const MetricSpec& spec) {
    return &RegisterGauge(spec, r).Add(MetricLabels(spec, {node}));
  };
  threshold_latency_ = threshold(metric::kThresholdLatency);
  threshold_link_ratio_ = threshold(metric::kThresholdBandwidthLinkRatio);
  threshold_clock_offset_ = threshold(metric::kThresholdClockOffset);
  threshold_failure_window_ = threshold(metric::kThresholdFailureWindow);
  threshold_communication_share_ = threshold(metric::kThresholdCommunicationShare);
  threshold_scheduling_delay_ = threshold(metric::kThresholdSchedulingDelay);
  threshold_cpu_steal_ = threshold(metric::kThresholdCpuSteal);
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

void Metrics::AddCollectable(std::shared_ptr<prometheus::Collectable> collectable) {
  absl::MutexLock lock(&collectables_mu_);
  collectables_.push_back(std::move(collectable));
}

std::vector<prometheus::MetricFamily> Metrics::Collect() const {
  std::vector<prometheus::MetricFamily> families = registry_->Collect();
  std::vector<std::shared_ptr<prometheus::Collectable>> collectables;
  {
    absl::MutexLock lock(&collectables_mu_);
    collectables = collectables_;
  }
  collectables.push_back(process_);
  for (const auto& collectable : collectables) {
    for (prometheus::MetricFamily& family : collectable->Collect()) {
      families.push_back(std::move(family));
    }
  }
  return families;
}

std::string Metrics::Render() const { return prometheus::TextSerializer().Serialize(Collect()); }

void Metrics::RecordTrainingStep(const std::string& job, int rank, double step_seconds,
                                 double communication_seconds) {
  const std::string& node = identity_.node;
  training_step_->Add(TrainingLabels(metric::kTrainingStepSeconds, node, job, rank))
      .Increment(step_seconds);
  training_comm_->Add(TrainingLabels(metric::kTrainingCommunicationSeconds, node, job, rank))
      .Increment(communication_seconds);
  training_steps_->Add(TrainingLabels(metric::kTrainingSteps, node, job, rank)).Increment();
}

namespace {

constexpr const char* kProcessStates[] = {"running", "stopped", "gone"};
constexpr const char* kEndedHows[] = {"died_in_collective", "exited"};

}  // namespace

void Metrics::SetTrainingCollective(const std::string& job, int rank,
                                    std::optional<double> inside_seconds, uint64_t seq,
                                    double report_age_seconds) {
  const std::string& node = identity_.node;
  prometheus::Gauge& inside =
      training_inside_->Add(TrainingLabels(metric::kTrainingCollectiveSeconds, node, job, rank));
  if (inside_seconds) {
    inside.Set(*inside_seconds);
  } else {
    training_inside_->Remove(&inside);
  }
  training_seq_->Add(TrainingLabels(metric::kTrainingCollectiveSeq, node, job, rank))
      .Set(static_cast<double>(seq));
  training_report_age_->Add(TrainingLabels(metric::kTrainingReportAge, node, job, rank))
      .Set(report_age_seconds);
}

void Metrics::SetTrainingProcessState(const std::string& job, int rank, const std::string& state) {
  for (const char* name : kProcessStates) {
    prometheus::Gauge& gauge = training_process_state_->Add(MetricLabels(
        metric::kTrainingRankProcessState, {identity_.node, job, absl::StrCat(rank), name}));
    if (state.empty()) {
      training_process_state_->Remove(&gauge);
    } else {
      gauge.Set(state == name ? 1 : 0);
    }
  }
}

void Metrics::SetTrainingJobEnded(const std::string& job, const std::string& how) {
  for (const char* name : kEndedHows) {
    prometheus::Gauge& gauge = training_job_ended_->Add(
        MetricLabels(metric::kTrainingJobEnded, {identity_.node, job, name}));
    if (how == name) {
      gauge.Set(1);
    } else {
      training_job_ended_->Remove(&gauge);
    }
  }
}

void Metrics::RemoveTrainingSeries(const std::string& job, int rank) {
  // Add() returns the existing series for these labels.
  for (auto [family, spec] : {std::pair{training_step_, &metric::kTrainingStepSeconds},
                              std::pair{training_comm_, &metric::kTrainingCommunicationSeconds},
                              std::pair{training_steps_, &metric::kTrainingSteps}}) {
    family->Remove(&family->Add(TrainingLabels(*spec, identity_.node, job, rank)));
  }
  RemoveTrainingCollective(job, rank);
  SetTrainingProcessState(job, rank, "");
}

void Metrics::RemoveTrainingCollective(const std::string& job, int rank) {
  for (auto [family, spec] : {std::pair{training_inside_, &metric::kTrainingCollectiveSeconds},
                              std::pair{training_seq_, &metric::kTrainingCollectiveSeq},
                              std::pair{training_report_age_, &metric::kTrainingReportAge}}) {
    family->Remove(&family->Add(TrainingLabels(*spec, identity_.node, job, rank)));
  }
}

}  // namespace gloowatch
