// gloowatch serve's HTTP server on loopback, driven with raw sockets: the two
// pages, and that every other request gets a 4xx/5xx and a closed connection
// within its bounds (no hang, no crash).
#include "client/health/page_server.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "absl/strings/match.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gloowatch::client {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{5, 0};  // a read never blocks a failing test for long
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Everything the server sends until it closes (or 5 s pass); *closed says
// which of the two ended the read.
std::string ReadAll(int fd, bool* closed = nullptr) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) out.append(buf, n);
  if (closed != nullptr) *closed = n == 0;
  return out;
}

std::string Exchange(int port, const std::string& request) {
  const int fd = Connect(port);
  if (fd < 0) return "connect failed";
  send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string out = ReadAll(fd);
  close(fd);
  return out;
}

class PageServerTest : public ::testing::Test {
 protected:
  void Start(PageServerOptions options) {
    auto s = PageServer::Listen({"127.0.0.1", 0}, options);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
    ASSERT_EQ(pipe(stop_), 0);
    thread_ = std::thread([this] {
      served_ = server_->Serve(stop_[0]);
      stopped_.Notify();
    });
  }
  void TearDown() override {
    if (!server_) return;
    ASSERT_EQ(write(stop_[1], "x", 1), 1);
    // Serve returns on the stop byte; a server that ignored it would hang
    // the test until ctest's timeout, so the wait is bounded (generously:
    // returning in time is not what is measured).
    if (!stopped_.WaitForNotificationWithTimeout(absl::Seconds(30))) {
      ADD_FAILURE() << "Serve did not return after the stop byte";
      thread_.detach();  // the process ends with the failure
      return;
    }
    thread_.join();
    EXPECT_TRUE(served_.ok()) << served_;
    close(stop_[0]);
    close(stop_[1]);
  }
  int port() const { return server_->port(); }

  std::unique_ptr<PageServer> server_;
  int stop_[2] = {-1, -1};
  std::thread thread_;
  absl::Notification stopped_;
  absl::Status served_;
};

TEST_F(PageServerTest, ServesBothPagesAndRefusesTheRest) {
  Start({});
  EXPECT_THAT(Exchange(port(), "GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
              StartsWith("HTTP/1.1 503 Service Unavailable"));  // nothing published yet
  server_->Publish({"<!DOCTYPE html><p>page</p>", "{\"verdict\":\"healthy\"}"});
  const std::string page = Exchange(port(), "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_THAT(page, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(page, HasSubstr("Content-Type: text/html; charset=utf-8\r\n"));
  EXPECT_THAT(page, HasSubstr("Content-Length: 26\r\n"));
  // No script, nothing fetched; only the page's own data: images (the large
  // heatmaps) and inline style.
  EXPECT_THAT(page, HasSubstr("Content-Security-Policy: default-src 'none'; style-src "
                              "'unsafe-inline'; img-src data:\r\n"));
  EXPECT_TRUE(absl::EndsWith(page, "\r\n\r\n<!DOCTYPE html><p>page</p>")) << page;
  const std::string json = Exchange(port(), "GET /health.json?x=1 HTTP/1.0\n\n");
  EXPECT_THAT(json, HasSubstr("Content-Type: application/json"));
  EXPECT_TRUE(absl::EndsWith(json, "{\"verdict\":\"healthy\"}")) << json;
  const std::string head = Exchange(port(), "HEAD / HTTP/1.1\r\n\r\n");
  EXPECT_THAT(head, StartsWith("HTTP/1.1 200 OK"));
  EXPECT_TRUE(absl::EndsWith(head, "\r\n\r\n")) << head;

  EXPECT_THAT(Exchange(port(), "POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"),
              StartsWith("HTTP/1.1 405 Method Not Allowed\r\nContent-Type"));
  EXPECT_THAT(Exchange(port(), "GET /metrics HTTP/1.1\r\n\r\n"), StartsWith("HTTP/1.1 404"));
  EXPECT_THAT(Exchange(port(), "GET ../etc/passwd HTTP/1.1\r\n\r\n"), StartsWith("HTTP/1.1 400"));
  EXPECT_THAT(Exchange(port(), std::string("\x16\x03\x01\x02\x00\x01\r\n\r\n", 10)),
              StartsWith("HTTP/1.1 400"));
  EXPECT_THAT(Exchange(port(), "GET / SPDY/3\r\n\r\n"), StartsWith("HTTP/1.1 400"));
  EXPECT_THAT(Exchange(port(), std::string(20000, 'A')), StartsWith("HTTP/1.1 431"));
  // A client that closes at once costs nothing.
  close(Connect(port()));
  EXPECT_THAT(Exchange(port(), "GET / HTTP/1.1\r\n\r\n"), StartsWith("HTTP/1.1 200"));
}

TEST_F(PageServerTest, SlowAndExcessConnectionsAreBounded) {
  // The request timeout outlasts the steps before the 503 by far, and stays
  // well inside the clients' 5 s read timeout.
  Start({.request_timeout = absl::Seconds(2), .max_connections = 2});
  server_->Publish({"page", "{}"});
  // Two clients that never finish their request hold both slots. They are
  // connected before the third, so the server accepts them first (in the
  // listen queue's order): no wait needed for it to have seen them.
  const int slow1 = Connect(port()), slow2 = Connect(port());
  ASSERT_GE(slow1, 0);
  ASSERT_GE(slow2, 0);
  send(slow1, "GET / HT", 8, MSG_NOSIGNAL);
  // So a third is told at once,
  EXPECT_THAT(Exchange(port(), "GET / HTTP/1.1\r\n\r\n"), StartsWith("HTTP/1.1 503"));
  // and the slow ones are closed by the server at their timeout, without an
  // answer (not left open until the client gives up reading).
  bool closed1 = false, closed2 = false;
  EXPECT_EQ(ReadAll(slow1, &closed1), "");
  EXPECT_EQ(ReadAll(slow2, &closed2), "");
  EXPECT_TRUE(closed1 && closed2) << "still open after the clients' 5 s read timeout";
  close(slow1);
  close(slow2);
  EXPECT_THAT(Exchange(port(), "GET / HTTP/1.1\r\n\r\n"), StartsWith("HTTP/1.1 200"));
}

TEST(PageServer, ListenErrorsNameTheAddress) {
  // A documentation address (RFC 5737) this host does not have: bind fails,
  // nothing is sent.
  auto bad = PageServer::Listen({"192.0.2.1", 8080}, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("192.0.2.1:8080"));
  auto first = PageServer::Listen({"127.0.0.1", 0}, {});
  ASSERT_TRUE(first.ok());
  auto taken = PageServer::Listen({"127.0.0.1", static_cast<uint16_t>((*first)->port())}, {});
  ASSERT_FALSE(taken.ok());
  EXPECT_THAT(taken.status().message(), HasSubstr("Address already in use"));
}

}  // namespace
}  // namespace gloowatch::client
