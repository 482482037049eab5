#include "daemon/metrics.h"

#include "absl/strings/str_cat.h"
#include "daemon/scrape_server.h"
#include "prometheus/text_serializer.h"

namespace gloowatch {

using prometheus::BuildCounter;
using prometheus::BuildGauge;

void Metrics::SetPlacement(const std::string& group, const TopologyLabels& labels) {
  if (build_info_series_ != nullptr && group == identity_.group && labels == identity_.labels) {
    return;
  }
  if (build_info_series_ != nullptr) build_info_->Remove(build_info_series_);
  identity_.group = group;
  identity_.labels = labels;
  // The config keeps label names clear of these four.
  prometheus::Labels all(labels.begin(), labels.end());
  all["node"] = identity_.node;
  all["version"] = identity_.version;
  all["gloo_version"] = identity_.gloo_version;
  all["group"] = group;
  build_info_series_ = &build_info_->Add(all);
  build_info_series_->Set(1);
}

Metrics::Metrics(Identity identity)
    : identity_(std::move(identity)), registry_(std::make_shared<prometheus::Registry>()) {
  auto& r = *registry_;
  build_info_ = &BuildGauge()
                     .Name("gloowatch_build_info")
                     .Help(
                         "Always 1; labels carry the gloowatch and Gloo versions, the "
                         "node's group and its topology labels")
                     .Register(r);
  SetPlacement(identity_.group, identity_.labels);
  if (identity_.link_speed_bytes_per_second) {
    BuildGauge()
        .Name("gloowatch_link_speed_bytes_per_second")
        .Help("Link speed of the interface the Gloo pairs use")
        .Register(r)
        .Add({{"node", identity_.node}, {"interface", identity_.interface}})
        .Set(*identity_.link_speed_bytes_per_second);
  }
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
  training_report_age_ = &BuildGauge()
                              .Name("gloowatch_training_report_age_seconds")
                              .Help(
                                  "Time since the rank's last report (steps or heartbeat); grows "
                                  "while the rank is stopped, hung or gone")
                              .Register(r);
  training_process_state_ =
      &BuildGauge()
           .Name("gloowatch_training_rank_process_state")
           .Help(
               "1 for the current state (running, stopped, gone) of the rank's process in /proc, "
               "0 for the others; no series when unknown")
           .Register(r);
  training_job_ended_ = &BuildGauge()
                             .Name("gloowatch_training_job_ended")
                             .Help(
                                 "1 while every process of the job's ranks on this node is gone; "
                                 "how: died_in_collective (killed or crashed inside a call) or "
                                 "exited")
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

// The scrape server calls Collect() on its thread: it goes first.
Metrics::~Metrics() { server_.reset(); }

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
      host_port, [this] { return prometheus::TextSerializer().Serialize(Collect()); },
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

namespace {

constexpr const char* kProcessStates[] = {"running", "stopped", "gone"};
constexpr const char* kEndedHows[] = {"died_in_collective", "exited"};

}  // namespace

void Metrics::SetTrainingCollective(const std::string& job, int rank,
                                    std::optional<double> inside_seconds, uint64_t seq,
                                    double report_age_seconds) {
  const prometheus::Labels labels = {
      {"node", identity_.node}, {"training_job", job}, {"rank", absl::StrCat(rank)}};
  if (inside_seconds) {
    training_inside_->Add(labels).Set(*inside_seconds);
  } else {
    training_inside_->Remove(&training_inside_->Add(labels));
  }
  training_seq_->Add(labels).Set(static_cast<double>(seq));
  training_report_age_->Add(labels).Set(report_age_seconds);
}

void Metrics::SetTrainingProcessState(const std::string& job, int rank, const std::string& state) {
  for (const char* name : kProcessStates) {
    const prometheus::Labels labels = {{"node", identity_.node},
                                       {"training_job", job},
                                       {"rank", absl::StrCat(rank)},
                                       {"state", name}};
    prometheus::Gauge& gauge = training_process_state_->Add(labels);
    if (state.empty()) {
      training_process_state_->Remove(&gauge);
    } else {
      gauge.Set(state == name ? 1 : 0);
    }
  }
}

void Metrics::SetTrainingJobEnded(const std::string& job, const std::string& how) {
  for (const char* name : kEndedHows) {
    const prometheus::Labels labels = {
        {"node", identity_.node}, {"training_job", job}, {"how", name}};
    prometheus::Gauge& gauge = training_job_ended_->Add(labels);
    if (how == name) {
      gauge.Set(1);
    } else {
      training_job_ended_->Remove(&gauge);
    }
  }
}

void Metrics::RemoveTrainingSeries(const std::string& job, int rank) {
  const prometheus::Labels labels = {
      {"node", identity_.node}, {"training_job", job}, {"rank", absl::StrCat(rank)}};
  // Add() returns the existing series for these labels.
  for (auto* family : {training_step_, training_comm_, training_steps_}) {
    family->Remove(&family->Add(labels));
  }
  RemoveTrainingCollective(job, rank);
  SetTrainingProcessState(job, rank, "");
}

void Metrics::RemoveTrainingCollective(const std::string& job, int rank) {
  const prometheus::Labels labels = {
      {"node", identity_.node}, {"training_job", job}, {"rank", absl::StrCat(rank)}};
  for (auto* family : {training_inside_, training_seq_, training_report_age_}) {
    family->Remove(&family->Add(labels));
  }
}

}  // namespace gloowatch
