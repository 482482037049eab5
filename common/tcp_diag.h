// The kernel's TCP socket table through NETLINK_SOCK_DIAG (inet_diag): each
// connection's addresses, inode, queues and struct tcp_info. No privilege is
// needed (it is what `ss -ti` reads). The transport reads its own probe
// pairs' sockets with it (transport/tcp_stats), the daemon the sockets that
// training ranks list (daemon/job_sockets).
#pragma once

#include <linux/netlink.h>
#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/status.h"

namespace gloowatch {

struct TcpEndpoint {
  int family = AF_UNSPEC;             // AF_INET or AF_INET6
  std::array<uint8_t, 16> address{};  // network order; IPv4 in the first 4 bytes
  uint16_t port = 0;                  // host order

  static std::optional<TcpEndpoint> FromSockaddr(const sockaddr_storage& ss);
  std::string ToString() const;
  bool SameHost(const TcpEndpoint& o) const { return family == o.family && address == o.address; }
  bool operator==(const TcpEndpoint& o) const { return SameHost(o) && port == o.port; }
};

// The fields of struct tcp_info that gloowatch reads. A kernel too old for
// a field leaves it 0 (has_* say which matter).
struct TcpInfo {
  uint64_t bytes_sent = 0;                       // tcpi_bytes_sent (4.19), retransmissions included
  uint64_t bytes_acked = 0;                      // tcpi_bytes_acked
  uint64_t bytes_received = 0;                   // tcpi_bytes_received
  uint64_t sent_segments = 0;                    // tcpi_data_segs_out (4.6), else tcpi_segs_out
  uint64_t received_segments = 0;                // tcpi_data_segs_in
  uint64_t retransmitted_segments = 0;           // tcpi_total_retrans
  uint64_t spurious_retransmitted_segments = 0;  // tcpi_dsack_dups (4.19)
  uint32_t rtt_us = 0;                           // tcpi_rtt
  uint32_t rtt_variation_us = 0;                 // tcpi_rttvar
  uint32_t backoff = 0;                          // tcpi_backoff
  uint32_t unacked_segments = 0;                 // tcpi_unacked
  uint32_t timeout_retransmits = 0;              // tcpi_retransmits: RTOs since the last ACK
  uint32_t notsent_bytes = 0;                    // tcpi_notsent_bytes
  uint32_t send_window = 0;                      // tcpi_snd_wnd (6.2)
  bool has_send_window = false;
  uint32_t since_last_send_ms = 0;     // tcpi_last_data_sent
  uint32_t since_last_receive_ms = 0;  // tcpi_last_data_recv
  uint32_t since_last_ack_ms = 0;      // tcpi_last_ack_recv
};

// One socket of the table.
struct TcpDiagEntry {
  TcpEndpoint local, remote;
  int state = 0;  // TCP_ESTABLISHED (1) ... as in include/net/tcp_states.h
  uint64_t inode = 0;
  // For TCP: bytes arrived and not read by the process (rcv_nxt -
  // copied_seq), and bytes written and not acknowledged (write_seq -
  // snd_una: in flight plus not sent yet).
  uint32_t receive_queue = 0;
  uint32_t send_queue = 0;
  std::array<uint32_t, 2> cookie{};
  std::optional<TcpInfo> info;  // absent when the reply had no INET_DIAG_INFO
};

inline constexpr int kTcpStateEstablished = 1;
inline constexpr int kTcpStateListen = 10;
// "established", "close_wait", ...; "unknown" outside 1..12.
const char* TcpStateName(int state);

// Parses one SOCK_DIAG_BY_FAMILY message.
TcpDiagEntry ParseTcpDiagMessage(const nlmsghdr* message);

// Dumps every TCP socket of `family` (AF_INET or AF_INET6) in the states of
// `state_mask` (bit 1 << state) in this network namespace, with tcp_info,
// calling `visit` for each whose inode `keep` accepts (the rest are not
// parsed: a host may hold many thousands). One netlink socket per call.
absl::Status DumpTcpSockets(int family, uint32_t state_mask,
                            const std::function<bool(uint64_t inode)>& keep,
                            const std::function<void(const TcpDiagEntry&)>& visit);

}  // namespace gloowatch
