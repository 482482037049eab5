// Runs a child process with a controlled environment and a hard time limit.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "tests/support/paths.h"

namespace gloowatch::testing {

struct ProcessResult {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
  bool timed_out = false;
  std::string out;
  std::string err;
};

// `env` replaces the environment entirely when set; otherwise the test's own
// environment is inherited. The child is SIGKILLed at `timeout`.
ProcessResult RunProcess(const std::vector<std::string>& argv,
                         const std::optional<std::map<std::string, std::string>>& env,
                         const std::string& stdin_data, absl::Duration timeout);

}  // namespace gloowatch::testing
