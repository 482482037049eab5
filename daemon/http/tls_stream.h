// The /metrics endpoint's byte streams: plain sockets or TLS (OpenSSL) over
// the same non-blocking sockets, behind one Read/Write that says what the
// stream waits for. TLS may need to write while the server reads (the
// handshake) and read while it writes, so "would block" names the direction.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;

namespace gloowatch {

class TlsServerContext {
 public:
  // Loads the PEM certificate chain and key, and with a client CA requires
  // every client to present a certificate it signed. The error names the
  // file and OpenSSL's reason.
  static absl::StatusOr<std::shared_ptr<const TlsServerContext>> Load(
      const std::string& cert_file, const std::string& key_file, const std::string& client_ca_file);
  ~TlsServerContext();
  TlsServerContext(const TlsServerContext&) = delete;
  TlsServerContext& operator=(const TlsServerContext&) = delete;

  SSL_CTX* get() const { return ctx_; }

 private:
  explicit TlsServerContext(SSL_CTX* ctx) : ctx_(ctx) {}
  SSL_CTX* ctx_;
};

class ConnectionStream {
 public:
  enum class State { kBytes, kWantRead, kWantWrite, kClosed };
  struct Result {
    State state;
    size_t bytes = 0;  // with kBytes
  };

  // Plain when `tls` is null. Does not own or close `fd`.
  ConnectionStream(int fd, const TlsServerContext* tls);
  ~ConnectionStream();
  ConnectionStream(const ConnectionStream&) = delete;
  ConnectionStream& operator=(const ConnectionStream&) = delete;

  Result Read(char* buffer, size_t size);
  Result Write(const char* data, size_t size);

 private:
  Result TlsResult(int rc);
  int fd_;
  bool tls_;
  SSL* ssl_ = nullptr;  // null with tls_: no session could be made
};

}  // namespace gloowatch
