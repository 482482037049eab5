#include "client/sources/job_prometheus.h"

#include <cmath>
#include <map>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/proto_time.h"

namespace gloowatch::client {
namespace {

std::string Label(const nlohmann::json& metric, const char* key) {
  auto it = metric.find(key);
  return it != metric.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

std::string CollectiveQuery(const PrometheusOptions& o, const std::string& job) {
  return absl::StrCat(
      "{__name__=~\"gloowatch_training_(collective_seconds|collective_seq|report_age_seconds)\","
      "training_job=\"",
      EscapeLabelValue(job), "\",", SeriesSelector(o), "}");
}

absl::Status AddCollectives(const nlohmann::json& result, const std::string& job,
                            std::vector<FetchResult>& nodes) {
  if (!result.is_array()) {
    return absl::InvalidArgumentError("collective series: not a Prometheus instant vector");
  }
  std::map<std::string, v1::NodeStatus*> by_node;
  for (FetchResult& f : nodes) {
    if (f.status) by_node[f.status->node()] = &*f.status;
  }
  for (const nlohmann::json& s : result) {
    if (!s.is_object() || !s.contains("metric") || !s["metric"].is_object() ||
        !s.contains("value") || !s["value"].is_array() || s["value"].size() != 2 ||
        !s["value"][1].is_string()) {
      return absl::InvalidArgumentError("collective series: a sample is not [time, \"value\"]");
    }
    const nlohmann::json& m = s["metric"];
    double value = 0;
    int rank = 0;
    if (!absl::SimpleAtod(s["value"][1].get<std::string>(), &value) || !std::isfinite(value) ||
        value < 0 || !absl::SimpleAtoi(Label(m, "rank"), &rank) || rank < 0) {
      continue;
    }
    auto node = by_node.find(Label(m, "node"));
    if (node == by_node.end()) continue;  // a node Prometheus cannot scrape now
    v1::NodeStatus& status = *node->second;
    v1::TrainingJobStatus* t = nullptr;
    for (v1::TrainingJobStatus& x : *status.mutable_training()) {
      if (x.job() == job && x.rank() == rank) t = &x;
    }
    if (t == nullptr) {
      t = status.add_training();
      t->set_job(job);
      t->set_rank(rank);
    }
    const std::string name = Label(m, "__name__");
    if (name == "gloowatch_training_report_age_seconds") {
      *t->mutable_last_report() =
          ToProtoTimestamp(FromProtoTimestamp(status.now()) - absl::Seconds(value));
      continue;
    }
    if (!t->has_last_report()) *t->mutable_last_report() = status.now();
    v1::CollectiveState* c = t->mutable_collective();
    if (name == "gloowatch_training_collective_seq") c->set_seq(static_cast<uint64_t>(value));
    if (name == "gloowatch_training_collective_seconds") {
      c->set_inside_seconds(value);
      c->set_op(value > 0 ? kPrometheusCallName : "");
    }
  }
  // Ranks with step series only (not instrumented) are heard from too.
  for (auto& [name, status] : by_node) {
    for (v1::TrainingJobStatus& t : *status->mutable_training()) {
      if (t.job() == job && !t.has_last_report()) *t.mutable_last_report() = status->now();
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<FetchResult>> FetchJobFromPrometheus(const PrometheusOptions& o,
                                                                const std::string& job) {
  absl::StatusOr<std::vector<FetchResult>> nodes = FetchFromPrometheus(o);
  if (!nodes.ok()) return nodes.status();
  double time = absl::ToUnixMillis(absl::Now()) / 1e3;
  for (const FetchResult& f : *nodes) {
    if (f.status)
      time = absl::ToDoubleSeconds(FromProtoTimestamp(f.status->now()) - absl::UnixEpoch());
  }
  absl::StatusOr<nlohmann::json> result = QueryPrometheus(o, CollectiveQuery(o, job), time);
  if (!result.ok()) return result.status();
  if (absl::Status s = AddCollectives(*result, job, *nodes); !s.ok()) return s;
  return nodes;
}

}  // namespace gloowatch::client
