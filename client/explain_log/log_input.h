// Opens a log as users attach them: plain text, gzip (.gz) or zstd (.zst),
// told apart by their first bytes rather than the name, from a file or from
// stdin. Decompression is streamed, so memory stays flat in the size of the
// log; a compressed stream that ends early (a crashed node's truncated log,
// an interrupted copy) or turns out corrupt delivers the text before that
// point and says so in status().
#pragma once

#include <cstdint>
#include <istream>
#include <memory>
#include <streambuf>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gloowatch::client {

class LogStream : public std::istream {
 public:
  // "text", "gzip" or "zstd".
  virtual const char* format() const = 0;
  // OK while the input decodes cleanly; DATA_LOSS naming what went wrong
  // (truncated, corrupt, a read error) and how much text came before it.
  virtual absl::Status status() const = 0;
  // Bytes of text delivered so far.
  virtual uint64_t text_bytes() const = 0;

 protected:
  explicit LogStream(std::streambuf* buf) : std::istream(buf) {}
};

// `path`, or stdin for "-". NOT_FOUND / PERMISSION_DENIED naming the file
// when it cannot be opened.
absl::StatusOr<std::unique_ptr<LogStream>> OpenLog(const std::string& path);

struct LogPath {
  std::string path;
  // Found by listing a directory given on the command line (rather than
  // named): a file there that is no text log is skipped, not an error.
  bool in_directory = false;
};

// `paths` with every directory replaced by the regular files in it (sorted,
// not recursive); other paths are kept for OpenLog to judge.
absl::StatusOr<std::vector<LogPath>> ExpandLogPaths(const std::vector<std::string>& paths);

}  // namespace gloowatch::client
