#include "daemon/http/scrape_server.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/config.h"
#include "common/http_request.h"

namespace gloowatch {
namespace {

// `extra_headers`: whole lines, each ending in \r\n.
std::string Response(int status, absl::string_view content_type, absl::string_view body,
                     bool head_only, bool keep_alive, absl::string_view extra_headers = "") {
  std::string out = absl::StrCat(
      "HTTP/1.1 ", status, " ", HttpReason(status), "\r\nContent-Type: ", content_type,
      "\r\nContent-Length: ", body.size(), "\r\nConnection: ", keep_alive ? "keep-alive" : "close",
      "\r\n", extra_headers, "\r\n");
  if (!head_only) out.append(body.data(), body.size());
  return out;
}

void Close(int fd) {
  if (fd >= 0) close(fd);
}

}  // namespace

class ScrapeServer::Loop {
 public:
  Loop(int listener, int wake, int epoll, Render render, Options options)
      : listener_(listener),
        wake_(wake),
        epoll_(epoll),
        render_(std::move(render)),
        options_(options),
        reserve_fd_(open("/dev/null", O_RDONLY | O_CLOEXEC)) {}

  ~Loop() {
    for (auto& [fd, conn] : conns_) Close(fd);
    Close(listener_);
    Close(wake_);
    Close(epoll_);
    Close(reserve_fd_);
  }

  void Run() {
    epoll_event events[64];
    while (true) {
      const int n = epoll_wait(epoll_, events, 64, NextTimeoutMs());
      if (n < 0 && errno != EINTR) return;
      for (int i = 0; i < n; ++i) {
        const int fd = events[i].data.fd;
        if (fd == wake_) return;
        if (fd == listener_) {
          Accept();
        } else {
          Serve(fd, events[i].events);
        }
      }
      ExpireDeadlines();
    }
  }

  void Wake() {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(wake_, &one, sizeof(one));
  }

 private:
  struct Conn {
    absl::Time since;     // accepted, or its last answer written
    absl::Time deadline;  // for the request being read, or the answer being written
    std::string in;
    std::string out;
    size_t written = 0;
    bool writing = false;
    bool close_after = false;
    std::unique_ptr<ConnectionStream> stream;
    uint32_t watching = EPOLLIN | EPOLLRDHUP;
  };

  int NextTimeoutMs() const {
    absl::Duration wait = absl::Seconds(1);
    const absl::Time now = absl::Now();
    for (const auto& [fd, conn] : conns_) wait = std::min(wait, conn.deadline - now);
    return static_cast<int>(
        std::max<int64_t>(0, absl::ToInt64Milliseconds(absl::Ceil(wait, absl::Milliseconds(1)))));
  }

  void Accept() {
    while (true) {
      const int fd = accept4(listener_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if ((errno == EMFILE || errno == ENFILE) && ShedOneForFd()) continue;
        return;  // EAGAIN, or nothing left to shed
      }
      if (conns_.size() >= options_.max_connections) Evict();
      const absl::Time now = absl::Now();
      Conn& conn = conns_[fd];
      conn.stream = std::make_unique<ConnectionStream>(fd, options_.tls.get());
      conn.since = now;
      conn.deadline = now + options_.request_timeout;
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLRDHUP;
      ev.data.fd = fd;
      if (epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev) != 0) Drop(fd);
    }
  }

  // Out of file descriptors: drop the oldest connection, or, with none to
  // drop, accept and close the next one so the listener does not stay
  // readable with nobody able to take it.
  bool ShedOneForFd() {
    if (!conns_.empty()) {
      Evict();
      return true;
    }
    if (reserve_fd_ < 0) return false;
    close(reserve_fd_);
    Close(accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC));
    reserve_fd_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
    return false;
  }

  // The oldest connection still waiting for its request; else the oldest.
  void Evict() {
    int victim = -1;
    bool victim_reading = false;
    absl::Time oldest = absl::InfiniteFuture();
    for (const auto& [fd, conn] : conns_) {
      const bool reading = !conn.writing;
      if ((reading && !victim_reading) || (reading == victim_reading && conn.since < oldest)) {
        victim = fd;
        victim_reading = reading;
        oldest = conn.since;
      }
    }
    if (victim >= 0) Drop(victim);
  }

  void Drop(int fd) {
    epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);
    close(fd);
    conns_.erase(fd);
  }

  void ExpireDeadlines() {
    const absl::Time now = absl::Now();
    std::vector<int> expired;
    for (const auto& [fd, conn] : conns_) {
      if (conn.deadline <= now) expired.push_back(fd);
    }
    for (int fd : expired) Drop(fd);
  }

  void Serve(int fd, uint32_t events) {
    auto it = conns_.find(fd);
    if (it == conns_.end()) return;
    Conn& conn = it->second;
    if (conn.writing) {
      if (events & (EPOLLERR | EPOLLHUP)) return Drop(fd);
      return Write(fd, conn);
    }
    char buffer[16 << 10];
    while (true) {
      const ConnectionStream::Result got = conn.stream->Read(buffer, sizeof(buffer));
      if (got.state == ConnectionStream::State::kBytes) {
        conn.in.append(buffer, got.bytes);
        if (conn.in.size() > options_.max_request_bytes) break;
        continue;
      }
      // A TLS handshake may have to write before it can read on.
      if (got.state == ConnectionStream::State::kWantWrite) {
        Watch(fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP);
        return;
      }
      if (got.state == ConnectionStream::State::kWantRead) {
        Watch(fd, EPOLLIN | EPOLLRDHUP);
        break;
      }
      // End of stream or error: what was received may still be answered
      // (a client that half-closes after its request), otherwise drop.
      if (conn.in.find("\r\n\r\n") == std::string::npos &&
          conn.in.find("\n\n") == std::string::npos) {
        return Drop(fd);
      }
      conn.close_after = true;
      break;
    }
    Answer(fd, conn);
  }

  // Answers the next whole request in `conn.in`, if there is one.
  void Answer(int fd, Conn& conn) {
    const RequestHead next = NextRequestHead(conn.in, options_.max_request_bytes);
    if (next.state == RequestHead::State::kTooLarge) {
      return Send(fd, conn,
                  Response(kHttpHeaderTooLarge, "text/plain", "header too large\n", false, false),
                  false);
    }
    if (next.state == RequestHead::State::kIncomplete) {
      if (conn.close_after) Drop(fd);
      return;
    }
    HttpRequest request;
    const int refused = ParseRequestHead(next.text, &request);
    conn.in.erase(0, next.consumed);
    if (refused == kHttpBadRequest) {
      return Send(
          fd, conn,
          Response(kHttpBadRequest, "text/plain", "not an HTTP/1.x request\n", false, false),
          false);
    }
    if (refused == kHttpMethodNotAllowed) {
      return Send(
          fd, conn,
          Response(kHttpMethodNotAllowed, "text/plain", "only GET and HEAD\n", false, false),
          false);
    }
    const bool keep_alive = request.keep_alive && !conn.close_after;
    const bool head = request.head_only;
    if (options_.basic_auth) {
      switch (options_.basic_auth->Check(request.authorization, absl::Now())) {
        case BasicAuth::Verdict::kAllowed:
          break;
        case BasicAuth::Verdict::kDenied:
          return Send(fd, conn,
                      Response(401, "text/plain", "unauthorized\n", head, keep_alive,
                               "WWW-Authenticate: Basic realm=\"gloowatch\"\r\n"),
                      keep_alive);
        case BasicAuth::Verdict::kTooManyAttempts:
          return Send(
              fd, conn,
              Response(429, "text/plain", "too many authentication attempts; retry in a second\n",
                       head, false, "Retry-After: 1\r\n"),
              false);
      }
    }
    if (request.path != "/metrics") {
      return Send(fd, conn, Response(404, "text/plain", "see /metrics\n", head, keep_alive),
                  keep_alive);
    }
    Send(fd, conn,
         Response(200, "text/plain; version=0.0.4; charset=utf-8", render_(), head, keep_alive),
         keep_alive);
  }

  void Send(int fd, Conn& conn, std::string response, bool keep_alive) {
    conn.out = std::move(response);
    conn.written = 0;
    conn.writing = true;
    conn.close_after = !keep_alive;
    conn.deadline = absl::Now() + options_.response_timeout;
    Write(fd, conn);
  }

  void Write(int fd, Conn& conn) {
    while (conn.written < conn.out.size()) {
      const ConnectionStream::Result put =
          conn.stream->Write(conn.out.data() + conn.written, conn.out.size() - conn.written);
      switch (put.state) {
        case ConnectionStream::State::kBytes:
          conn.written += put.bytes;
          continue;
        case ConnectionStream::State::kWantWrite:
          return Watch(fd, EPOLLOUT);
        case ConnectionStream::State::kWantRead:  // TLS: a record to read first
          return Watch(fd, EPOLLIN);
        case ConnectionStream::State::kClosed:
          return Drop(fd);
      }
    }
    if (conn.close_after) return Drop(fd);
    // Keep-alive: the next request (perhaps already here, pipelined).
    conn.out.clear();
    conn.out.shrink_to_fit();
    conn.writing = false;
    conn.since = absl::Now();
    conn.deadline = conn.since + options_.request_timeout;
    Watch(fd, EPOLLIN | EPOLLRDHUP);
    Answer(fd, conn);
  }

  void Watch(int fd, uint32_t events) {
    auto it = conns_.find(fd);
    if (it == conns_.end() || it->second.watching == events) return;
    it->second.watching = events;
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = fd;
    if (epoll_ctl(epoll_, EPOLL_CTL_MOD, fd, &ev) != 0) Drop(fd);
  }

  const int listener_;
  const int wake_;
  const int epoll_;
  const Render render_;
  const Options options_;
  int reserve_fd_;
  std::map<int, Conn> conns_;
};

absl::StatusOr<ScrapeServer::Options> ScrapeServer::OptionsFor(const MetricsWebConfig& web) {
  Options options;
  if (web.tls()) {
    auto tls = TlsServerContext::Load(web.tls_cert_file, web.tls_key_file, web.tls_client_ca_file);
    if (!tls.ok()) return tls.status();
    options.tls = *std::move(tls);
  }
  if (web.basic_auth()) {
    options.basic_auth =
        std::make_shared<BasicAuth>(web.basic_auth_user, web.basic_auth_password_hash);
  }
  return options;
}

absl::StatusOr<std::unique_ptr<ScrapeServer>> ScrapeServer::Start(const std::string& host_port,
                                                                  Render render, Options options) {
  absl::StatusOr<HostPort> address = ParseHostPort(host_port);
  if (!address.ok()) return address.status();
  auto unavailable = [&](absl::string_view what) {
    return absl::UnavailableError(absl::StrCat("cannot serve metrics on ", host_port, ": ", what,
                                               " (is the port already in use?)"));
  };
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = absl::StrCat(address->port);
  if (const int rc = getaddrinfo(address->host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return unavailable(gai_strerror(rc));
  }
  int listener = -1;
  std::string error = "no address";
  for (addrinfo* ai = found; ai != nullptr && listener < 0; ai = ai->ai_next) {
    listener = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (listener < 0) {
      error = strerror(errno);
      continue;
    }
    const int on = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    if (bind(listener, ai->ai_addr, ai->ai_addrlen) != 0 || listen(listener, 128) != 0) {
      error = strerror(errno);
      close(listener);
      listener = -1;
    }
  }
  freeaddrinfo(found);
  if (listener < 0) return unavailable(error);
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  getsockname(listener, reinterpret_cast<sockaddr*>(&bound), &length);
  const int bound_port =
      ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                        : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);

  const int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  const int epoll = epoll_create1(EPOLL_CLOEXEC);
  if (wake < 0 || epoll < 0) {
    error = strerror(errno);
    Close(wake);
    Close(epoll);
    close(listener);
    return unavailable(error);
  }
  for (int fd : {listener, wake}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &ev);
  }
  auto loop = std::make_unique<Loop>(listener, wake, epoll, std::move(render), options);
  return std::unique_ptr<ScrapeServer>(new ScrapeServer(std::move(loop), bound_port));
}

ScrapeServer::ScrapeServer(std::unique_ptr<Loop> loop, int port)
    : loop_(std::move(loop)), port_(port) {
  thread_ = std::thread([this] { loop_->Run(); });
}

ScrapeServer::~ScrapeServer() {
  loop_->Wake();
  thread_.join();
}

}  // namespace gloowatch
