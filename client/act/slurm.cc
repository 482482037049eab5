#include "client/act/slurm.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "client/core/run_command.h"

namespace gloowatch::client {
namespace {

// The value of " Key=" up to the next space, or "".
std::string Field(absl::string_view line, absl::string_view key) {
  const std::string needle = absl::StrCat(key, "=");
  size_t at = 0;
  for (;;) {
    at = line.find(needle, at);
    if (at == absl::string_view::npos) return "";
    if (at == 0 || line[at - 1] == ' ') break;
    at += needle.size();
  }
  absl::string_view rest = line.substr(at + needle.size());
  return std::string(rest.substr(0, rest.find(' ')));
}

// Reason= runs to the end of the line, then " [user@2024-05-01T12:00:00]".
std::string ReasonOf(absl::string_view line) {
  const size_t at = line.find(" Reason=");
  if (at == absl::string_view::npos) return "";
  absl::string_view reason = absl::StripAsciiWhitespace(line.substr(at + 8));
  if (absl::EndsWith(reason, "]")) {
    const size_t open = reason.rfind(" [");
    if (open != absl::string_view::npos &&
        reason.substr(open).find('@') != absl::string_view::npos) {
      reason = reason.substr(0, open);
    }
  }
  if (reason == "(null)" || reason == "None") return "";
  return std::string(reason);
}

class Scontrol : public SlurmControl {
 public:
  Scontrol(std::string scontrol, absl::Duration timeout)
      : scontrol_(std::move(scontrol)), timeout_(timeout) {}

  absl::StatusOr<std::vector<SlurmNode>> Nodes() override {
    absl::StatusOr<std::string> out = Run({"show", "node", "-o"});
    if (!out.ok()) return out.status();
    return ParseScontrolNodes(*out);
  }

  absl::Status Drain(const std::string& node, const std::string& reason) override {
    return Run({"update", absl::StrCat("NodeName=", node), "State=DRAIN",
                absl::StrCat("Reason=", reason)})
        .status();
  }

  absl::Status Resume(const std::string& node) override {
    return Run({"update", absl::StrCat("NodeName=", node), "State=RESUME"}).status();
  }

 private:
  absl::StatusOr<std::string> Run(std::vector<std::string> args) {
    args.insert(args.begin(), scontrol_);
    absl::StatusOr<CommandOutput> r = RunProgram(args, timeout_);
    if (!r.ok()) return absl::UnavailableError(r.status().message());
    if (r->exit_code != 0) {
      std::string text(absl::StripAsciiWhitespace(r->output));
      if (text.size() > 300) text.resize(300);
      return absl::UnavailableError(
          absl::StrCat("scontrol ", args[1], " ", args[2], " exited ", r->exit_code, ": ", text));
    }
    return r->output;
  }

  std::string scontrol_;
  absl::Duration timeout_;
};

}  // namespace

bool SlurmNode::drained() const {
  for (absl::string_view flag : absl::StrSplit(state, '+')) {
    if (flag == "DRAIN" || flag == "DRAINING" || flag == "DRAINED") return true;
  }
  return false;
}

std::vector<SlurmNode> ParseScontrolNodes(absl::string_view text) {
  std::vector<SlurmNode> nodes;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StartsWith(line, "NodeName=")) continue;
    SlurmNode n;
    n.name = Field(line, "NodeName");
    n.state = Field(line, "State");
    n.reason = ReasonOf(line);
    if (!n.name.empty()) nodes.push_back(std::move(n));
  }
  return nodes;
}

std::unique_ptr<SlurmControl> ScontrolSlurm(std::string scontrol, absl::Duration timeout) {
  return std::make_unique<Scontrol>(std::move(scontrol), timeout);
}

}  // namespace gloowatch::client
