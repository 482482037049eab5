#include "common/tls.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace gloowatch {
namespace {

absl::StatusOr<std::string> ReadPem(const std::string& configured, const char* key) {
  // Under systemd's LoadCredential= the files are copies in
  // $CREDENTIALS_DIRECTORY that the dynamic user may read; a relative name
  // means one of them.
  const char* credentials = std::getenv("CREDENTIALS_DIRECTORY");
  const bool from_credentials =
      credentials != nullptr && *credentials != '\0' && !configured.empty() && configured[0] != '/';
  const std::string path =
      from_credentials ? absl::StrCat(credentials, "/", configured) : configured;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("tls.", key, ": cannot read '", path, "'",
                                            from_credentials ? " ($CREDENTIALS_DIRECTORY)" : ""));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  std::string pem = ss.str();
  if (pem.find("-----BEGIN") == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("tls.", key, ": '", path, "' is not PEM"));
  }
  return pem;
}

}  // namespace

absl::StatusOr<TlsMaterial> LoadTls(const TlsConfig& config) {
  TlsMaterial tls;
  if (!config.enabled()) return tls;
  auto ca = ReadPem(config.ca_file, "ca");
  if (!ca.ok()) return ca.status();
  auto cert = ReadPem(config.cert_file, "cert");
  if (!cert.ok()) return cert.status();
  auto key = ReadPem(config.key_file, "key");
  if (!key.ok()) return key.status();
  tls.enabled = true;
  tls.ca_pem = *std::move(ca);
  tls.cert_pem = *std::move(cert);
  tls.key_pem = *std::move(key);
  return tls;
}

std::shared_ptr<grpc::ServerCredentials> MakeServerCredentials(const TlsMaterial& tls) {
  if (!tls.enabled) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions options(
      GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = tls.ca_pem;
  options.pem_key_cert_pairs.push_back({tls.key_pem, tls.cert_pem});
  return grpc::SslServerCredentials(options);
}

std::shared_ptr<grpc::ChannelCredentials> MakeChannelCredentials(const TlsMaterial& tls) {
  if (!tls.enabled) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = tls.ca_pem;
  options.pem_private_key = tls.key_pem;
  options.pem_cert_chain = tls.cert_pem;
  return grpc::SslCredentials(options);
}

}  // namespace gloowatch
