// gRPC credentials from the config's tls section: mutual TLS when set,
// plaintext otherwise.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/config.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"

namespace gloowatch {

struct TlsMaterial {
  bool enabled = false;
  std::string ca_pem, cert_pem, key_pem;
};

// Reads the files; the error names the one that cannot be read. A relative
// path is taken in $CREDENTIALS_DIRECTORY when that is set (systemd's
// LoadCredential=), else in the working directory.
absl::StatusOr<TlsMaterial> LoadTls(const TlsConfig& config);

// With TLS: only clients presenting a certificate signed by the CA get in.
std::shared_ptr<grpc::ServerCredentials> MakeServerCredentials(const TlsMaterial& tls);
// With TLS: verifies the server against the CA and presents our certificate.
std::shared_ptr<grpc::ChannelCredentials> MakeChannelCredentials(const TlsMaterial& tls);

}  // namespace gloowatch
