// The request rules both HTTP servers apply (common/http_request.h): where a
// head ends, its size limit, what a request line must be, and what the
// header fields say about keep-alive, bodies and credentials.
#include "common/http_request.h"

#include <string>

#include "gtest/gtest.h"

namespace gloowatch {
namespace {

using State = RequestHead::State;

TEST(NextRequestHeadTest, EndsAtTheFirstBlankLineOfEitherKind) {
  EXPECT_EQ(NextRequestHead("GET / HTTP/1.1\r\nHost: x\r\n").state, State::kIncomplete);

  RequestHead crlf = NextRequestHead("GET / HTTP/1.1\r\nHost: x\r\n\r\nGET /next");
  ASSERT_EQ(crlf.state, State::kComplete);
  EXPECT_EQ(crlf.text, "GET / HTTP/1.1\r\nHost: x");
  EXPECT_EQ(crlf.consumed, 27u);

  RequestHead lf = NextRequestHead("GET / HTTP/1.0\n\nrest\r\n\r\n");
  ASSERT_EQ(lf.state, State::kComplete);
  EXPECT_EQ(lf.text, "GET / HTTP/1.0");
  EXPECT_EQ(lf.consumed, 16u);
}

TEST(NextRequestHeadTest, AHeadLongerThanTheLimitIsTooLargeEndedOrNot) {
  const std::string line = "GET / HTTP/1.1\r\nX: ";
  const std::string at_limit = line + std::string(100 - line.size(), 'a');
  EXPECT_EQ(NextRequestHead(at_limit + "\r\n\r\n", 100).state, State::kComplete);
  EXPECT_EQ(NextRequestHead(at_limit + "a\r\n\r\n", 100).state, State::kTooLarge);
  EXPECT_EQ(NextRequestHead(at_limit, 100).state, State::kIncomplete);
  EXPECT_EQ(NextRequestHead(at_limit + "a", 100).state, State::kTooLarge);
  EXPECT_EQ(NextRequestHead(std::string(kMaxRequestHeadBytes + 1, 'A')).state, State::kTooLarge);
}

TEST(ParseRequestHeadTest, ReadsMethodPathAndFields) {
  HttpRequest r;
  ASSERT_EQ(
      ParseRequestHead("GET /metrics?x=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Basic QWxh\r", &r),
      0);
  EXPECT_EQ(r.method, "GET");
  EXPECT_EQ(r.path, "/metrics");
  EXPECT_FALSE(r.head_only);
  EXPECT_TRUE(r.keep_alive);
  EXPECT_FALSE(r.has_body);
  EXPECT_EQ(r.authorization, "Basic QWxh");

  HttpRequest head;
  ASSERT_EQ(ParseRequestHead("HEAD / HTTP/1.0", &head), 0);
  EXPECT_TRUE(head.head_only);
  EXPECT_FALSE(head.keep_alive);
}

TEST(ParseRequestHeadTest, KeepAliveFollowsTheVersionConnectionAndBody) {
  HttpRequest close;
  ASSERT_EQ(ParseRequestHead("GET / HTTP/1.1\r\nConnection: Close", &close), 0);
  EXPECT_FALSE(close.keep_alive);
  HttpRequest old_keep;
  ASSERT_EQ(ParseRequestHead("GET / HTTP/1.0\r\nConnection: keep-alive", &old_keep), 0);
  EXPECT_TRUE(old_keep.keep_alive);
  // No server of ours reads a body, so its connection ends with the answer.
  for (const char* field : {"Content-Length: 3", "Transfer-Encoding: chunked"}) {
    HttpRequest body;
    ASSERT_EQ(ParseRequestHead(std::string("GET / HTTP/1.1\r\n") + field, &body), 0);
    EXPECT_TRUE(body.has_body) << field;
    EXPECT_FALSE(body.keep_alive) << field;
  }
  HttpRequest empty;
  ASSERT_EQ(ParseRequestHead("GET / HTTP/1.1\r\nContent-Length: 0", &empty), 0);
  EXPECT_FALSE(empty.has_body);
  EXPECT_TRUE(empty.keep_alive);
}

TEST(ParseRequestHeadTest, RefusesWhatIsNotAGetOrHeadOfHttp1) {
  for (const char* bad :
       {"GET /metrics", "GET / HTTP/2.0", "GET / HTTP/1.2", "GET / SPDY/3", "GET metrics HTTP/1.1",
        " / HTTP/1.1", "GET  / HTTP/1.1", "GET /\x01 HTTP/1.1", "\x16\x03\x01 garbage", ""}) {
    HttpRequest r;
    EXPECT_EQ(ParseRequestHead(bad, &r), kHttpBadRequest) << bad;
  }
  for (const char* method : {"POST", "DELETE", "get", "OPTIONS"}) {
    HttpRequest r;
    EXPECT_EQ(ParseRequestHead(std::string(method) + " / HTTP/1.1", &r), kHttpMethodNotAllowed)
        << method;
  }
  HttpRequest trailing;
  EXPECT_EQ(ParseRequestHead("GET / HTTP/1.1  \r", &trailing), 0);
}

TEST(HttpReasonTest, NamesTheStatusesTheServersSend) {
  EXPECT_EQ(HttpReason(kHttpBadRequest), "Bad Request");
  EXPECT_EQ(HttpReason(kHttpMethodNotAllowed), "Method Not Allowed");
  EXPECT_EQ(HttpReason(kHttpHeaderTooLarge), "Request Header Fields Too Large");
  EXPECT_EQ(HttpReason(kHttpUnavailable), "Service Unavailable");
  EXPECT_EQ(HttpReason(200), "OK");
}

}  // namespace
}  // namespace gloowatch
