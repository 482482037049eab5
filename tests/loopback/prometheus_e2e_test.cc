// The monitoring stack end to end: a real Prometheus server scrapes three
// real daemons on loopback with the shipped alert rules loaded. Every
// expression of deploy/prometheus/gloowatch-alerts.yml and of every panel and
// variable of deploy/grafana/gloowatch-dashboard.json (read from the files,
// so they cannot drift) must return data; then a killed daemon must show up
// as GloowatchDaemonDown, naming its node, in /api/v1/alerts.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "proto/gloowatch.grpc.pb.h"
#include "tests/support/daemon_process.h"
#include "tests/support/free_port.h"
#include "tests/support/prometheus.h"
#include "yaml-cpp/yaml.h"

namespace gloowatch::testing {
namespace {

using nlohmann::json;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Expression {
  std::string where;  // "rule GloowatchPeerDown", "panel 'Bandwidth' A", ...
  std::string promql;
  bool must_have_data = true;  // alert annotations only must parse
};

// Grafana variables and interval macros -> what a dashboard with every
// variable at "All" and a short time range would send.
std::string SubstituteGrafana(std::string expr) {
  return absl::StrReplaceAll(expr, {{"${__rate_interval}", "5s"},
                                    {"$__rate_interval", "5s"},
                                    {"${__interval}", "1s"},
                                    {"$__interval", "1s"},
                                    {"${__range}", "1m"},
                                    {"$__range", "1m"},
                                    {"${node}", ".*"},
                                    {"$node", ".*"},
                                    {"${peer}", ".*"},
                                    {"$peer", ".*"},
                                    {"${job}", ".*"},
                                    {"$job", ".*"},
                                    {"${cluster}", ".*"},
                                    {"$cluster", ".*"},
                                    {"${training_job}", ".*"},
                                    {"$training_job", ".*"},
                                    {"${worst_latency_nodes}", ".*"},
                                    {"$worst_latency_nodes", ".*"},
                                    {"${worst_bandwidth_nodes}", ".*"},
                                    {"$worst_bandwidth_nodes", ".*"},
                                    {"${worst_loss_nodes}", ".*"},
                                    {"$worst_loss_nodes", ".*"},
                                    {"${worst_offset_nodes}", ".*"},
                                    {"$worst_offset_nodes", ".*"},
                                    {"${failing_nodes}", ".*"},
                                    {"$failing_nodes", ".*"},
                                    {"${topn}", "10"},
                                    {"$topn", "10"}});
}

// An alert expression is empty while the cluster is healthy. Adding `bool`
// to its top-level comparisons (outside label matchers and strings) turns
// `x > 0.1` into a 0/1 series per input series, so "returns data" checks that
// every metric and label the rule relies on exists.
std::string WithBoolComparisons(const std::string& expr) {
  std::string out;
  int braces = 0;
  char quote = 0;
  for (size_t i = 0; i < expr.size(); ++i) {
    const char c = expr[i];
    out += c;
    if (quote != 0) {
      if (c == '\\' && i + 1 < expr.size())
        out += expr[++i];
      else if (c == quote)
        quote = 0;
      continue;
    }
    if (c == '"' || c == '\'' || c == '`') {
      quote = c;
      continue;
    }
    if (c == '{') ++braces;
    if (c == '}') --braces;
    if (braces > 0) continue;
    const bool two =
        i + 1 < expr.size() && expr[i + 1] == '=' && (c == '=' || c == '!' || c == '<' || c == '>');
    const bool one = c == '<' || c == '>';
    if (!two && !one) continue;
    if (two) out += expr[++i];
    size_t next = expr.find_first_not_of(" \n\t", i + 1);
    if (next == std::string::npos || expr.compare(next, 4, "bool") != 0) out += " bool";
  }
  return out;
}

// Alerts ("alert NAME") and the dashboard's recording rules ("record NAME").
std::vector<Expression> RuleExpressions() {
  std::vector<Expression> out;
  for (const char* file :
       {"deploy/prometheus/gloowatch-alerts.yml", "deploy/prometheus/gloowatch-records.yml"}) {
    YAML::Node rules = YAML::LoadFile(SourcePath(file));
    for (const YAML::Node& group : rules["groups"]) {
      for (const YAML::Node& rule : group["rules"]) {
        const std::string where = rule["alert"] ? "alert " + rule["alert"].as<std::string>()
                                                : "record " + rule["record"].as<std::string>();
        out.push_back({where, WithBoolComparisons(rule["expr"].as<std::string>())});
      }
    }
  }
  return out;
}

void CollectPanelTargets(const json& panels, std::vector<Expression>* out) {
  for (const json& panel : panels) {
    if (panel.contains("panels")) CollectPanelTargets(panel["panels"], out);
    if (!panel.contains("targets")) continue;
    for (const json& target : panel["targets"]) {
      if (!target.contains("expr")) continue;
      out->push_back(
          {absl::StrCat("panel '", panel.value("title", "?"), "' ", target.value("refId", "?")),
           SubstituteGrafana(target["expr"].get<std::string>())});
    }
  }
}

std::vector<Expression> DashboardExpressions() {
  std::vector<Expression> out;
  const json dashboard =
      json::parse(ReadFile(SourcePath("deploy/grafana/gloowatch-dashboard.json")));
  CollectPanelTargets(dashboard["panels"], &out);
  for (const json& var : dashboard["templating"]["list"]) {
    if (var.value("type", "") != "query") continue;
    std::string query = var["query"].is_object() ? var["query"].value("query", "")
                                                 : var["query"].get<std::string>();
    // query_result(expr) -> expr; label_values(selector, label) -> the
    // label's values as a PromQL query.
    const std::string result_prefix = "query_result(";
    if (absl::StartsWith(query, result_prefix) && absl::EndsWith(query, ")")) {
      query = query.substr(result_prefix.size(), query.size() - result_prefix.size() - 1);
    }
    const std::string prefix = "label_values(";
    if (absl::StartsWith(query, prefix) && absl::EndsWith(query, ")")) {
      const std::string args = query.substr(prefix.size(), query.size() - prefix.size() - 1);
      const size_t comma = args.rfind(',');
      if (comma == std::string::npos) {
        ADD_FAILURE() << "cannot read variable query " << query;
        continue;
      }
      std::string label(absl::StripAsciiWhitespace(args.substr(comma + 1)));
      query = absl::StrCat("group by (", label, ") (", args.substr(0, comma), ")");
    }
    out.push_back({"variable $" + var.value("name", "?"), SubstituteGrafana(query)});
  }
  for (const json& annotation : dashboard["annotations"]["list"]) {
    if (!annotation.contains("expr")) continue;
    // Alert annotations are empty while nothing fires: they only must parse.
    out.push_back({"annotation " + annotation.value("name", "?"),
                   SubstituteGrafana(annotation["expr"].get<std::string>()), false});
  }
  return out;
}

class PrometheusE2ETest : public ::testing::Test {
 protected:
  PrometheusE2ETest() : cluster_(3, FastLoopbackYaml("10Gbps")), prom_port_(FreePort()) {}

  void SetUp() override {
    if (access(kPrometheus, X_OK) != 0) GTEST_SKIP() << kPrometheus << " is not installed";
    for (int i = 0; i < 3; ++i) cluster_.Start(i);
    const std::string config = dir_.Write(
        "prometheus.yml", PrometheusYaml(LoopbackTargets({cluster_.node(0).metrics_port,
                                                          cluster_.node(1).metrics_port,
                                                          cluster_.node(2).metrics_port}),
                                         SourcePath("deploy/prometheus/gloowatch-*.yml")));
    prometheus_ = StartPrometheus(config, dir_.path(), prom_port_);
    ASSERT_TRUE(WaitFor(
        [&] {
          auto body = HttpGet(prom_port_, "/-/ready");
          return body.ok() && absl::StrContains(*body, "Ready");
        },
        absl::Seconds(20)))
        << "Prometheus not ready; log:\n"
        << prometheus_->Log();
  }

  void TearDown() override {
    // Prometheus first (it scrapes the daemons), SIGKILL: nothing to keep.
    prometheus_.reset();
  }

  // /api/v1/query; the "data" object, or null on an error (kept in *error).
  json Query(const std::string& promql, std::string* error) {
    absl::StatusOr<json> data = PrometheusQuery(prom_port_, promql);
    if (!data.ok()) {
      *error = std::string(data.status().message());
      return nullptr;
    }
    return *data;
  }

  static bool HasData(const json& data) {
    if (data.is_null()) return false;
    const json& result = data["result"];
    if (data.value("resultType", "") == "scalar" || data.value("resultType", "") == "string") {
      return result.is_array() && result.size() == 2;
    }
    return result.is_array() && !result.empty();
  }

  // Reports one training step per rank through the CLI, as a training
  // process would. False (with the CLI's output) when the daemon refuses.
  bool ReportSteps(int64_t step, std::string* output) {
    bool all_ok = true;
    for (int rank = 0; rank < 2; ++rank) {
      const std::string log = absl::StrCat(dir_.path(), "/report-", rank, "-", step, ".log");
      Process cli({BinaryPath("client/gloowatch"), "report-step", "--daemon", cluster_.grpc(rank),
                   "--job", "e2e-llm", "--rank", std::to_string(rank), "--step",
                   std::to_string(step), "--step-seconds", "1.0", "--comm-seconds", "0.4"},
                  log);
      if (cli.Wait(absl::Seconds(10)) != 0) {
        all_ok = false;
        *output = cli.Log();
      }
    }
    return all_ok;
  }

  // Where each rank stands in its collectives, as gloowatch_report.instrument
  // sends it with every batch, so gloowatch_training_collective_* exist.
  // A rank of another job inside a collective whose process is then killed:
  // that job ends as died_in_collective, so gloowatch_training_job_ended
  // (GloowatchTrainingJobDied's series) exists.
  bool ReportARankThatDiesInACollective(std::string* output) {
    Process rank({"/bin/sleep", "300"}, absl::StrCat(dir_.path(), "/dying-rank.log"));
    std::ifstream stat(absl::StrCat("/proc/", rank.pid(), "/stat"));
    const std::string text((std::istreambuf_iterator<char>(stat)), {});
    // Fields from 3 on follow the ')' that ends the command; starttime is 22.
    const std::vector<std::string> fields = absl::StrSplit(text.substr(text.rfind(')') + 2), ' ');
    if (fields.size() < 20) {
      *output = "cannot read the start time of pid " + std::to_string(rank.pid());
      return false;
    }
    auto stub = v1::Status::NewStub(
        grpc::CreateChannel(cluster_.grpc(0), grpc::InsecureChannelCredentials()));
    v1::ReportStepsRequest request;
    v1::CollectiveReport* c = request.mutable_collective();
    c->set_job("e2e-killed");
    c->set_rank(0);
    c->mutable_state()->set_op("all_reduce");
    c->mutable_state()->set_seq(1);
    c->mutable_state()->set_group("world");
    c->set_pid(static_cast<uint32_t>(rank.pid()));
    c->set_start_time_ticks(std::stoull(fields[19]));
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    v1::ReportStepsResponse response;
    grpc::Status s = stub->ReportSteps(&context, request, &response);
    rank.Signal(SIGKILL);
    rank.Wait(absl::Seconds(5));
    if (!s.ok() || !response.collective_error().empty()) {
      *output = absl::StrCat("ReportSteps for the killed rank: ", s.error_message(),
                             response.collective_error());
      return false;
    }
    return true;
  }

  bool ReportCollectives(uint64_t seq, std::string* output) {
    for (int rank = 0; rank < 2; ++rank) {
      auto stub = v1::Status::NewStub(
          grpc::CreateChannel(cluster_.grpc(rank), grpc::InsecureChannelCredentials()));
      v1::ReportStepsRequest request;
      v1::CollectiveReport* c = request.mutable_collective();
      c->set_job("e2e-llm");
      c->set_rank(rank);
      c->mutable_state()->set_op("all_reduce");
      c->mutable_state()->set_seq(seq);
      c->mutable_state()->set_group("world");
      c->mutable_state()->set_bytes(1024);
      c->mutable_state()->set_inside_seconds(0.01);
      grpc::ClientContext context;
      context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
      v1::ReportStepsResponse response;
      grpc::Status s = stub->ReportSteps(&context, request, &response);
      if (!s.ok() || !response.collective_error().empty()) {
        *output = absl::StrCat("ReportSteps with a collective: ", s.error_message(),
                               response.collective_error());
        return false;
      }
    }
    return true;
  }

  TempDir dir_;
  LoopbackCluster cluster_;
  int prom_port_;
  std::unique_ptr<Process> prometheus_;
};

TEST_F(PrometheusE2ETest, EveryRuleAndPanelExpressionHasDataAndAKilledDaemonAlerts) {
  const absl::Time start = absl::Now();
  std::vector<Expression> expressions = RuleExpressions();
  ASSERT_EQ(std::count_if(expressions.begin(), expressions.end(),
                          [](const Expression& e) { return absl::StartsWith(e.where, "alert "); }),
            11)
      << "the alert set changed: update this test and the docs";
  const std::vector<Expression> dashboard = DashboardExpressions();
  ASSERT_GE(dashboard.size(), 15u);
  // (Rules may hold `$1`, a label_replace group; only dashboard queries
  // have Grafana variables.)
  for (const Expression& e : dashboard) {
    ASSERT_EQ(e.promql.find('$'), std::string::npos)
        << e.where << ": unknown Grafana variable in " << e.promql;
  }
  expressions.insert(expressions.end(), dashboard.begin(), dashboard.end());

  // Training reports (Status.ReportStep through the CLI), one step per
  // rank about every second, so that the training counters have rates.
  // The daemon implements them: a refusal (UNIMPLEMENTED included) fails.
  std::string report_error;
  const bool reports_work = ReportSteps(0, &report_error) && ReportCollectives(1, &report_error) &&
                            ReportARankThatDiesInACollective(&report_error);
  ASSERT_TRUE(reports_work) << "training reports failed:\n" << report_error;

  // Every expression must return data within the time the cluster needs to
  // measure everything (bandwidth comes first after up to 5 s).
  std::set<size_t> missing;
  for (size_t i = 0; i < expressions.size(); ++i) missing.insert(i);
  std::map<size_t, std::string> errors;
  int64_t step = 1;
  const absl::Time deadline = absl::Now() + absl::Seconds(45);
  while (!missing.empty() && absl::Now() < deadline) {
    // (A later report that fails shows as an expression without data.)
    ReportSteps(step, &report_error);
    ReportCollectives(static_cast<uint64_t>(++step), &report_error);
    for (auto it = missing.begin(); it != missing.end();) {
      const Expression& e = expressions[*it];
      std::string error;
      json data = Query(e.promql, &error);
      if (!error.empty()) errors[*it] = error;
      if (!data.is_null() && (!e.must_have_data || HasData(data))) {
        errors.erase(*it);
        it = missing.erase(it);
      } else {
        ++it;
      }
    }
    if (!missing.empty()) absl::SleepFor(absl::Milliseconds(700));
  }
  for (size_t i : missing) {
    ADD_FAILURE() << expressions[i].where << ": no data from\n  " << expressions[i].promql
                  << (errors.count(i) ? "\n  error: " + errors[i] : "");
  }
  if (!missing.empty()) {
    for (int i = 0; i < 3; ++i) {
      ADD_FAILURE() << cluster_.node(i).name << " log:\n" << cluster_.process(i)->Log();
    }
    FAIL() << "Prometheus log:\n" << prometheus_->Log();
  }
  std::cout << "all " << expressions.size() << " expressions have data after "
            << absl::FormatDuration(absl::Now() - start) << "\n";

  // The rules evaluate without errors.
  auto rules = HttpGet(prom_port_, "/api/v1/rules");
  ASSERT_TRUE(rules.ok());
  int rule_count = 0;
  const json rules_reply = json::parse(*rules);
  for (const json& group : rules_reply["data"]["groups"]) {
    for (const json& rule : group["rules"]) {
      if (rule.value("type", "") == "alerting") ++rule_count;
      EXPECT_EQ(rule.value("health", ""), "ok") << rule.dump();
    }
  }
  EXPECT_EQ(rule_count, 11);

  // Kill node-c: Prometheus fails to scrape it at once, and
  // GloowatchDaemonDown goes pending at the next rule evaluation, naming the
  // host as node and peer (its last build_info) for the inhibit rules (its
  // `for:` is 5m, so firing would take too long for a test; pending proves
  // the rule matches). Its peers' GloowatchPeerDown for it is held back
  // while it is not scraped (a link down while the peer's daemon is scraped
  // is covered by the promtool tests).
  cluster_.Kill(2, SIGKILL);
  std::string seen;
  const bool alerted = WaitFor(
      [&] {
        auto body = HttpGet(prom_port_, "/api/v1/alerts");
        if (!body.ok()) return false;
        json reply = json::parse(*body, nullptr, false);
        if (reply.is_discarded()) return false;
        seen.clear();
        for (const json& alert : reply["data"]["alerts"]) {
          const json& labels = alert["labels"];
          const std::string state = alert.value("state", "");
          absl::StrAppend(&seen, labels.dump(), " ", state, "\n");
          if (labels.value("alertname", "") == "GloowatchDaemonDown" &&
              labels.value("node", "") == "node-c" && labels.value("peer", "") == "node-c" &&
              (state == "pending" || state == "firing")) {
            return true;
          }
        }
        return false;
      },
      absl::Seconds(20));
  EXPECT_TRUE(alerted) << "GloowatchDaemonDown for node-c not pending/firing; alerts:\n" << seen;
  std::cout << "whole test took " << absl::FormatDuration(absl::Now() - start) << "\n";
}

}  // namespace
}  // namespace gloowatch::testing
