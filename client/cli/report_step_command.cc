// gloowatch report-step: one training step's report to the local daemon.
#include <unistd.h>

#include <cmath>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/cli/command.h"
#include "client/cli/support.h"
#include "client/sources/fetch.h"
#include "common/exit_codes.h"

ABSL_FLAG(std::string, daemon, "127.0.0.1:7601", "report-step: the local daemon.");
ABSL_FLAG(std::string, job, "",
          "report-step: job name; explain-log: the job whose ranks' hosts order the logs.");
ABSL_FLAG(int, rank, -1, "report-step: rank (>= 0).");
ABSL_FLAG(int64_t, step, -1, "report-step: step number (>= 0).");
// NaN = not given: a negative value is given, and rejected by the daemon with
// its own message.
ABSL_FLAG(double, step_seconds, std::numeric_limits<double>::quiet_NaN(),
          "report-step: wall time of the step.");
ABSL_FLAG(double, comm_seconds, std::numeric_limits<double>::quiet_NaN(),
          "report-step: time spent in collectives during the step.");

namespace gloowatch::client {
namespace {

int RunReportStep(const std::vector<std::string>& args) {
  if (!args.empty())
    return Usage(absl::StrCat("report-step takes no arguments, got '", args[0], "'"));
  auto daemon = ParseEndpoint(absl::GetFlag(FLAGS_daemon));
  if (!daemon.ok()) return Usage(absl::StrCat("--daemon: ", daemon.status().message()));
  // Only presence is checked here; the daemon validates values and its
  // INVALID_ARGUMENT message is shown as is.
  if (absl::GetFlag(FLAGS_job).empty()) return Usage("report-step needs --job");
  if (absl::GetFlag(FLAGS_rank) < 0) return Usage("report-step needs --rank >= 0");
  if (absl::GetFlag(FLAGS_step) < 0) return Usage("report-step needs --step >= 0");
  if (std::isnan(absl::GetFlag(FLAGS_step_seconds)))
    return Usage("report-step needs --step-seconds");
  if (std::isnan(absl::GetFlag(FLAGS_comm_seconds)))
    return Usage("report-step needs --comm-seconds");
  v1::ReportStepRequest r;
  r.set_job(absl::GetFlag(FLAGS_job));
  r.set_rank(absl::GetFlag(FLAGS_rank));
  r.set_step(static_cast<uint64_t>(absl::GetFlag(FLAGS_step)));
  r.set_step_seconds(absl::GetFlag(FLAGS_step_seconds));
  r.set_communication_seconds(absl::GetFlag(FLAGS_comm_seconds));
  auto credentials = Credentials();
  if (!credentials.ok()) return InputError(credentials.status());
  absl::Status s = SendReportStep(*daemon, r, absl::GetFlag(FLAGS_deadline), *credentials);
  if (s.ok()) return kExitOk;
  std::cerr << "gloowatch report-step: " << daemon->ToString() << ": " << s.message() << "\n";
  return absl::IsInvalidArgument(s) || absl::IsResourceExhausted(s) ? kExitDataErr
                                                                    : kExitUnavailable;
}

}  // namespace

const Command& ReportStepCommand() {
  static const auto* command =
      new Command{"report-step",
                  "report-step --job J --rank R --step N --step-seconds S --comm-seconds C [flags]",
                  "send one training-step report to the local daemon",
                  RunReportStep,
                  {"daemon", "job", "rank", "step", "step_seconds", "comm_seconds", "deadline",
                   "tls_ca", "tls_cert", "tls_key"}};
  return *command;
}

}  // namespace gloowatch::client
