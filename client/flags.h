// Command-line parsing on top of the absl flags registry. absl's own
// ParseCommandLine exits with status 1 on a bad flag; we need 64 (EX_USAGE)
// and a message, so we drive CommandLineFlag::ParseFrom ourselves.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gloowatch::client {

// Parses argv[start..argc): "--name=value", "--name value", "--bool",
// "--nobool"; "--" ends flags. Flags in `repeatable` may be given several
// times and their values are joined with ','. Returns the positional args.
absl::StatusOr<std::vector<std::string>> ParseFlags(int argc, char** argv, int start,
                                                    const std::vector<std::string>& repeatable);

}  // namespace gloowatch::client
