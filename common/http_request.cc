#include "common/http_request.h"

#include <algorithm>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"

namespace gloowatch {

RequestHead NextRequestHead(absl::string_view received, size_t max_head_bytes) {
  RequestHead head;
  size_t end = received.find("\r\n\r\n");
  size_t blank = 4;
  if (const size_t lf = received.find("\n\n"); lf < end) {
    end = lf;
    blank = 2;
  }
  if (end == absl::string_view::npos) {
    if (received.size() > max_head_bytes) head.state = RequestHead::State::kTooLarge;
    return head;
  }
  if (end > max_head_bytes) {
    head.state = RequestHead::State::kTooLarge;
    return head;
  }
  head.state = RequestHead::State::kComplete;
  head.text = received.substr(0, end);
  head.consumed = end + blank;
  return head;
}

int ParseRequestHead(absl::string_view head, HttpRequest* request) {
  std::vector<absl::string_view> lines = absl::StrSplit(head, '\n');
  const absl::string_view line = absl::StripTrailingAsciiWhitespace(lines[0]);
  if (std::any_of(line.begin(), line.end(),
                  [](char c) { return !absl::ascii_isprint(static_cast<unsigned char>(c)); })) {
    return kHttpBadRequest;
  }
  std::vector<absl::string_view> parts = absl::StrSplit(line, ' ');
  if (parts.size() != 3 || parts[0].empty() || !absl::StartsWith(parts[1], "/")) {
    return kHttpBadRequest;
  }
  const absl::string_view version = parts[2];
  if (version != "HTTP/1.0" && version != "HTTP/1.1") return kHttpBadRequest;
  if (parts[0] != "GET" && parts[0] != "HEAD") return kHttpMethodNotAllowed;
  request->method = std::string(parts[0]);
  request->head_only = parts[0] == "HEAD";
  request->path = std::string(parts[1].substr(0, parts[1].find('?')));
  request->keep_alive = version == "HTTP/1.1";
  for (size_t i = 1; i < lines.size(); ++i) {
    const absl::string_view field = absl::StripAsciiWhitespace(lines[i]);
    const size_t colon = field.find(':');
    if (colon == absl::string_view::npos) continue;
    const std::string name = absl::AsciiStrToLower(field.substr(0, colon));
    if (name == "authorization") {
      request->authorization = std::string(absl::StripAsciiWhitespace(field.substr(colon + 1)));
      continue;
    }
    const std::string value =
        absl::AsciiStrToLower(absl::StripAsciiWhitespace(field.substr(colon + 1)));
    if (name == "connection") {
      if (absl::StrContains(value, "close")) request->keep_alive = false;
      if (absl::StrContains(value, "keep-alive")) request->keep_alive = true;
    } else if ((name == "content-length" && value != "0") || name == "transfer-encoding") {
      request->has_body = true;
    }
  }
  if (request->has_body) request->keep_alive = false;
  return 0;
}

absl::string_view HttpReason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 503:
      return "Service Unavailable";
  }
  return "";
}

}  // namespace gloowatch
