#include "client/core/http_client.h"

#include <curl/curl.h>

#include <cctype>
#include <mutex>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace gloowatch::client {
namespace {

// Large enough for a 10,000-node cluster's series; bounds memory if a
// server streams without end.
constexpr size_t kMaxBodyBytes = size_t{1} << 30;

struct Sink {
  std::string body;
  bool too_large = false;
};

size_t WriteBody(char* data, size_t size, size_t count, void* user) {
  auto* sink = static_cast<Sink*>(user);
  const size_t n = size * count;
  if (sink->body.size() + n > kMaxBodyBytes) {
    sink->too_large = true;
    return 0;  // aborts the transfer
  }
  sink->body.append(data, n);
  return n;
}

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

}  // namespace

absl::Status ValidateHttpUrl(absl::string_view url) {
  const std::string lower = absl::AsciiStrToLower(url);
  absl::string_view rest;
  if (absl::StartsWith(lower, "http://")) {
    rest = url.substr(7);
  } else if (absl::StartsWith(lower, "https://")) {
    rest = url.substr(8);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("'", url, "' is not an http:// or https:// URL"));
  }
  const absl::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
  absl::string_view host = authority.substr(authority.rfind('@') + 1);  // npos+1 == 0
  if (host.empty() || host[0] == ':') {
    return absl::InvalidArgumentError(absl::StrCat("'", url, "' has no host"));
  }
  for (char c : url) {
    if (std::isspace(static_cast<unsigned char>(c)) || std::iscntrl(static_cast<unsigned char>(c)))
      return absl::InvalidArgumentError(absl::StrCat("'", url, "' contains white space"));
  }
  // Let curl's own parser have the last word (ports, brackets, percent codes).
  CURLU* parsed = curl_url();
  const CURLUcode rc = curl_url_set(parsed, CURLUPART_URL, std::string(url).c_str(), 0);
  curl_url_cleanup(parsed);
  if (rc != CURLUE_OK) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", url, "' is not a valid URL: ", curl_url_strerror(rc)));
  }
  return absl::OkStatus();
}

std::string FormEscape(absl::string_view value) {
  std::string out;
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      absl::StrAppend(&out, "%", absl::Hex(c, absl::kZeroPad2));
    }
  }
  return out;
}

absl::StatusOr<HttpResponse> HttpPostForm(const std::string& url, const std::string& form,
                                          const HttpOptions& options) {
  GlobalInit();
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return absl::InternalError("curl_easy_init failed");
  Sink sink;
  char error[CURL_ERROR_SIZE] = {0};
  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Content-Type: application/x-www-form-urlencoded");
  headers = curl_slist_append(headers, "Accept: application/json");
  if (!options.bearer_token.empty()) {
    headers = curl_slist_append(
        headers, absl::StrCat("Authorization: Bearer ", options.bearer_token).c_str());
  }
  for (const std::string& h : options.headers) headers = curl_slist_append(headers, h.c_str());
  const long timeout_ms =                                             // NOLINT(runtime/int)
      static_cast<long>(absl::ToInt64Milliseconds(options.timeout));  // NOLINT(runtime/int)
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_POST, 1L);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, form.c_str());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(form.size()));  // NOLINT
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");  // gzip when the server offers it
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, WriteBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "gloowatch");
  if (!options.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, options.ca_file.c_str());
  if (!options.cert_file.empty()) {
    curl_easy_setopt(curl, CURLOPT_SSLCERT, options.cert_file.c_str());
    curl_easy_setopt(curl, CURLOPT_SSLKEY, options.key_file.c_str());
  }
  const CURLcode rc = curl_easy_perform(curl);
  HttpResponse response;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  char* content_type = nullptr;
  if (curl_easy_getinfo(curl, CURLINFO_CONTENT_TYPE, &content_type) == CURLE_OK && content_type) {
    response.content_type = content_type;
  }
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  if (rc != CURLE_OK) {
    const std::string why = error[0] != '\0' ? error : curl_easy_strerror(rc);
    if (rc == CURLE_OPERATION_TIMEDOUT) {
      return absl::DeadlineExceededError(
          absl::StrCat("no answer within ", absl::FormatDuration(options.timeout), " (", why, ")"));
    }
    if (sink.too_large) {
      return absl::ResourceExhaustedError(
          absl::StrCat("answer larger than ", kMaxBodyBytes >> 20, " MiB"));
    }
    return absl::UnavailableError(why);
  }
  response.body = std::move(sink.body);
  return response;
}

}  // namespace gloowatch::client
