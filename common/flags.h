// Command-line parsing on top of the absl flags registry. absl's own
// ParseCommandLine exits with status 1 on a bad flag; we need 64 (EX_USAGE)
// and a message, so we drive CommandLineFlag::ParseFrom ourselves.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gloowatch {

struct FlagRules {
  // Flags that may be given several times; their values are joined with ','.
  std::vector<std::string> repeatable;
  // When not empty, the only flags this command takes: another known flag is
  // refused by name ("--job does not apply here").
  std::vector<std::string> allowed;
  // Short names for flags, kubectl style: {"o", "output"} lets -o wide stand
  // for --output wide.
  std::map<std::string, std::string> aliases;
};

// Parses argv[start..argc): "--name=value", "--name value", "--bool",
// "--nobool", dashes or underscores in names; "--" ends flags. Returns the
// positional args; INVALID_ARGUMENT naming the flag otherwise.
absl::StatusOr<std::vector<std::string>> ParseFlags(int argc, char** argv, int start,
                                                    const FlagRules& rules);

// True when argv[start..argc) asks for help (--help, -h) before any "--".
bool WantsHelp(int argc, char** argv, int start);

// "  --name=DEFAULT\n      help" for each of `names`, as --help prints them.
std::string DescribeFlags(const std::vector<std::string>& names);

}  // namespace gloowatch
