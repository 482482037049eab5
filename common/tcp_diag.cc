#include "common/tcp_diag.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/sock_diag.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"

namespace gloowatch {
namespace {

// Large enough for a batch of replies (each about 300 bytes with tcp_info).
constexpr size_t kReceiveBytes = 64 << 10;

// Whether the kernel's tcp_info (of `have` bytes) reaches past `field`.
#define GW_HAS_TCP_INFO_FIELD(have, field) \
  ((have) >= offsetof(tcp_info, field) + sizeof(static_cast<tcp_info*>(nullptr)->field))

TcpInfo InfoOf(const tcp_info& info, size_t have) {
  TcpInfo t;
  t.bytes_sent = info.tcpi_bytes_sent;
  t.bytes_acked = info.tcpi_bytes_acked;
  t.bytes_received = info.tcpi_bytes_received;
  // tcpi_data_segs_out (Linux 4.6) leaves out pure ACKs, which a receiving
  // socket sends plenty of and which are never retransmitted.
  t.sent_segments = GW_HAS_TCP_INFO_FIELD(have, tcpi_data_segs_out) ? info.tcpi_data_segs_out
                                                                    : info.tcpi_segs_out;
  t.received_segments = info.tcpi_data_segs_in;
  t.retransmitted_segments = info.tcpi_total_retrans;
  t.spurious_retransmitted_segments = info.tcpi_dsack_dups;  // 0 before Linux 4.19
  t.rtt_us = info.tcpi_rtt;
  t.rtt_variation_us = info.tcpi_rttvar;
  t.backoff = info.tcpi_backoff;
  t.unacked_segments = info.tcpi_unacked;
  t.timeout_retransmits = info.tcpi_retransmits;
  t.notsent_bytes = info.tcpi_notsent_bytes;
  // tcpi_snd_wnd (Linux 6.2): the peer's advertised window, 0 when its
  // process does not read.
  t.has_send_window = GW_HAS_TCP_INFO_FIELD(have, tcpi_snd_wnd);
  t.send_window = info.tcpi_snd_wnd;
  t.since_last_send_ms = info.tcpi_last_data_sent;
  t.since_last_receive_ms = info.tcpi_last_data_recv;
  t.since_last_ack_ms = info.tcpi_last_ack_recv;
  return t;
}

#undef GW_HAS_TCP_INFO_FIELD

}  // namespace

std::optional<TcpEndpoint> TcpEndpoint::FromSockaddr(const sockaddr_storage& ss) {
  TcpEndpoint e;
  e.family = ss.ss_family;
  if (ss.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
    std::memcpy(e.address.data(), &in->sin_addr, 4);
    e.port = ntohs(in->sin_port);
    return e;
  }
  if (ss.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    std::memcpy(e.address.data(), &in6->sin6_addr, 16);
    e.port = ntohs(in6->sin6_port);
    return e;
  }
  return std::nullopt;
}

std::string TcpEndpoint::ToString() const {
  char host[INET6_ADDRSTRLEN] = {0};
  if (family != AF_INET && family != AF_INET6) return "?";
  inet_ntop(family, address.data(), host, sizeof(host));
  return family == AF_INET ? absl::StrCat(host, ":", port) : absl::StrCat("[", host, "]:", port);
}

const char* TcpStateName(int state) {
  static const char* const kNames[] = {
      "unknown", "established", "syn_sent", "syn_recv", "fin_wait1", "fin_wait2",   "time_wait",
      "close",   "close_wait",  "last_ack", "listen",   "closing",   "new_syn_recv"};
  return state >= 1 && state <= 12 ? kNames[state] : kNames[0];
}

TcpDiagEntry ParseTcpDiagMessage(const nlmsghdr* h) {
  const auto* msg = static_cast<const inet_diag_msg*>(NLMSG_DATA(h));
  TcpDiagEntry e;
  e.local.family = e.remote.family = msg->idiag_family;
  e.local.port = ntohs(msg->id.idiag_sport);
  e.remote.port = ntohs(msg->id.idiag_dport);
  const size_t bytes = msg->idiag_family == AF_INET ? 4 : 16;
  std::memcpy(e.local.address.data(), msg->id.idiag_src, bytes);
  std::memcpy(e.remote.address.data(), msg->id.idiag_dst, bytes);
  e.state = msg->idiag_state;
  e.inode = msg->idiag_inode;
  e.receive_queue = msg->idiag_rqueue;
  e.send_queue = msg->idiag_wqueue;
  e.cookie = {msg->id.idiag_cookie[0], msg->id.idiag_cookie[1]};
  int len = static_cast<int>(h->nlmsg_len) - static_cast<int>(NLMSG_LENGTH(sizeof(*msg)));
  for (const auto* a = reinterpret_cast<const nlattr*>(msg + 1); len >= NLA_HDRLEN;) {
    const int size = static_cast<int>(a->nla_len);
    if (size < NLA_HDRLEN || size > len) break;
    if ((a->nla_type & NLA_TYPE_MASK) == INET_DIAG_INFO) {
      // Older kernels send a shorter tcp_info; the rest stays 0.
      tcp_info info{};
      const size_t have = static_cast<size_t>(size - NLA_HDRLEN);
      std::memcpy(&info, reinterpret_cast<const char*>(a) + NLA_HDRLEN,
                  std::min(have, sizeof(info)));
      e.info = InfoOf(info, have);
      break;
    }
    const int step = NLA_ALIGN(size);
    len -= step;
    a = reinterpret_cast<const nlattr*>(reinterpret_cast<const char*>(a) + step);
  }
  return e;
}

absl::Status DumpTcpSockets(int family, uint32_t state_mask,
                            const std::function<bool(uint64_t inode)>& keep,
                            const std::function<void(const TcpDiagEntry&)>& visit) {
  const int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (fd < 0) return absl::InternalError(absl::StrCat("sock_diag: ", strerror(errno)));
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  // The kernel answers at once; this only bounds a surprise.
  const timeval timeout{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  struct {
    nlmsghdr nlh;
    inet_diag_req_v2 req;
  } m;
  std::memset(&m, 0, sizeof(m));
  m.nlh.nlmsg_len = sizeof(m);
  m.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  m.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  m.req.sdiag_family = static_cast<uint8_t>(family);
  m.req.sdiag_protocol = IPPROTO_TCP;
  m.req.idiag_ext = 1 << (INET_DIAG_INFO - 1);
  m.req.idiag_states = state_mask;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (sendto(fd, &m, sizeof(m), 0, reinterpret_cast<const sockaddr*>(&kernel), sizeof(kernel)) <
      0) {
    return absl::InternalError(absl::StrCat("sock_diag: ", strerror(errno)));
  }
  std::vector<char> buf(kReceiveBytes);
  while (true) {
    const ssize_t n = recv(fd, buf.data(), buf.size(), 0);
    if (n < 0) return absl::InternalError(absl::StrCat("sock_diag: ", strerror(errno)));
    if (n == 0) return absl::OkStatus();
    int left = static_cast<int>(n);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buf.data()); NLMSG_OK(h, left);
         h = NLMSG_NEXT(h, left)) {
      if (h->nlmsg_type == NLMSG_DONE) return absl::OkStatus();
      if (h->nlmsg_type == NLMSG_ERROR) {
        const int error = -static_cast<const nlmsgerr*>(NLMSG_DATA(h))->error;
        if (error == 0) continue;
        return absl::InternalError(absl::StrCat("sock_diag: ", strerror(error)));
      }
      if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY) continue;
      if (!keep(static_cast<const inet_diag_msg*>(NLMSG_DATA(h))->idiag_inode)) continue;
      visit(ParseTcpDiagMessage(h));
    }
  }
}

}  // namespace gloowatch
