#include "client/cli/cli.h"

#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/cli/command.h"
#include "client/cli/support.h"
#include "common/exit_codes.h"
#include "common/flags.h"
#include "common/version.h"

namespace gloowatch::client {
namespace {

const std::vector<const Command*>& Commands() {
  static const auto* commands = new std::vector<const Command*>{
      &HealthCommand(),     &ServeCommand(), &DiagnoseCommand(),   &PreflightCommand(),
      &ExplainLogCommand(), &JobCommand(),   &ReportStepCommand(), &NodeCheckCommand(),
      &ActCommand(),        &ProbeCommand(),
  };
  return *commands;
}

constexpr char kExitCodes[] =
    "exit codes: 0 healthy / nothing found, 1 degraded / warnings, 2 failed / errors,\n"
    "  64 usage, 65 bad data, 66 input missing, 69 unavailable, 73 cannot create output\n";

std::string ProgramUsage() {
  std::string out =
      "usage: gloowatch COMMAND [flags]   (gloowatch help COMMAND for its flags)\n"
      "commands:\n";
  for (const Command* c : Commands()) {
    absl::StrAppend(&out, "  ", absl::StrFormat("%-12s", c->name), " ", c->summary, "\n");
  }
  absl::StrAppend(&out, "  ", absl::StrFormat("%-12s", "help"), " this list, or help COMMAND\n",
                  "  --version    print the version\n", kExitCodes,
                  "see docs/client.md for every flag, exit code and JSON schema\n");
  return out;
}

std::string CommandHelp(const Command& c) {
  return absl::StrCat("usage: gloowatch ", c.usage, "\n", c.summary, "\n\nflags:\n",
                      DescribeFlags(c.flags), kExitCodes);
}

const Command* FindCommand(const std::string& name) {
  for (const Command* c : Commands()) {
    if (name == c->name) return c;
  }
  return nullptr;
}

int UnknownCommand(const std::string& name) {
  std::vector<std::string> names;
  for (const Command* c : Commands()) names.push_back(c->name);
  const std::string match = ClosestMatch(name, names);
  std::cerr << "gloowatch: unknown command '" << name << "'"
            << (match.empty() ? "" : absl::StrCat("; did you mean '", match, "'?"))
            << "\nrun 'gloowatch help' for the list of commands\n";
  return kExitUsage;
}

// The command being run: its usage follows a usage error's message.
const Command* running = nullptr;

}  // namespace

int RunCli(int argc, char** argv) {
  if (argc < 2) return Usage("missing command");
  const std::string command = argv[1];
  if (command == "help" || command == "--help" || command == "-h") {
    if (command == "help" && argc > 2 && std::string(argv[2]) != "help") {
      const Command* c = FindCommand(argv[2]);
      if (c == nullptr) return UnknownCommand(argv[2]);
      std::cout << CommandHelp(*c);
      return kExitOk;
    }
    std::cout << ProgramUsage();
    return kExitOk;
  }
  if (command == "--version" || command == "version") {
    std::cout << "gloowatch " << GLOOWATCH_VERSION << "\n";
    return kExitOk;
  }
  const Command* c = FindCommand(command);
  if (c == nullptr) return UnknownCommand(command);
  running = c;
  if (WantsHelp(argc, argv, 2)) {
    std::cout << CommandHelp(*c);
    return kExitOk;
  }
  auto args = ParseFlags(
      argc, argv, 2,
      {{"target", "prometheus_header", "node"}, c->flags, {{"o", "output"}, {"l", "selector"}}});
  if (!args.ok()) return Usage(absl::StrCat(c->name, ": ", args.status().message()));
  const std::string color = absl::GetFlag(FLAGS_color);
  if (color != "auto" && color != "always" && color != "never") {
    return Usage(absl::StrCat("--color must be auto, always or never, got '", color, "'"));
  }
  return c->run(*args);
}

// A usage error of a command shows that command's usage line, not the list
// of every command: the message says what was wrong, the line how it goes.
int Usage(const std::string& message) {
  std::cerr << "gloowatch: " << message << "\n";
  if (running == nullptr) {
    std::cerr << ProgramUsage();
  } else {
    std::cerr << "usage: gloowatch " << running->usage << "\n"
              << "(gloowatch help " << running->name << " for its flags)\n";
  }
  return kExitUsage;
}

}  // namespace gloowatch::client
