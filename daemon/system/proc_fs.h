// Reading /proc (or a test's stand-in for it): whole small files, and the
// entries of a directory.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gloowatch {

// The whole file; NotFound when it cannot be opened.
absl::StatusOr<std::string> ReadProcFile(const std::string& path);

// The names in a directory, "." and ".." left out; NotFound when it cannot
// be listed.
absl::StatusOr<std::vector<std::string>> ListProcDir(const std::string& dir);

}  // namespace gloowatch
