#include "client/diagnose/port_scan.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace gloowatch::client {
namespace {

PortState StateFromErrno(int err) {
  switch (err) {
    case 0:
      return PortState::kOpen;
    case ECONNREFUSED:
      return PortState::kRefused;
    case ETIMEDOUT:
      return PortState::kFiltered;
    case EHOSTUNREACH:
    case ENETUNREACH:
      return PortState::kUnreachable;
    default:
      return PortState::kError;
  }
}

struct InFlight {
  int fd = -1;
  size_t index = 0;
  absl::Time started;
};

}  // namespace

const char* PortStateName(PortState s) {
  switch (s) {
    case PortState::kOpen:
      return "open";
    case PortState::kRefused:
      return "refused";
    case PortState::kFiltered:
      return "filtered";
    case PortState::kUnreachable:
      return "unreachable";
    case PortState::kError:
      return "error";
    case PortState::kNotScanned:
      return "not_scanned";
  }
  return "error";
}

absl::StatusOr<std::vector<PortResult>> ScanPorts(const std::string& host, uint16_t low,
                                                  uint16_t high, const ScanOptions& options) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* ai = nullptr;
  if (int rc = getaddrinfo(host.c_str(), nullptr, &hints, &ai); rc != 0) {
    return absl::NotFoundError(absl::StrCat("cannot resolve '", host, "': ", gai_strerror(rc)));
  }
  sockaddr_storage addr{};
  socklen_t addr_len = ai->ai_addrlen;
  std::memcpy(&addr, ai->ai_addr, ai->ai_addrlen);
  const int family = ai->ai_family;
  freeaddrinfo(ai);

  std::vector<PortResult> results;
  for (uint32_t p = low; p <= high; ++p) {
    PortResult r;
    r.port = static_cast<uint16_t>(p);
    results.push_back(r);
  }
  const absl::Time deadline = absl::Now() + options.total_timeout;
  const int concurrency = std::max(1, options.concurrency);
  std::vector<InFlight> flight;
  size_t next = 0;

  auto finish = [&](InFlight& f, int err) {
    results[f.index].state = StateFromErrno(err);
    if (results[f.index].state == PortState::kUnreachable ||
        results[f.index].state == PortState::kError) {
      results[f.index].error = std::strerror(err);
    }
    close(f.fd);
    f.fd = -1;
  };

  while ((next < results.size() || !flight.empty()) && absl::Now() < deadline) {
    while (next < results.size() && static_cast<int>(flight.size()) < concurrency) {
      InFlight f{socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), next++,
                 absl::Now()};
      if (f.fd < 0) return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
      sockaddr_storage a = addr;
      if (family == AF_INET6) {
        reinterpret_cast<sockaddr_in6*>(&a)->sin6_port = htons(results[f.index].port);
      } else {
        reinterpret_cast<sockaddr_in*>(&a)->sin_port = htons(results[f.index].port);
      }
      if (connect(f.fd, reinterpret_cast<sockaddr*>(&a), addr_len) == 0) {
        finish(f, 0);
      } else if (errno != EINPROGRESS) {
        finish(f, errno);
      } else {
        flight.push_back(f);
      }
    }
    std::vector<pollfd> fds;
    for (const auto& f : flight) fds.push_back({f.fd, POLLOUT, 0});
    const absl::Duration wait = std::min(absl::Milliseconds(50), deadline - absl::Now());
    if (!fds.empty())
      poll(fds.data(), fds.size(), std::max<int64_t>(0, absl::ToInt64Milliseconds(wait)));
    const absl::Time now = absl::Now();
    for (size_t k = 0; k < flight.size(); ++k) {
      if (fds[k].revents != 0) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(flight[k].fd, SOL_SOCKET, SO_ERROR, &err, &len);
        finish(flight[k], err);
      } else if (now - flight[k].started >= options.connect_timeout) {
        finish(flight[k], ETIMEDOUT);
      }
    }
    flight.erase(
        std::remove_if(flight.begin(), flight.end(), [](const InFlight& f) { return f.fd < 0; }),
        flight.end());
  }
  for (auto& f : flight) close(f.fd);  // total deadline hit: left not_scanned
  return results;
}

}  // namespace gloowatch::client
