// gloowatch explain-log: the root cause of training logs.
#include <unistd.h>

#include <cmath>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/cli/command.h"
#include "client/cli/support.h"
#include "client/explain_log/explain_log.h"
#include "client/explain_log/host_clocks.h"
#include "client/explain_log/log_input.h"
#include "client/sources/cluster_at.h"
#include "client/sources/fetch.h"
#include "common/exit_codes.h"

ABSL_DECLARE_FLAG(std::string, job);

namespace gloowatch::client {
namespace {

// Several ranks' logs of job `job` in one order: each corrected by its
// host's clock offset, from the daemons (--daemons, --config, --cluster) or
// Prometheus. False (with *exit set) when the source cannot be asked.
bool CorrectHostClocks(const std::string& job_name, std::vector<LogExplanation>& logs,
                       HostClocks* clocks, std::string* source_name, int* exit) {
  std::optional<ClusterSource> source = SourceFromFlags(exit);
  if (!source) return false;
  absl::StatusOr<std::vector<FetchResult>> nodes =
      source->prometheus ? FetchFromPrometheus(*source->prometheus)
                         : FetchAll(source->targets, source->deadline, source->credentials);
  if (!nodes.ok()) {
    std::cerr << "gloowatch explain-log: " << nodes.status().message() << "\n";
    *exit = kExitUnavailable;
    return false;
  }
  *source_name = source->prometheus ? "prometheus" : "daemons";
  *clocks = ApplyHostClocks(*nodes, job_name, logs);
  return true;
}

int RunExplainLog(const std::vector<std::string>& args) {
  if (args.empty()) return Usage("explain-log takes FILE... (files, directories, or - for stdin)");
  // The flags first: a bad --prometheus is refused before any log is read.
  int exit = kExitOk;
  std::optional<PrometheusOptions> prometheus;
  if (!absl::GetFlag(FLAGS_prometheus).empty()) {
    prometheus = PrometheusFlags(absl::GetFlag(FLAGS_deadline), &exit);
    if (!prometheus) return exit;
  }
  absl::StatusOr<std::vector<LogPath>> paths = ExpandLogPaths(args);
  if (!paths.ok() || paths->empty()) {
    std::cerr << "gloowatch explain-log: "
              << (paths.ok() ? "no files in the given directories" : paths.status().message())
              << "\n";
    return kExitNoInput;
  }
  std::vector<LogExplanation> logs;
  // Files of a directory that are no text log (an image, a checkpoint, a
  // core dump next to the logs) are skipped; one named is an error.
  nlohmann::json not_logs = nlohmann::json::array();
  for (const LogPath& path : *paths) {
    absl::StatusOr<std::unique_ptr<LogStream>> in = OpenLog(path.path);
    if (!in.ok()) {
      std::cerr << "gloowatch explain-log: " << in.status().message() << "\n";
      return kExitNoInput;
    }
    LogExplanation e = ExplainLog(**in, path.path);
    if (absl::Status unreadable = InputError(e); !unreadable.ok()) {
      if (!path.in_directory) {
        std::cerr << "gloowatch explain-log: " << unreadable.message() << "\n";
        return kExitDataErr;
      }
      std::cerr << "gloowatch explain-log: skipped " << unreadable.message() << "\n";
      not_logs.push_back({{"source", e.source}, {"reason", unreadable.message()}});
      continue;
    }
    if (!e.input_warning.empty()) {
      std::cerr << "gloowatch explain-log: warning: " << e.source << ": " << e.input_warning
                << "; explained the " << e.lines << " lines before it\n";
    }
    logs.push_back(std::move(e));
  }
  if (logs.empty()) {
    std::cerr << "gloowatch explain-log: no text logs in the given directories\n";
    return kExitDataErr;
  }
  // One log keeps the single-log output; several are explained as one job.
  const bool single = logs.size() == 1;
  HostClocks clocks;
  std::string clock_source;
  if (!absl::GetFlag(FLAGS_job).empty() && !single &&
      !CorrectHostClocks(absl::GetFlag(FLAGS_job), logs, &clocks, &clock_source, &exit)) {
    return exit;
  }
  JobExplanation job = ExplainJob(std::move(logs));
  job.clock_reference = clocks.reference;
  job.clock_source = clock_source;
  job.clock_note = clocks.note;
  // What gloowatch saw on the links when the root cause was logged.
  std::optional<ClusterAtTime> cluster;
  std::string skipped;
  if (prometheus) {
    const SignatureHit* root =
        job.root.log < 0 ? nullptr : &job.logs[job.root.log].hits[job.root.hit];
    if (root == nullptr || root->time_kind != LogTimeKind::kDated) {
      skipped =
          root == nullptr ? "no error to look up" : "the root cause's line has no dated timestamp";
    } else {
      absl::StatusOr<ClusterAtTime> at = ClusterAt(*prometheus, root->time_seconds);
      if (!at.ok()) {
        std::cerr << "gloowatch explain-log: " << at.status().message() << "\n";
        return kExitUnavailable;
      }
      cluster = *std::move(at);
    }
  }
  if (absl::GetFlag(FLAGS_json)) {
    nlohmann::json out = single ? ExplanationToJson(job.logs[0]) : JobToJson(job);
    out["skipped"] = not_logs;
    if (prometheus) {
      out["cluster_at_failure"] =
          cluster ? ClusterAtToJson(*cluster) : nlohmann::json{{"skipped", skipped}};
    }
    std::cout << DumpJson(out) << "\n";
  } else {
    std::cout << (single ? RenderExplanationText(job.logs[0]) : RenderJobText(job));
    if (prometheus) {
      std::cout << "\n"
                << (cluster ? RenderClusterAt(*cluster, prometheus->url)
                            : absl::StrCat("cluster view: ", skipped, "\n"));
    }
  }
  return JobExitCode(job);
}

}  // namespace

const Command& ExplainLogCommand() {
  static const auto* command =
      new Command{"explain-log",
                  "explain-log [--json] [--prometheus URL] [--job NAME [--daemons A,B | "
                  "--config FILE | --cluster FILE]] FILE|DIR|- [FILE|DIR ...]",
                  "explain Gloo / PyTorch failures in logs (.gz and .zst too)",
                  RunExplainLog,
                  {"json", "prometheus", "prometheus_job", "prometheus_selector",
                   "prometheus_bearer_token_file", "prometheus_header", "deadline", "tls_ca",
                   "tls_cert", "tls_key", "job", "daemons", "config", "cluster"}};
  return *command;
}

}  // namespace gloowatch::client
