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
      &ExplainLogCommand(), &JobCommand(),   &ReportStepCommand(),
  };
  return *commands;
}

constexpr char kExitCodes[] =
    "exit codes: 0 healthy / nothing found, 1 degraded / warnings, 2 failed / errors,\n"
    "  64 usage, 65 bad data, 66 input missing, 69 unavailable, 73 cannot create output\n";

std::string ProgramUsage() {
  std::string out =
      "usage: gloowatch COMMAND [flags]   (gloowatch COMMAND --help for its flags)\n"
      "commands:\n";
  for (const Command* c : Commands()) {
    absl::StrAppend(&out, "  ", absl::StrFormat("%-12s", c->name), " ", c->summary, "\n");
  }
  absl::StrAppend(&out, "  --version    print the version\n", kExitCodes,
                  "see docs/client.md for every flag, exit code and JSON schema\n");
  return out;
}

}  // namespace

int RunCli(int argc, char** argv) {
  if (argc < 2) return Usage("missing command");
  const std::string command = argv[1];
  if (command == "help" || command == "--help" || command == "-h") {
    std::cout << ProgramUsage();
    return kExitOk;
  }
  if (command == "--version" || command == "version") {
    std::cout << "gloowatch " << GLOOWATCH_VERSION << "\n";
    return kExitOk;
  }
  for (const Command* command_ptr : Commands()) {
    const Command& c = *command_ptr;
    if (command != c.name) continue;
    if (WantsHelp(argc, argv, 2)) {
      std::cout << "usage: gloowatch " << c.usage << "\n"
                << c.summary << "\n\nflags:\n"
                << DescribeFlags(c.flags) << kExitCodes;
      return kExitOk;
    }
    auto args = ParseFlags(
        argc, argv, 2,
        {{"target", "prometheus_header", "node"}, c.flags, {{"o", "output"}, {"l", "selector"}}});
    if (!args.ok()) {
      return Usage(
          absl::StrCat(c.name, ": ", args.status().message(), " (gloowatch ", c.name, " --help)"));
    }
    const std::string color = absl::GetFlag(FLAGS_color);
    if (color != "auto" && color != "always" && color != "never") {
      return Usage(absl::StrCat("--color must be auto, always or never, got '", color, "'"));
    }
    return c.run(*args);
  }
  return Usage(absl::StrCat("unknown command '", command, "'"));
}

int Usage(const std::string& message) {
  std::cerr << "gloowatch: " << message << "\n" << ProgramUsage();
  return kExitUsage;
}

}  // namespace gloowatch::client
