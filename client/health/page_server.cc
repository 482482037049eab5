#include "client/health/page_server.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/http_request.h"

namespace gloowatch::client {
namespace {

std::string Response(int code, const char* type, absl::string_view body, bool send_body = true,
                     absl::string_view extra_headers = "") {
  // The page has no script and loads nothing: the policy says so, so even a
  // name that slipped past escaping could not run or fetch anything.
  return absl::StrCat("HTTP/1.1 ", code, " ", HttpReason(code), "\r\nContent-Type: ", type,
                      "\r\nContent-Length: ", body.size(),
                      "\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n"
                      "Content-Security-Policy: default-src 'none'; style-src 'unsafe-inline'\r\n"
                      "Connection: close\r\n",
                      extra_headers, "\r\n", send_body ? body : "");
}

std::string Plain(int code, absl::string_view text) {
  return Response(code, "text/plain; charset=utf-8", absl::StrCat(text, "\n"));
}

struct Connection {
  int fd = -1;
  absl::Time deadline;
  std::string in;
  std::string out;  // set once the response is decided
  size_t sent = 0;
};

void SetNonBlocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

}  // namespace

std::string RespondTo(absl::string_view head, const PageSnapshot* snapshot) {
  HttpRequest request;
  switch (ParseRequestHead(head, &request)) {
    case 0:
      break;
    case kHttpMethodNotAllowed:
      return Response(kHttpMethodNotAllowed, "text/plain; charset=utf-8", "only GET\n", true,
                      "Allow: GET, HEAD\r\n");
    default:
      return Plain(kHttpBadRequest, "bad request line");
  }
  const std::string& path = request.path;
  if (path != "/" && path != "/health.json") return Plain(404, "GET / or /health.json");
  if (snapshot == nullptr) return Plain(kHttpUnavailable, "no cluster picture yet");
  if (path == "/") {
    return Response(200, "text/html; charset=utf-8", snapshot->html, !request.head_only);
  }
  return Response(200, "application/json", snapshot->json, !request.head_only);
}

absl::StatusOr<std::unique_ptr<PageServer>> PageServer::Listen(const Endpoint& at,
                                                               const PageServerOptions& options) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = absl::StrCat(at.port);
  if (int rc = getaddrinfo(at.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--listen: cannot resolve '", at.host, "': ", gai_strerror(rc)));
  }
  std::string error = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 64) == 0) {
      sockaddr_storage bound{};
      socklen_t len = sizeof(bound);
      getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
      const int actual =
          ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
      freeaddrinfo(found);
      SetNonBlocking(fd);
      return std::unique_ptr<PageServer>(new PageServer(fd, actual, options));
    }
    error = std::strerror(errno);
    close(fd);
  }
  freeaddrinfo(found);
  return absl::UnavailableError(
      absl::StrCat("--listen: cannot listen on ", at.ToString(), ": ", error));
}

PageServer::~PageServer() { close(fd_); }

void PageServer::Publish(PageSnapshot snapshot) {
  auto next = std::make_shared<const PageSnapshot>(std::move(snapshot));
  absl::MutexLock lock(&mu_);
  snapshot_ = std::move(next);
}

std::shared_ptr<const PageSnapshot> PageServer::Current() {
  absl::MutexLock lock(&mu_);
  return snapshot_;
}

absl::Status PageServer::Serve(int stop_fd) {
  std::vector<Connection> conns;
  std::vector<pollfd> fds;
  char buf[4096];
  for (;;) {
    fds.clear();
    fds.push_back({stop_fd, POLLIN, 0});
    fds.push_back({fd_, POLLIN, 0});
    absl::Time next_deadline = absl::Now() + absl::Seconds(1);
    for (const Connection& c : conns) {
      fds.push_back({c.fd, static_cast<short>(c.out.empty() ? POLLIN : POLLOUT), 0});
      next_deadline = std::min(next_deadline, c.deadline);
    }
    const int wait_ms = static_cast<int>(
        std::max<int64_t>(0, absl::ToInt64Milliseconds(next_deadline - absl::Now()) + 1));
    if (poll(fds.data(), fds.size(), wait_ms) < 0 && errno != EINTR) {
      return absl::InternalError(absl::StrCat("poll: ", std::strerror(errno)));
    }
    if (fds[0].revents != 0) break;
    const absl::Time now = absl::Now();
    // Existing connections first (fds[2..] match conns in order).
    for (size_t k = 0; k < conns.size(); ++k) {
      Connection& c = conns[k];
      const short ev = fds[k + 2].revents;
      bool done = now >= c.deadline;
      if (!done && c.out.empty() && (ev & (POLLIN | POLLHUP | POLLERR))) {
        const ssize_t n = recv(c.fd, buf, sizeof(buf), 0);
        if (n <= 0) {
          done = n == 0 || (errno != EAGAIN && errno != EINTR);
        } else {
          c.in.append(buf, n);
          const RequestHead next = NextRequestHead(c.in, options_.max_request_bytes);
          if (next.state == RequestHead::State::kComplete) {
            c.out = RespondTo(next.text, Current().get());
          } else if (next.state == RequestHead::State::kTooLarge) {
            c.out = Plain(kHttpHeaderTooLarge, "request too large");
          }
        }
      }
      if (!done && !c.out.empty() && (ev & (POLLOUT | POLLERR | POLLHUP))) {
        const ssize_t n = send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
        if (n > 0) c.sent += n;
        done = (n < 0 && errno != EAGAIN && errno != EINTR) || c.sent == c.out.size();
      }
      if (done) {
        shutdown(c.fd, SHUT_WR);
        close(c.fd);
        c.fd = -1;
      }
    }
    conns.erase(
        std::remove_if(conns.begin(), conns.end(), [](const Connection& c) { return c.fd < 0; }),
        conns.end());
    if (fds[1].revents & POLLIN) {
      for (int accepted = 0; accepted < 64; ++accepted) {
        const int fd = accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;
        if (conns.size() >= options_.max_connections) {
          const std::string busy = Plain(kHttpUnavailable, "too many connections");
          (void)!send(fd, busy.data(), busy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
          close(fd);
          continue;
        }
        conns.push_back({fd, now + options_.request_timeout, "", "", 0});
      }
    }
  }
  for (const Connection& c : conns) close(c.fd);
  return absl::OkStatus();
}

}  // namespace gloowatch::client
