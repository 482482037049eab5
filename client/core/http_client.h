// One HTTP(S) request with libcurl, bounded by a timeout. Used to ask a
// Prometheus server's query API; no retries, no redirects to other hosts.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace gloowatch::client {

struct HttpOptions {
  absl::Duration timeout = absl::Seconds(3);  // whole request, connect included
  std::string ca_file;                        // PEM bundle for https://; system CAs when empty
  std::string cert_file, key_file;            // client certificate, optional
  std::string bearer_token;                   // "Authorization: Bearer ..." when set
  std::vector<std::string> headers;           // extra "Name: value" lines
};

struct HttpResponse {
  long status = 0;  // NOLINT(runtime/int): libcurl's type
  std::string content_type;
  std::string body;
};

// A URL gloowatch can ask: http:// or https://, with a host. Userinfo
// (user:password@) is allowed and sent as basic auth by libcurl.
absl::Status ValidateHttpUrl(absl::string_view url);

// POSTs `form` (application/x-www-form-urlencoded) to `url`. Transport
// failures (DNS, connect, TLS, timeout) are UNAVAILABLE / DEADLINE_EXCEEDED
// with curl's reason; any HTTP status is returned as a response.
absl::StatusOr<HttpResponse> HttpPostForm(const std::string& url, const std::string& form,
                                          const HttpOptions& options);

// application/x-www-form-urlencoded escaping of one value.
std::string FormEscape(absl::string_view value);

}  // namespace gloowatch::client
