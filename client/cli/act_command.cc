// gloowatch act: drains in Slurm the culprit health names, behind guard
// rails, and resumes what it drained once the node has been healthy for a
// while (client/act/act_plan.h). Run by a timer on a host that may run
// scontrol update.
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/act/act_plan.h"
#include "client/act/slurm.h"
#include "client/cli/act_flags.h"
#include "client/cli/command.h"
#include "client/cli/support.h"
#include "common/exit_codes.h"

ABSL_FLAG(bool, slurm, false, "act: drain and resume nodes in Slurm (scontrol).");
ABSL_FLAG(bool, dry_run, false, "act: print what it would do; change nothing.");
ABSL_FLAG(absl::Duration, healthy_for, absl::Minutes(10),
          "act: resume a node it drained after it has been healthy this long.");
ABSL_FLAG(std::string, state_file, "/var/lib/gloowatch-act/state.json",
          "act: where it remembers its drains and since when each node is healthy.");
ABSL_FLAG(std::string, reason_prefix, "gloowatch:",
          "act: the start of the Slurm reason of its drains; only such drains are resumed.");
ABSL_FLAG(std::string, scontrol, "scontrol", "act: the scontrol program.");

namespace gloowatch::client {
namespace {

constexpr absl::Duration kScontrolTimeout = absl::Seconds(10);

int RunAct(const std::vector<std::string>& args) {
  if (!args.empty()) return Usage(absl::StrCat("act takes no arguments, got '", args[0], "'"));
  if (!absl::GetFlag(FLAGS_slurm)) {
    return Usage(
        "act needs --slurm (on Kubernetes, run node-check --format npd under "
        "node-problem-detector: the NodeCondition is the action)");
  }
  ActOptions o;
  int exit = kExitUsage;
  std::optional<CulpritOptions> culprits = CulpritFlags(&exit);
  if (!culprits) return exit;
  o.culprits = *culprits;
  o.healthy_for = absl::GetFlag(FLAGS_healthy_for);
  if (o.healthy_for < absl::ZeroDuration() || o.healthy_for > absl::Hours(24 * 7)) {
    return Usage("--healthy-for must be in [0, 7d]");
  }
  o.reason_prefix = absl::GetFlag(FLAGS_reason_prefix);
  if (o.reason_prefix.size() < 3 || o.reason_prefix.find_first_of("\n\r") != std::string::npos) {
    return Usage("--reason-prefix must be at least 3 characters on one line");
  }
  const std::vector<std::string> named = absl::GetFlag(FLAGS_node);
  if (named.size() > 1) return Usage("act --node takes one node");
  if (!named.empty()) o.only_node = named.front();
  const bool dry = absl::GetFlag(FLAGS_dry_run);
  const std::string state_path = absl::GetFlag(FLAGS_state_file);

  std::optional<ClusterSource> source = SourceFromFlags(&exit);
  if (!source) return exit;
  absl::StatusOr<ActState> state = LoadActState(state_path);
  if (!state.ok()) {
    std::cerr << "gloowatch act: " << state.status().message() << "\n";
    return absl::IsInvalidArgument(state.status()) ? kExitDataErr : kExitUnavailable;
  }
  std::unique_ptr<SlurmControl> slurm =
      ScontrolSlurm(absl::GetFlag(FLAGS_scontrol), kScontrolTimeout);
  absl::StatusOr<std::vector<SlurmNode>> nodes = slurm->Nodes();
  if (!nodes.ok()) {
    std::cerr << "gloowatch act: " << nodes.status().message() << "\n";
    return kExitUnavailable;
  }
  absl::StatusOr<ClusterPicture> c = Observe(*source);
  if (!c.ok()) {
    std::cerr << "gloowatch act: " << c.status().message() << "\n";
    return kExitUnavailable;
  }
  ActPlan plan = PlanActions(*c, *nodes, *state, o, absl::Now());
  const char* would = dry ? "would " : "";
  int code = plan.held_back ? kExitDegraded : kExitOk;
  for (const ActAction& a : plan.actions) {
    const bool drain = a.kind == ActAction::Kind::kDrain;
    std::cout << would << (drain ? "drain " : "resume ") << a.node << ": " << a.reason << std::endl;
    if (dry) continue;
    absl::Status done = drain ? slurm->Drain(a.node, a.reason) : slurm->Resume(a.node);
    if (!done.ok()) {
      std::cerr << "gloowatch act: " << done.message() << "\n";
      // Not done: keep the state as it was for this node.
      if (drain) {
        plan.next.nodes.erase(a.node);
      } else if (auto it = state->nodes.find(a.node); it != state->nodes.end()) {
        plan.next.nodes[a.node] = it->second;
      }
      code = kExitUnavailable;
    }
  }
  for (const std::string& note : plan.notes) std::cout << note << std::endl;
  if (plan.actions.empty() && plan.notes.empty()) {
    std::cout << "nothing to do: " << c->nodes.size() << " nodes, no culprit" << std::endl;
  }
  if (!dry) {
    if (absl::Status s = SaveActState(state_path, plan.next); !s.ok()) {
      std::cerr << "gloowatch act: " << s.message() << "\n";
      return kExitCantCreate;
    }
  }
  return code;
}

}  // namespace

const Command& ActCommand() {
  static const auto* command = new Command{
      "act",
      "act --slurm [--dry-run] [--min-confidence 0.9] [--min-peers 2] [--max-drained 2|10%] "
      "[--healthy-for 10m] (--daemons A,B | --config FILE | --cluster FILE | --prometheus URL)",
      "drain the culprit in Slurm behind guard rails; resume its own drains once healthy", RunAct,
      With(kSourceFlags, {"slurm", "dry_run", "node", "min_confidence", "min_peers", "max_drained",
                          "healthy_for", "state_file", "reason_prefix", "scontrol"})};
  return *command;
}

}  // namespace gloowatch::client
