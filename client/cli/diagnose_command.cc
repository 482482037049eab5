// gloowatch diagnose: connectivity and environment checks of a Gloo setup.
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/cli/command.h"
#include "client/cli/support.h"
#include "client/diagnose/diagnose.h"
#include "common/exit_codes.h"

ABSL_FLAG(std::string, report_path, "",
          "diagnose: also write the JSON report to FILE (- = the JSON on stdout and the text on "
          "stderr); without it the report goes to stdout only.");
ABSL_FLAG(std::string, ports, "29500-29600", "diagnose: port range to scan on each peer host.");
ABSL_FLAG(std::vector<std::string>, target, {}, "diagnose: extra host to scan (repeatable).");
ABSL_FLAG(std::string, training_config, "", "diagnose: training config YAML to audit.");
ABSL_FLAG(absl::Duration, connect_timeout, absl::Seconds(1), "diagnose: per-port connect timeout.");
ABSL_FLAG(absl::Duration, scan_timeout, absl::Seconds(30),
          "diagnose: total time bound per host scan.");
ABSL_FLAG(int, scan_concurrency, 64, "diagnose: connects in flight.");

namespace gloowatch::client {
namespace {

int RunDiagnoseCommand(const std::vector<std::string>& args) {
  if (!args.empty()) return Usage(absl::StrCat("diagnose takes no arguments, got '", args[0], "'"));
  DiagnoseOptions o;
  const std::string report_path = absl::GetFlag(FLAGS_report_path);
  auto daemons = DaemonTargets(false);
  if (!daemons.ok()) return InputError(daemons.status());
  o.daemons = *daemons;
  o.targets = absl::GetFlag(FLAGS_target);
  auto range = ParsePortRange(absl::GetFlag(FLAGS_ports));
  if (!range.ok()) return Usage(std::string(range.status().message()));
  std::tie(o.port_low, o.port_high) = *range;
  o.ifname = absl::GetFlag(FLAGS_ifname);
  o.training_config = absl::GetFlag(FLAGS_training_config);
  o.deadline = absl::GetFlag(FLAGS_deadline);
  auto credentials = Credentials();
  if (!credentials.ok()) return InputError(credentials.status());
  o.credentials = *credentials;
  o.scan.connect_timeout = absl::GetFlag(FLAGS_connect_timeout);
  o.scan.total_timeout = absl::GetFlag(FLAGS_scan_timeout);
  o.scan.concurrency = absl::GetFlag(FLAGS_scan_concurrency);
  if (o.scan.concurrency < 1 || o.scan.concurrency > 1024) {
    return Usage("--scan_concurrency must be 1..1024");
  }
  o.env = CurrentEnvironment();
  DiagnoseReport report = RunDiagnose(o);
  if (report_path == "-") {
    // The JSON on stdout for a pipe; the human report moves to stderr.
    std::cout << DumpJson(ReportToJson(report, o)) << "\n";
    std::cerr << RenderReportText(report, UseColor(STDERR_FILENO));
    return report.ExitCode();
  }
  if (!report_path.empty()) {
    std::ofstream out(report_path, std::ios::trunc);
    out << DumpJson(ReportToJson(report, o)) << "\n";
    if (!out) {
      std::cerr << "gloowatch diagnose: cannot write '" << report_path
                << "': " << std::strerror(errno) << "\n";
      return kExitCantCreate;
    }
  }
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << DumpJson(ReportToJson(report, o)) << "\n";
  } else {
    std::cout << RenderReportText(report, UseColor(STDOUT_FILENO))
              << (report_path.empty() ? "" : absl::StrCat("report: ", report_path, "\n"));
  }
  return report.ExitCode();
}

}  // namespace

const Command& DiagnoseCommand() {
  static const auto* command = new Command{
      "diagnose", "diagnose [--daemons A,B | --config FILE | --cluster FILE] [--json] [flags]",
      "connectivity and environment checks of a Gloo setup", RunDiagnoseCommand,
      With(kDaemonFlags,
           {"json", "color", "report_path", "ports", "ifname", "target", "training_config",
            "connect_timeout", "scan_timeout", "scan_concurrency"})};
  return *command;
}

}  // namespace gloowatch::client
