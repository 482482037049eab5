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
#include "client/explain_log/log_input.h"
#include "client/sources/cluster_at.h"
#include "common/exit_codes.h"

namespace gloowatch::client {
namespace {

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
  const JobExplanation job = ExplainJob(std::move(logs));
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
                  "explain-log [--json] [--prometheus URL] FILE|DIR|- [FILE|DIR ...]",
                  "explain Gloo / PyTorch failures in logs (.gz and .zst too)",
                  RunExplainLog,
                  {"json", "prometheus", "prometheus_job", "prometheus_selector",
                   "prometheus_bearer_token_file", "prometheus_header", "deadline", "tls_ca"}};
  return *command;
}

}  // namespace gloowatch::client
