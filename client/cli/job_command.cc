// gloowatch job: which ranks of a training job wait, for whom, and the links.
#include <unistd.h>

#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/cli/command.h"
#include "client/cli/support.h"
#include "client/job/job_view.h"
#include "client/sources/fetch.h"
#include "client/sources/job_prometheus.h"
#include "common/exit_codes.h"

namespace gloowatch::client {
namespace {

int RunJob(const std::vector<std::string>& args) {
  if (args.size() != 1) return Usage("job takes one training job name");
  int exit = kExitUsage;
  std::optional<ClusterSource> source = SourceFromFlags(&exit);
  if (!source) return exit;
  absl::StatusOr<std::vector<FetchResult>> nodes =
      source->prometheus ? FetchJobFromPrometheus(*source->prometheus, args[0])
                         : FetchAll(source->targets, source->deadline, source->credentials);
  if (!nodes.ok()) {
    std::cerr << "gloowatch job: " << nodes.status().message() << "\n";
    return absl::IsInvalidArgument(nodes.status()) ? kExitUsage : kExitUnavailable;
  }
  absl::StatusOr<JobView> view = BuildJobView(*nodes, args[0]);
  if (!view.ok()) {
    std::cerr << "gloowatch job: " << view.status().message() << "\n";
    return absl::IsUnavailable(view.status()) ? kExitUnavailable : kExitNoInput;
  }
  std::cout << (absl::GetFlag(FLAGS_json) ? JobToJson(*view).dump(2) + "\n" : RenderJobText(*view));
  return view->ExitCode();
}

}  // namespace

const Command& JobCommand() {
  static const auto* command = new Command{
      "job",
      "job NAME [--daemons A,B | --config FILE | --cluster FILE | --prometheus URL] [--json]",
      "which ranks of a training job wait in which collective, and for whom, and the links "
      "between them",
      RunJob, With(kSourceFlags, {"json"})};
  return *command;
}

}  // namespace gloowatch::client
