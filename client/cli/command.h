// One subcommand of the gloowatch CLI: its name, usage, the flags it takes
// and the function that runs it. Each command lives in its own file
// (NAME_command.cc); cli.cc lists them.
#pragma once

#include <string>
#include <vector>

namespace gloowatch::client {

struct Command {
  const char* name;
  const char* usage;  // after "gloowatch "
  const char* summary;
  int (*run)(const std::vector<std::string>& args);
  std::vector<std::string> flags;
};

const Command& HealthCommand();
const Command& ServeCommand();
const Command& DiagnoseCommand();
const Command& PreflightCommand();
const Command& ExplainLogCommand();
const Command& JobCommand();
const Command& ReportStepCommand();
const Command& NodeCheckCommand();
const Command& ActCommand();
const Command& ProbeCommand();

// Prints "gloowatch: MESSAGE" and the usage to stderr; returns 64.
int Usage(const std::string& message);

}  // namespace gloowatch::client
