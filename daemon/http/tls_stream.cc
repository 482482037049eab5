#include "daemon/http/tls_stream.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <cerrno>

#include "absl/strings/str_cat.h"

namespace gloowatch {
namespace {

// The oldest queued OpenSSL error, and the queue cleared so that it does not
// leak into the next call on this thread.
std::string TakeOpenSslError() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "unknown OpenSSL error";
  char text[256];
  ERR_error_string_n(code, text, sizeof(text));
  return text;
}

}  // namespace

absl::StatusOr<std::shared_ptr<const TlsServerContext>> TlsServerContext::Load(
    const std::string& cert_file, const std::string& key_file, const std::string& client_ca_file) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return absl::InternalError("cannot create a TLS context");
  std::shared_ptr<const TlsServerContext> out(new TlsServerContext(ctx));
  auto fail = [](absl::string_view what, const std::string& file) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics_web: ", what, " ", file, ": ", TakeOpenSslError()));
  };
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (SSL_CTX_use_certificate_chain_file(ctx, cert_file.c_str()) != 1) {
    return fail("cannot load the certificate chain from", cert_file);
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    return fail("cannot load the private key from", key_file);
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return fail("the private key does not match the certificate in", cert_file);
  }
  if (!client_ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(ctx, client_ca_file.c_str(), nullptr) != 1) {
      return fail("cannot load the client CA from", client_ca_file);
    }
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(client_ca_file.c_str());
    if (names != nullptr) SSL_CTX_set_client_CA_list(ctx, names);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  return out;
}

TlsServerContext::~TlsServerContext() { SSL_CTX_free(ctx_); }

ConnectionStream::ConnectionStream(int fd, const TlsServerContext* tls)
    : fd_(fd), tls_(tls != nullptr) {
  if (!tls_) return;
  ssl_ = SSL_new(tls->get());
  if (ssl_ != nullptr && SSL_set_fd(ssl_, fd) == 1) {
    SSL_set_accept_state(ssl_);
  } else {
    ERR_clear_error();
  }
}

ConnectionStream::~ConnectionStream() {
  if (ssl_ != nullptr) SSL_free(ssl_);
}

ConnectionStream::Result ConnectionStream::TlsResult(int rc) {
  if (ssl_ == nullptr) return {State::kClosed};
  if (rc > 0) return {State::kBytes, static_cast<size_t>(rc)};
  const int error = SSL_get_error(ssl_, rc);
  ERR_clear_error();
  if (error == SSL_ERROR_WANT_READ) return {State::kWantRead};
  if (error == SSL_ERROR_WANT_WRITE) return {State::kWantWrite};
  // A failed handshake (plain HTTP on the TLS port, an unknown client
  // certificate), close_notify or a reset: the connection is over.
  return {State::kClosed};
}

ConnectionStream::Result ConnectionStream::Read(char* buffer, size_t size) {
  if (tls_) return TlsResult(ssl_ ? SSL_read(ssl_, buffer, static_cast<int>(size)) : 0);
  while (true) {
    const ssize_t n = recv(fd_, buffer, size, 0);
    if (n > 0) return {State::kBytes, static_cast<size_t>(n)};
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return {State::kWantRead};
    return {State::kClosed};
  }
}

ConnectionStream::Result ConnectionStream::Write(const char* data, size_t size) {
  if (tls_) return TlsResult(ssl_ ? SSL_write(ssl_, data, static_cast<int>(size)) : 0);
  while (true) {
    const ssize_t n = send(fd_, data, size, MSG_NOSIGNAL);
    if (n > 0) return {State::kBytes, static_cast<size_t>(n)};
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return {State::kWantWrite};
    return {State::kClosed};
  }
}

}  // namespace gloowatch
