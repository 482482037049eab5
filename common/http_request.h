// The request rules of gloowatch's two small HTTP servers, the daemon's
// /metrics (daemon/http/scrape_server) and `gloowatch serve`
// (client/health/page_server), each with its own I/O: where a request head
// ends, how large it may be, what it asks for, and which status a request
// gets that is not served.
#pragma once

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace gloowatch {

// The statuses the rules give.
inline constexpr int kHttpBadRequest = 400;        // not "METHOD /path HTTP/1.x"
inline constexpr int kHttpMethodNotAllowed = 405;  // anything but GET and HEAD
inline constexpr int kHttpHeaderTooLarge = 431;    // a head longer than its limit
inline constexpr int kHttpUnavailable = 503;       // shed: no capacity, or nothing to serve yet

// A request head (request line and header fields) may hold this many bytes.
inline constexpr size_t kMaxRequestHeadBytes = 8 << 10;

// The first request head in what a connection has received so far.
struct RequestHead {
  enum class State {
    kIncomplete,  // no blank line yet: read on
    kTooLarge,    // longer than the limit, ended or not: 431
    kComplete,
  };
  State state = State::kIncomplete;
  absl::string_view text;  // kComplete: the head without its blank line
  size_t consumed = 0;     // kComplete: bytes up to and with the blank line
};
// The head ends at the first blank line, "\r\n\r\n" or "\n\n".
RequestHead NextRequestHead(absl::string_view received,
                            size_t max_head_bytes = kMaxRequestHeadBytes);

struct HttpRequest {
  std::string method;
  std::string path;  // without the query
  bool head_only = false;
  // HTTP/1.1 unless "Connection: close", HTTP/1.0 only with "Connection:
  // keep-alive"; never with a body, which no server of ours reads.
  bool keep_alive = false;
  bool has_body = false;      // a Content-Length other than 0, or a Transfer-Encoding
  std::string authorization;  // as sent: credentials are case-sensitive
};

// Applies the rules to a complete head: 0 when the request may be served
// (`request` filled in), else the status to answer with (kHttpBadRequest,
// kHttpMethodNotAllowed).
int ParseRequestHead(absl::string_view head, HttpRequest* request);

// The reason phrase of a status our servers send ("Not Found"), "" for others.
absl::string_view HttpReason(int status);

}  // namespace gloowatch
