#include "client/explain_log/log_input.h"

#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <streambuf>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace gloowatch::client {
namespace {

constexpr size_t kChunk = 1 << 16;

// A read-only streambuf over a decompressor: Fill() writes up to `n` bytes
// and returns how many (0 at the end or on a corrupt stream).
class DecompressingBuf : public std::streambuf {
 protected:
  virtual size_t Fill(char* out, size_t n) = 0;

  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    const size_t n = Fill(buffer_, sizeof(buffer_));
    if (n == 0) return traits_type::eof();
    setg(buffer_, buffer_, buffer_ + n);
    return traits_type::to_int_type(*gptr());
  }

 private:
  char buffer_[kChunk];
};

// gzip through zlib's gz* API (it also reads concatenated members).
class GzipBuf final : public DecompressingBuf {
 public:
  explicit GzipBuf(gzFile file) : file_(file) {}
  ~GzipBuf() override { gzclose(file_); }

 private:
  size_t Fill(char* out, size_t n) override {
    const int got = gzread(file_, out, static_cast<unsigned>(n));
    return got > 0 ? static_cast<size_t>(got) : 0;
  }
  gzFile file_;
};

class ZstdBuf final : public DecompressingBuf {
 public:
  explicit ZstdBuf(std::ifstream file) : file_(std::move(file)), stream_(ZSTD_createDStream()) {
    ZSTD_initDStream(stream_);
  }
  ~ZstdBuf() override { ZSTD_freeDStream(stream_); }

 private:
  size_t Fill(char* out, size_t n) override {
    ZSTD_outBuffer output{out, n, 0};
    while (output.pos == 0) {
      if (input_.pos == input_.size) {
        file_.read(in_, sizeof(in_));
        const std::streamsize got = file_.gcount();
        if (got <= 0) return 0;
        input_ = {in_, static_cast<size_t>(got), 0};
      }
      if (ZSTD_isError(ZSTD_decompressStream(stream_, &output, &input_))) return 0;
    }
    return output.pos;
  }
  std::ifstream file_;
  ZSTD_DStream* stream_;
  char in_[kChunk];
  ZSTD_inBuffer input_{in_, 0, 0};
};

// An istream that owns its streambuf.
class OwningStream final : public std::istream {
 public:
  explicit OwningStream(std::unique_ptr<std::streambuf> buf)
      : std::istream(buf.get()), buf_(std::move(buf)) {}

 private:
  std::unique_ptr<std::streambuf> buf_;
};

absl::Status CannotOpen(const std::string& path, int error) {
  const std::string message = absl::StrCat("cannot open '", path, "': ", std::strerror(error));
  return error == ENOENT ? absl::NotFoundError(message) : absl::PermissionDeniedError(message);
}

}  // namespace

absl::StatusOr<std::unique_ptr<std::istream>> OpenLog(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return CannotOpen(path, errno);
  unsigned char magic[4] = {0, 0, 0, 0};
  file.read(reinterpret_cast<char*>(magic), sizeof(magic));
  const std::streamsize got = file.gcount();
  file.clear();
  file.seekg(0);
  if (got >= 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
    gzFile gz = gzopen(path.c_str(), "rb");
    if (gz == nullptr) return CannotOpen(path, errno);
    gzbuffer(gz, kChunk);
    return std::make_unique<OwningStream>(std::make_unique<GzipBuf>(gz));
  }
  if (got == 4 && magic[0] == 0x28 && magic[1] == 0xb5 && magic[2] == 0x2f && magic[3] == 0xfd) {
    return std::make_unique<OwningStream>(std::make_unique<ZstdBuf>(std::move(file)));
  }
  return std::make_unique<std::ifstream>(std::move(file));
}

absl::StatusOr<std::vector<std::string>> ExpandLogPaths(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const std::string& path : paths) {
    std::error_code ec;
    if (path == "-" || !std::filesystem::is_directory(path, ec)) {
      out.push_back(path);
      continue;
    }
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
      if (entry.is_regular_file(ec)) files.push_back(entry.path().string());
    }
    if (ec) return CannotOpen(path, ec.value());
    std::sort(files.begin(), files.end());
    out.insert(out.end(), files.begin(), files.end());
  }
  return out;
}

}  // namespace gloowatch::client
