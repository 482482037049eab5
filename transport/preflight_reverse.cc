#include "transport/preflight_reverse.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/failure.h"
#include "gloo/transport/tcp/address.h"
#include "transport/probe_link.h"

namespace gloowatch {
namespace {

// What the connecting side sends: "gwrv" and its rank, big-endian.
constexpr char kMagic[4] = {'g', 'w', 'r', 'v'};
constexpr size_t kTokenBytes = 8;

socklen_t SockaddrLength(const sockaddr_storage& ss) {
  return ss.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

absl::Status Errno(absl::string_view what, int error) {
  return absl::UnavailableError(absl::StrCat(what, ": ", strerror(error)));
}

absl::Status Timeout(std::string message) {
  return WithFailureReason(absl::DeadlineExceededError(std::move(message)),
                           v1::FAILURE_REASON_TIMEOUT);
}

}  // namespace

absl::StatusOr<bool> GlooConnectsFrom(const std::string& self, const std::string& peer) {
  sockaddr_storage a, b;
  if (!SockaddrFromBytes(self, &a) || !SockaddrFromBytes(peer, &b)) {
    return absl::InvalidArgumentError("not a Gloo TCP address");
  }
  if (a.ss_family != b.ss_family) return absl::InvalidArgumentError("address family mismatch");
  // Gloo's comparison, byte for byte: the addresses in network order, then
  // the ports as the two network-order 16-bit values.
  int rv = 0;
  if (a.ss_family == AF_INET) {
    const auto* sa = reinterpret_cast<const sockaddr_in*>(&a);
    const auto* sb = reinterpret_cast<const sockaddr_in*>(&b);
    rv = std::memcmp(&sa->sin_addr, &sb->sin_addr, sizeof(in_addr));
    if (rv == 0) rv = sa->sin_port - sb->sin_port;
  } else if (a.ss_family == AF_INET6) {
    const auto* sa = reinterpret_cast<const sockaddr_in6*>(&a);
    const auto* sb = reinterpret_cast<const sockaddr_in6*>(&b);
    rv = std::memcmp(&sa->sin6_addr, &sb->sin6_addr, sizeof(in6_addr));
    if (rv == 0) rv = sa->sin6_port - sb->sin6_port;
  } else {
    return absl::InvalidArgumentError("unknown address family");
  }
  if (rv == 0) return absl::InvalidArgumentError("a pair cannot connect to itself");
  return rv > 0;
}

absl::StatusOr<ReverseListener> ReverseListener::Open(const std::string& pair_address,
                                                      int backlog) {
  sockaddr_storage ss;
  if (!SockaddrFromBytes(pair_address, &ss)) {
    return absl::InvalidArgumentError("not a Gloo TCP address");
  }
  if (ss.ss_family == AF_INET) {
    reinterpret_cast<sockaddr_in*>(&ss)->sin_port = 0;
  } else if (ss.ss_family == AF_INET6) {
    reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port = 0;
  } else {
    return absl::InvalidArgumentError("unknown address family");
  }
  ReverseListener l;
  l.fd_ = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (l.fd_ < 0) return Errno("reverse listener: socket", errno);
  // As Gloo's listeners: SO_REUSEADDR, the device's address, port 0.
  const int on = 1;
  socklen_t length = SockaddrLength(ss);
  if (setsockopt(l.fd_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) != 0 ||
      bind(l.fd_, reinterpret_cast<const sockaddr*>(&ss), length) != 0 ||
      listen(l.fd_, backlog) != 0 ||
      getsockname(l.fd_, reinterpret_cast<sockaddr*>(&ss), &length) != 0) {
    return Errno("reverse listener", errno);
  }
  const std::vector<char> bytes = gloo::transport::tcp::Address(ss).bytes();
  l.address_.assign(bytes.begin(), bytes.end());
  return l;
}

ReverseListener::ReverseListener(ReverseListener&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), address_(std::move(other.address_)) {}

ReverseListener& ReverseListener::operator=(ReverseListener&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    address_ = std::move(other.address_);
  }
  return *this;
}

ReverseListener::~ReverseListener() {
  if (fd_ >= 0) close(fd_);
}

namespace {

// A socket of the round: a connect to a peer, or a connection accepted from
// one (rank -1 until its 8 bytes name it).
struct OpenSocket {
  int fd = -1;
  size_t rank = 0;
  bool outgoing = false;
  char token[kTokenBytes] = {};
  size_t received = 0;
};

class Round {
 public:
  Round(const ReverseListener& listener, uint32_t self_rank, const std::vector<ReverseTask>& tasks,
        absl::Duration timeout, const Clock* clock)
      : listener_(listener),
        tasks_(tasks),
        timeout_(timeout),
        clock_(clock),
        start_(clock->Monotonic()),
        out_(tasks.size()),
        arrived_(tasks.size(), false) {
    const uint32_t be = htonl(self_rank);
    std::memcpy(token_, kMagic, sizeof(kMagic));
    std::memcpy(token_ + sizeof(kMagic), &be, sizeof(be));
  }

  std::vector<ReverseOutcome> Run() {
    for (size_t r = 0; r < tasks_.size(); ++r) {
      if (!tasks_[r].connect_to.empty()) {
        StartConnect(r);
      } else if (tasks_[r].await) {
        out_[r].tried = true;
        ++awaiting_;
      }
    }
    const absl::Duration deadline = start_ + timeout_;
    while (outgoing_ > 0 || awaiting_ > 0) {
      const absl::Duration left = deadline - clock_->Monotonic();
      if (left <= absl::ZeroDuration()) break;
      std::vector<pollfd> fds;
      const bool accepting =
          awaiting_ > 0 && listener_.fd() >= 0 && open_.size() - outgoing_ < kMaxAcceptedOpen;
      if (accepting) fds.push_back(pollfd{listener_.fd(), POLLIN, 0});
      for (const OpenSocket& s : open_) {
        fds.push_back(pollfd{s.fd, static_cast<short>(s.outgoing ? POLLOUT : POLLIN), 0});
      }
      const int ms =
          static_cast<int>(std::clamp<int64_t>(absl::ToInt64Milliseconds(left) + 1, 1, 60000));
      if (poll(fds.data(), fds.size(), ms) < 0 && errno != EINTR) break;
      size_t i = 0;
      if (accepting) {
        if (fds[0].revents != 0) Accept();
        ++i;
      }
      // open_ and fds[i..] are in the same order; Accept only appended.
      std::vector<OpenSocket> still;
      for (size_t k = 0; k < fds.size() - i; ++k) {
        OpenSocket& s = open_[k];
        const bool done = fds[i + k].revents == 0 ? false : s.outgoing ? Connected(s) : Read(s);
        if (done) {
          close(s.fd);
        } else {
          still.push_back(s);
        }
      }
      for (size_t k = fds.size() - i; k < open_.size(); ++k) still.push_back(open_[k]);
      open_ = std::move(still);
    }
    const std::string within = absl::StrCat("within ", absl::FormatDuration(timeout_));
    for (const OpenSocket& s : open_) {
      close(s.fd);
      if (s.outgoing) {
        Finish(s.rank, Timeout(absl::StrCat("connect ", out_[s.rank].address, ": no answer ",
                                            within, " (timed out)")));
      }
    }
    for (size_t r = 0; r < tasks_.size(); ++r) {
      if (tasks_[r].await && !arrived_[r]) {
        Finish(r, Timeout(absl::StrCat("rank ", r, "'s reverse connect did not arrive ", within,
                                       " (timed out)")));
      }
    }
    return std::move(out_);
  }

 private:
  void Finish(size_t rank, absl::Status status) {
    out_[rank].status = std::move(status);
    out_[rank].took = clock_->Monotonic() - start_;
  }

  void StartConnect(size_t r) {
    ReverseOutcome& o = out_[r];
    o.tried = true;
    sockaddr_storage ss;
    if (!SockaddrFromBytes(tasks_[r].connect_to, &ss)) {
      Finish(r, absl::InvalidArgumentError("not a Gloo TCP address"));
      return;
    }
    o.address = GlooAddressToString(tasks_[r].connect_to);
    const int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      Finish(r, Errno("socket", errno));
      return;
    }
    if (connect(fd, reinterpret_cast<const sockaddr*>(&ss), SockaddrLength(ss)) != 0 &&
        errno != EINPROGRESS) {
      Finish(r, Errno(absl::StrCat("connect ", o.address), errno));
      close(fd);
      return;
    }
    OpenSocket s;
    s.fd = fd;
    s.rank = r;
    s.outgoing = true;
    open_.push_back(s);
    ++outgoing_;
  }

  // A connect finished (or failed): send the rank. True: the socket is done.
  bool Connected(OpenSocket& s) {
    --outgoing_;
    int error = 0;
    socklen_t length = sizeof(error);
    getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &error, &length);
    if (error != 0) {
      Finish(s.rank, Errno(absl::StrCat("connect ", out_[s.rank].address), error));
      return true;
    }
    // 8 bytes into an empty send buffer: all or an error.
    if (send(s.fd, token_, kTokenBytes, MSG_NOSIGNAL) != static_cast<ssize_t>(kTokenBytes)) {
      Finish(s.rank, Errno(absl::StrCat("send to ", out_[s.rank].address), errno));
      return true;
    }
    Finish(s.rank, absl::OkStatus());
    return true;
  }

  void Accept() {
    while (open_.size() - outgoing_ < kMaxAcceptedOpen) {
      const int fd = accept4(listener_.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;  // EAGAIN, or an error the next poll shows again
      OpenSocket s;
      s.fd = fd;
      open_.push_back(s);
    }
  }

  // Reads an accepted connection's 8 bytes. True: the socket is done.
  bool Read(OpenSocket& s) {
    const ssize_t n = recv(s.fd, s.token + s.received, kTokenBytes - s.received, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return false;
    if (n <= 0) return true;  // closed early or failed: not one of ours
    s.received += static_cast<size_t>(n);
    if (s.received < kTokenBytes) return false;
    uint32_t be = 0;
    std::memcpy(&be, s.token + sizeof(kMagic), sizeof(be));
    const size_t rank = ntohl(be);
    if (std::memcmp(s.token, kMagic, sizeof(kMagic)) == 0 && rank < tasks_.size() &&
        tasks_[rank].await && !arrived_[rank]) {
      arrived_[rank] = true;
      --awaiting_;
      Finish(rank, absl::OkStatus());
    }
    return true;
  }

  const ReverseListener& listener_;
  const std::vector<ReverseTask>& tasks_;
  const absl::Duration timeout_;
  const Clock* const clock_;
  const absl::Duration start_;
  char token_[kTokenBytes];
  std::vector<ReverseOutcome> out_;
  std::vector<bool> arrived_;
  std::vector<OpenSocket> open_;
  size_t outgoing_ = 0;  // connects in flight, in open_
  size_t awaiting_ = 0;  // ranks yet to arrive
};

}  // namespace

std::vector<ReverseOutcome> RunReverseRound(const ReverseListener& listener, uint32_t self_rank,
                                            const std::vector<ReverseTask>& tasks,
                                            absl::Duration timeout, const Clock* clock) {
  return Round(listener, self_rank, tasks, timeout, clock).Run();
}

}  // namespace gloowatch
