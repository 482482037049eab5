// Opens a log as users attach them: plain text, gzip (.gz) or zstd (.zst),
// told apart by their first bytes rather than the name. Decompression is
// streamed, so memory stays flat in the size of the log.
#pragma once

#include <istream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gloowatch::client {

// NOT_FOUND / PERMISSION_DENIED naming the file when it cannot be opened; a
// corrupt compressed stream ends the input early (the lines before it count).
absl::StatusOr<std::unique_ptr<std::istream>> OpenLog(const std::string& path);

// `paths` with every directory replaced by the regular files in it (sorted,
// not recursive); other paths are kept for OpenLog to judge.
absl::StatusOr<std::vector<std::string>> ExpandLogPaths(const std::vector<std::string>& paths);

}  // namespace gloowatch::client
