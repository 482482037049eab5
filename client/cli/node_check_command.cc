// gloowatch node-check: one line on what is wrong with this host's Gloo
// links, with the exit codes Slurm's HealthCheckProgram / NHC and
// node-problem-detector's custom plugins expect.
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "client/act/culprits.h"
#include "client/cli/act_flags.h"
#include "client/cli/command.h"
#include "client/cli/support.h"
#include "common/exit_codes.h"

ABSL_FLAG(std::string, format, "slurm",
          "node-check: slurm (exit 0 ok or cannot judge, 1 problem: the NHC / "
          "HealthCheckProgram habit) or npd (0 OK, 1 NonOK, 2 Unknown: node-problem-detector's "
          "custom plugin).");

namespace gloowatch::client {
namespace {

// node-problem-detector's custom plugin protocol.
constexpr int kNpdOk = 0, kNpdNonOk = 1, kNpdUnknown = 2;

std::string HostName() {
  char name[256] = {0};
  if (gethostname(name, sizeof(name) - 1) != 0) return "";
  std::string host = name;
  // Slurm and Kubernetes name a node by its short host name.
  return host.substr(0, host.find('.'));
}

int RunNodeCheck(const std::vector<std::string>& args) {
  if (!args.empty()) {
    return Usage(absl::StrCat("node-check takes no arguments, got '", args[0], "'"));
  }
  const std::string format = absl::GetFlag(FLAGS_format);
  if (format != "slurm" && format != "npd") {
    return Usage(absl::StrCat("--format must be slurm or npd, got '", format, "'"));
  }
  const bool npd = format == "npd";
  int exit = kExitUsage;
  std::optional<CulpritOptions> options = CulpritFlags(&exit);
  if (!options) return exit;
  std::optional<ClusterSource> source = SourceFromFlags(&exit);
  if (!source) return npd ? kNpdUnknown : exit;
  // Which node: --node, else NODE_NAME, else the config's own node, else
  // this host.
  std::string node;
  const std::vector<std::string> named = absl::GetFlag(FLAGS_node);
  if (named.size() > 1) return Usage("node-check judges one node: give --node once");
  const char* k8s_node = std::getenv("NODE_NAME");  // Kubernetes' downward API
  if (!named.empty()) {
    node = named.front();
  } else if (k8s_node != nullptr && *k8s_node != '\0') {
    node = k8s_node;
  } else if (!absl::GetFlag(FLAGS_config).empty() && !source->targets.empty()) {
    node = source->targets.front().name;
  } else {
    node = HostName();
  }
  absl::StatusOr<ClusterPicture> c = Observe(*source);
  NodeVerdict v;
  if (!c.ok()) {
    v.kind = NodeVerdict::Kind::kUnknown;
    v.line = ClipLine(absl::StrCat("gloowatch: ", node, ": cannot judge: ", c.status().message()),
                      kMaxVerdictLine);
  } else {
    v = JudgeNode(*c, node, *options);
  }
  std::cout << v.line << std::endl;
  switch (v.kind) {
    case NodeVerdict::Kind::kOk:
      return npd ? kNpdOk : kExitOk;
    case NodeVerdict::Kind::kProblem:
      return npd ? kNpdNonOk : 1;
    case NodeVerdict::Kind::kUnknown:
      // A health check that cannot judge must not take the node out.
      return npd ? kNpdUnknown : kExitOk;
  }
  return kNpdUnknown;
}

}  // namespace

const Command& NodeCheckCommand() {
  static const auto* command = new Command{
      "node-check",
      "node-check [--node NAME] [--format slurm|npd] (--daemons A,B | --config FILE | --cluster "
      "FILE | --prometheus URL) [flags]",
      "one line on this host's Gloo links, for Slurm/NHC and node-problem-detector", RunNodeCheck,
      With(kSourceFlags, {"node", "format", "min_confidence", "min_peers", "max_drained"})};
  return *command;
}

}  // namespace gloowatch::client
