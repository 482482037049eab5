// Where the programs and files under test are, from the environment each
// ctest entry sets (tests/CMakeLists.txt and its folders).
#pragma once

#include <string>

namespace gloowatch::testing {

// Path of a binary built by this project (env GLOOWATCH_BIN_DIR).
std::string BinaryPath(const std::string& name);

// The source tree (env GLOOWATCH_SOURCE_DIR).
std::string SourceDir();
// Absolute path of a file in the source tree: __FILE__ may be relative, and a
// path handed to another program (a Prometheus config's rule_files) must not
// depend on our working directory.
std::string SourcePath(const std::string& relative);

// The gloowatch binary under test (env GLOOWATCH_CLI).
std::string CliPath();

// The Python that runs torch jobs and the reporter (env GLOOWATCH_PYTHON).
std::string PythonPath();

}  // namespace gloowatch::testing
