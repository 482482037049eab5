#include "transport/tcp_stats.h"

#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"

namespace gloowatch {
namespace {

constexpr size_t kReceiveBytes = 32 << 10;

// Closes the netlink socket on every path.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

void FillId(const TcpEndpoint& local, const TcpEndpoint& remote, inet_diag_sockid* id) {
  id->idiag_sport = htons(local.port);
  id->idiag_dport = htons(remote.port);
  std::memcpy(id->idiag_src, local.address.data(), sizeof(id->idiag_src));
  std::memcpy(id->idiag_dst, remote.address.data(), sizeof(id->idiag_dst));
}

// The counters of one SOCK_DIAG_BY_FAMILY reply, or an error when it has
// no INET_DIAG_INFO.
absl::StatusOr<TcpCounters> CountersOf(const TcpDiagEntry& e) {
  if (!e.info) return absl::InternalError("sock_diag: reply without INET_DIAG_INFO");
  TcpCounters c;
  c.retransmitted_segments = e.info->retransmitted_segments;
  c.sent_segments = e.info->sent_segments;
  c.spurious_retransmitted_segments = e.info->spurious_retransmitted_segments;
  c.rtt = absl::Microseconds(e.info->rtt_us);
  c.rtt_variation = absl::Microseconds(e.info->rtt_variation_us);
  c.unacked_segments = e.info->unacked_segments;
  c.timeout_retransmits = e.info->timeout_retransmits;
  return c;
}

// Our socket has our listening address as its local one (we accepted) or
// the peer's as its remote one (we connected). Gloo closes a pair's listener
// once connected, so either port may since belong to a connection with
// another host: the other end's address must be the expected one too.
bool IsOurs(const TcpConnection& c, const TcpEndpoint& local, const TcpEndpoint& remote) {
  return (local == c.local && remote.SameHost(c.remote)) ||
         (remote == c.remote && local.SameHost(c.local));
}

class SockDiagTcpStats final : public TcpStatsSource {
 public:
  absl::StatusOr<TcpCounters> Read(TcpConnection& c) const override {
    if (c.local.family != c.remote.family ||
        (c.local.family != AF_INET && c.local.family != AF_INET6)) {
      return absl::InvalidArgumentError("tcp stats: not an IPv4 or IPv6 connection");
    }
    Fd fd(socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
    if (fd.get() < 0) return absl::InternalError(absl::StrCat("sock_diag: ", strerror(errno)));
    // The kernel answers at once; this only bounds a surprise.
    const timeval timeout{1, 0};
    setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));

    const bool dump = !c.resolved.has_value();
    if (absl::Status s = Send(fd.get(), c, dump); !s.ok()) return s;
    std::vector<char> buf(kReceiveBytes);
    while (true) {
      const ssize_t n = recv(fd.get(), buf.data(), buf.size(), 0);
      if (n < 0) return absl::InternalError(absl::StrCat("sock_diag: ", strerror(errno)));
      int left = static_cast<int>(n);
      for (auto* h = reinterpret_cast<nlmsghdr*>(buf.data()); NLMSG_OK(h, left);
           h = NLMSG_NEXT(h, left)) {
        if (h->nlmsg_type == NLMSG_DONE) return NotFound(c);
        if (h->nlmsg_type == NLMSG_ERROR) {
          const int error = -static_cast<const nlmsgerr*>(NLMSG_DATA(h))->error;
          if (error == ENOENT) return NotFound(c);
          return absl::InternalError(absl::StrCat("sock_diag: ", strerror(error)));
        }
        if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY) continue;
        const TcpDiagEntry entry = ParseTcpDiagMessage(h);
        if (dump && !IsOurs(c, entry.local, entry.remote)) continue;
        if (entry.state != kTcpStateEstablished)
          return NotFound(c);  // an exact lookup of a closing one
        absl::StatusOr<TcpCounters> counters = CountersOf(entry);
        if (counters.ok() && dump) {
          c.resolved = TcpConnection::Resolved{entry.local, entry.remote, entry.cookie};
        }
        return counters;
      }
      if (!dump) return NotFound(c);
    }
  }

 private:
  static absl::Status NotFound(TcpConnection& c) {
    c.resolved.reset();
    return absl::NotFoundError(absl::StrCat("no established TCP connection with local ",
                                            c.local.ToString(), " or remote ",
                                            c.remote.ToString()));
  }

  // A dump walks the socket table, so it is filtered in the kernel by the
  // two listening ports (the addresses are checked here); once the socket is
  // known, an exact lookup by its four-tuple and cookie is a hash lookup.
  static absl::Status Send(int fd, const TcpConnection& c, bool dump) {
    struct {
      nlmsghdr nlh;
      inet_diag_req_v2 req;
      nlattr bytecode;
      inet_diag_bc_op ops[5];
    } m;
    std::memset(&m, 0, sizeof(m));
    m.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    m.nlh.nlmsg_flags = NLM_F_REQUEST;
    m.req.sdiag_family = static_cast<uint8_t>(c.local.family);
    m.req.sdiag_protocol = IPPROTO_TCP;
    m.req.idiag_ext = 1 << (INET_DIAG_INFO - 1);
    m.req.idiag_states = 1 << kTcpStateEstablished;
    if (dump) {
      m.nlh.nlmsg_flags |= NLM_F_DUMP;
      // sport == local.port || dport == remote.port, as ss compiles an or:
      // a test falls through (yes) when true and skips the next 4 bytes (no)
      // when false; the jump between the tests goes to the end (accept), and
      // the last test's "no" lands past the end (reject). The kernel only
      // accepts a "no" target that the chain of "yes" jumps reaches.
      m.ops[0] = {INET_DIAG_BC_S_EQ, 8, 12};
      m.ops[1].no = c.local.port;
      m.ops[2] = {INET_DIAG_BC_JMP, 4, 12};
      m.ops[3] = {INET_DIAG_BC_D_EQ, 8, 12};
      m.ops[4].no = c.remote.port;
      m.bytecode.nla_type = INET_DIAG_REQ_BYTECODE;
      m.bytecode.nla_len = static_cast<uint16_t>(NLA_HDRLEN + sizeof(m.ops));
      m.nlh.nlmsg_len = sizeof(m);
    } else {
      FillId(c.resolved->local, c.resolved->remote, &m.req.id);
      m.req.id.idiag_cookie[0] = c.resolved->cookie[0];
      m.req.id.idiag_cookie[1] = c.resolved->cookie[1];
      m.nlh.nlmsg_len = NLMSG_LENGTH(sizeof(m.req));
    }
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    if (sendto(fd, &m, m.nlh.nlmsg_len, 0, reinterpret_cast<const sockaddr*>(&kernel),
               sizeof(kernel)) < 0) {
      return absl::InternalError(absl::StrCat("sock_diag: ", strerror(errno)));
    }
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<TcpStatsSource> NewSockDiagTcpStats() {
  return std::make_unique<SockDiagTcpStats>();
}

TcpCounterDeltas::Delta TcpCounterDeltas::Update(size_t index, const TcpCounters& now) {
  Delta d{now.retransmitted_segments, now.sent_segments, now.spurious_retransmitted_segments};
  if (index >= last_.size()) last_.resize(index + 1);
  std::optional<TcpCounters>& last = last_[index];
  // Counters that went back belong to another socket: all of them are new.
  if (last && now.sent_segments >= last->sent_segments &&
      now.retransmitted_segments >= last->retransmitted_segments &&
      now.spurious_retransmitted_segments >= last->spurious_retransmitted_segments) {
    d.retransmitted_segments -= last->retransmitted_segments;
    d.sent_segments -= last->sent_segments;
    d.spurious_retransmitted_segments -= last->spurious_retransmitted_segments;
  }
  last = now;
  return d;
}

void UnacknowledgedWatch::Reset() {
  acked_through_.reset();
  unacked_since_.reset();
  reported_ = false;
}

bool UnacknowledgedWatch::NeedsRead(absl::Duration now, absl::Duration sent) const {
  if (reported_) return true;
  if (acked_through_ && *acked_through_ == sent) return false;
  return now - sent >= min_age_;
}

std::optional<UnacknowledgedWatch::Report> UnacknowledgedWatch::Update(
    absl::Duration now, absl::Duration sent, const TcpCounters& counters) {
  if (counters.unacked_segments == 0) {
    acked_through_ = sent;
    unacked_since_.reset();
    if (!reported_) return std::nullopt;
    reported_ = false;
    return Report{0, absl::ZeroDuration()};
  }
  if (!unacked_since_) unacked_since_ = sent;
  if (counters.timeout_retransmits < min_retransmits_) return std::nullopt;
  reported_ = true;
  return Report{counters.timeout_retransmits, now - *unacked_since_};
}

}  // namespace gloowatch
