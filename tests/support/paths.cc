#include "tests/support/paths.h"

#include <cstdlib>

namespace gloowatch::testing {
namespace {

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : fallback;
}

}  // namespace

std::string BinaryPath(const std::string& name) {
  return EnvOr("GLOOWATCH_BIN_DIR", ".") + "/" + name;
}

std::string SourceDir() { return EnvOr("GLOOWATCH_SOURCE_DIR", "."); }

std::string SourcePath(const std::string& relative) { return SourceDir() + "/" + relative; }

std::string CliPath() { return EnvOr("GLOOWATCH_CLI", "gloowatch"); }

std::string PythonPath() { return EnvOr("GLOOWATCH_PYTHON", "/usr/bin/python3"); }

}  // namespace gloowatch::testing
