// Runs a program (scontrol, ...) with a bounded wait: its output (stdout and
// stderr together, at most 1 MiB kept) and how it ended. A program that does
// not finish within the timeout is killed (SIGKILL, with its process group).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace gloowatch::client {

struct CommandOutput {
  int exit_code = 0;  // the exit status; 128 + N when killed by signal N
  std::string output;
};

// argv[0] is looked up in PATH. An error when it cannot be started or did
// not finish in time (the message names the program).
absl::StatusOr<CommandOutput> RunProgram(const std::vector<std::string>& argv,
                                         absl::Duration timeout);

}  // namespace gloowatch::client
