#include "client/explain_log/log_input.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"

namespace gloowatch::client {
namespace {

constexpr size_t kChunk = 1 << 16;

// The input's bytes from a file descriptor, after the few that were read
// ahead to tell the format.
class ByteSource {
 public:
  ByteSource(int fd, bool owned) : fd_(fd), owned_(owned) {}
  ~ByteSource() {
    if (owned_) close(fd_);
  }
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;

  // Up to `n` bytes; 0 at the end or after a read error (error() says).
  size_t Read(char* out, size_t n) {
    if (taken_ < peeked_.size()) {
      const size_t k = std::min(n, peeked_.size() - taken_);
      std::memcpy(out, peeked_.data() + taken_, k);
      taken_ += k;
      return k;
    }
    return ReadFd(out, n);
  }

  // The first `n` bytes (fewer at the end), kept for Read to deliver.
  const std::string& Peek(size_t n) {
    char buf[16];
    while (peeked_.size() < n) {
      const size_t got = ReadFd(buf, std::min(sizeof(buf), n - peeked_.size()));
      if (got == 0) break;
      peeked_.append(buf, got);
    }
    return peeked_;
  }

  int error() const { return error_; }

 private:
  size_t ReadFd(char* out, size_t n) {
    while (error_ == 0) {
      const ssize_t got = read(fd_, out, n);
      if (got >= 0) return static_cast<size_t>(got);
      if (errno != EINTR) error_ = errno;
    }
    return 0;
  }

  int fd_;
  bool owned_;
  std::string peeked_;
  size_t taken_ = 0;
  int error_ = 0;
};

// A read-only streambuf over a decoder: Fill() writes up to `n` bytes of
// text and returns how many (0 at the end, clean or not: status() tells).
class DecodingBuf : public std::streambuf {
 public:
  explicit DecodingBuf(std::unique_ptr<ByteSource> source) : source_(std::move(source)) {}
  const absl::Status& status() const { return status_; }
  uint64_t text_bytes() const { return text_bytes_; }

 protected:
  virtual size_t Fill(char* out, size_t n) = 0;

  // A read error ends the input like a truncation.
  size_t ReadInput(char* out, size_t n) {
    const size_t got = source_->Read(out, n);
    if (got == 0 && source_->error() != 0 && status_.ok()) {
      Fail(absl::StrCat("reading failed (", std::strerror(source_->error()), ")"));
    }
    return got;
  }
  void Fail(const std::string& what) {
    if (!status_.ok()) return;
    status_ = absl::DataLossError(absl::StrCat(what, " after ", text_bytes_, " bytes of text"));
  }
  ByteSource& source() { return *source_; }

  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    const size_t n = Fill(buffer_, sizeof(buffer_));
    if (n == 0) return traits_type::eof();
    text_bytes_ += n;
    setg(buffer_, buffer_, buffer_ + n);
    return traits_type::to_int_type(*gptr());
  }

 private:
  std::unique_ptr<ByteSource> source_;
  absl::Status status_;
  uint64_t text_bytes_ = 0;
  char buffer_[kChunk];
};

class PlainBuf final : public DecodingBuf {
 public:
  using DecodingBuf::DecodingBuf;

 private:
  size_t Fill(char* out, size_t n) override { return ReadInput(out, n); }
};

// gzip through zlib's inflate, member after member (gzip -c a b > c); what
// follows the last member must be nothing or NUL padding.
class GzipBuf final : public DecodingBuf {
 public:
  explicit GzipBuf(std::unique_ptr<ByteSource> source) : DecodingBuf(std::move(source)) {
    std::memset(&z_, 0, sizeof(z_));
    ok_ = inflateInit2(&z_, 16 + MAX_WBITS) == Z_OK;
    if (!ok_) Fail("zlib could not start");
  }
  ~GzipBuf() override {
    if (ok_) inflateEnd(&z_);
  }

 private:
  size_t Fill(char* out, size_t n) override {
    if (!ok_ || done_) return 0;
    z_.next_out = reinterpret_cast<Bytef*>(out);
    z_.avail_out = static_cast<uInt>(n);
    while (z_.avail_out == n && !done_) {
      if (z_.avail_in == 0 && !input_ended_) input_ended_ = !Refill();
      if (member_ended_) {
        if (z_.avail_in > 0) {
          StartNextMember();
        } else if (input_ended_) {
          done_ = true;
        }
        continue;
      }
      // With no input left this still writes what inflate holds.
      const int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        member_ended_ = true;
      } else if (rc == Z_BUF_ERROR && input_ended_ && z_.avail_in == 0) {
        Fail("the gzip stream ends early (truncated)");
        done_ = true;
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        Fail(absl::StrCat("the gzip stream is corrupt (zlib: ", z_.msg ? z_.msg : "error", ")"));
        done_ = true;
      }
    }
    return n - z_.avail_out;
  }

  bool Refill() {
    const size_t got = ReadInput(in_, sizeof(in_));
    z_.next_in = reinterpret_cast<Bytef*>(in_);
    z_.avail_in = static_cast<uInt>(got);
    return got > 0;
  }

  // After a member: another member, or padding, or bytes that are no gzip.
  void StartNextMember() {
    const Bytef* p = z_.next_in;
    if (p[0] == 0) {
      while (z_.avail_in > 0 && *z_.next_in == 0) {
        ++z_.next_in;
        --z_.avail_in;
      }
      return;  // NUL padding: the loop reads on to the end
    }
    if (z_.avail_in >= 2 ? p[0] == 0x1f && p[1] == 0x8b : p[0] == 0x1f) {
      inflateReset(&z_);
      member_ended_ = false;
      return;
    }
    Fail("the gzip stream is followed by data that is not gzip");
    done_ = true;
  }

  z_stream z_;
  bool ok_ = false;
  bool member_ended_ = false;
  bool input_ended_ = false;
  bool done_ = false;
  char in_[kChunk];
};

class ZstdBuf final : public DecodingBuf {
 public:
  explicit ZstdBuf(std::unique_ptr<ByteSource> source)
      : DecodingBuf(std::move(source)), stream_(ZSTD_createDStream()) {
    ZSTD_initDStream(stream_);
  }
  ~ZstdBuf() override { ZSTD_freeDStream(stream_); }

 private:
  size_t Fill(char* out, size_t n) override {
    if (done_) return 0;
    ZSTD_outBuffer output{out, n, 0};
    while (output.pos == 0 && !done_) {
      if (input_.pos == input_.size && !input_ended_) {
        const size_t got = ReadInput(in_, sizeof(in_));
        input_ = {in_, got, 0};
        input_ended_ = got == 0;
      }
      if (input_ended_ && !frame_open_) {
        done_ = true;
        break;
      }
      // With no input left this still writes what the decoder holds.
      const size_t rc = ZSTD_decompressStream(stream_, &output, &input_);
      if (ZSTD_isError(rc)) {
        Fail(absl::StrCat("the zstd stream is corrupt (zstd: ", ZSTD_getErrorName(rc), ")"));
        done_ = true;
        break;
      }
      // 0: a frame ended and is flushed; otherwise more of it is to come.
      frame_open_ = rc != 0;
      if (input_ended_ && output.pos == 0 && frame_open_) {
        Fail("the zstd stream ends early (truncated)");
        done_ = true;
      }
    }
    return output.pos;
  }

  ZSTD_DStream* stream_;
  char in_[kChunk];
  ZSTD_inBuffer input_{in_, 0, 0};
  bool frame_open_ = false;
  bool input_ended_ = false;
  bool done_ = false;
};

class DecodedStream final : public LogStream {
 public:
  DecodedStream(std::unique_ptr<DecodingBuf> buf, const char* format)
      : LogStream(buf.get()), buf_(std::move(buf)), format_(format) {}
  const char* format() const override { return format_; }
  absl::Status status() const override { return buf_->status(); }
  uint64_t text_bytes() const override { return buf_->text_bytes(); }

 private:
  std::unique_ptr<DecodingBuf> buf_;
  const char* format_;
};

absl::Status CannotOpen(const std::string& path, int error) {
  const std::string message = absl::StrCat("cannot open '", path, "': ", std::strerror(error));
  return error == ENOENT ? absl::NotFoundError(message) : absl::PermissionDeniedError(message);
}

}  // namespace

absl::StatusOr<std::unique_ptr<LogStream>> OpenLog(const std::string& path) {
  int fd = STDIN_FILENO;
  if (path != "-") {
    fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return CannotOpen(path, errno);
  }
  auto source = std::make_unique<ByteSource>(fd, path != "-");
  const std::string& magic = source->Peek(4);
  if (source->error() != 0) return CannotOpen(path, source->error());
  if (magic.size() >= 2 && magic[0] == '\x1f' && magic[1] == '\x8b') {
    return std::make_unique<DecodedStream>(std::make_unique<GzipBuf>(std::move(source)), "gzip");
  }
  if (magic == "\x28\xb5\x2f\xfd") {
    return std::make_unique<DecodedStream>(std::make_unique<ZstdBuf>(std::move(source)), "zstd");
  }
  return std::make_unique<DecodedStream>(std::make_unique<PlainBuf>(std::move(source)), "text");
}

absl::StatusOr<std::vector<LogPath>> ExpandLogPaths(const std::vector<std::string>& paths) {
  std::vector<LogPath> out;
  for (const std::string& path : paths) {
    std::error_code ec;
    if (path == "-" || !std::filesystem::is_directory(path, ec)) {
      out.push_back({path, false});
      continue;
    }
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
      if (entry.is_regular_file(ec)) files.push_back(entry.path().string());
    }
    if (ec) return CannotOpen(path, ec.value());
    std::sort(files.begin(), files.end());
    for (std::string& file : files) out.push_back({std::move(file), true});
  }
  return out;
}

}  // namespace gloowatch::client
