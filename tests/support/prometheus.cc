#include "tests/support/prometheus.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gloowatch::testing {

std::vector<std::string> LoopbackTargets(const std::vector<int>& ports) {
  std::vector<std::string> targets;
  for (int port : ports) targets.push_back(absl::StrCat("127.0.0.1:", port));
  return targets;
}

std::string PrometheusYaml(const std::vector<std::string>& targets, const std::string& rule_file) {
  std::vector<std::string> quoted;
  for (const std::string& target : targets) quoted.push_back(absl::StrCat("'", target, "'"));
  return absl::StrCat(
      "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n  evaluation_interval: 1s\n",
      rule_file.empty() ? "" : absl::StrCat("rule_files:\n  - ", rule_file, "\n"),
      "scrape_configs:\n  - job_name: gloowatch\n    static_configs:\n      - targets: [",
      absl::StrJoin(quoted, ", "), "]\n");
}

std::unique_ptr<Process> StartPrometheus(const std::string& config, const std::string& dir,
                                         int port, const PrometheusOptions& options) {
  std::vector<std::string> argv = options.wrapper;
  argv.insert(argv.end(),
              {kPrometheus, "--config.file=" + config, "--storage.tsdb.path=" + dir + "/tsdb",
               absl::StrCat("--web.listen-address=127.0.0.1:", port), "--log.level=warn"});
  argv.insert(argv.end(), options.extra_flags.begin(), options.extra_flags.end());
  return std::make_unique<Process>(std::move(argv), dir + "/prometheus.log");
}

absl::StatusOr<nlohmann::json> PrometheusQuery(int port, const std::string& promql) {
  absl::StatusOr<std::string> body = HttpGet(port, "/api/v1/query?query=" + UrlEncode(promql));
  if (!body.ok()) return body.status();
  nlohmann::json reply = nlohmann::json::parse(*body, nullptr, /*allow_exceptions=*/false);
  if (reply.is_discarded() || reply.value("status", "") != "success") {
    return absl::UnknownError(*body);
  }
  return reply["data"];
}

}  // namespace gloowatch::testing
