// The kernel's TCP statistics (struct tcp_info) of our own Gloo pair
// connections. Gloo keeps a pair's socket private, so the connection is found
// through NETLINK_SOCK_DIAG by its addresses instead of its fd.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/tcp_diag.h"

namespace gloowatch {

// One Gloo pair's connection, named by the listening addresses both pairs
// advertised. One side accepted on its listening address, the other connected
// from an ephemeral port, so our socket is the one whose local address is
// `local` or whose remote address is `remote` (and whose other end is on the
// expected host: Gloo closes the listener once connected, so the port may be
// reused by a connection with another host).
struct TcpConnection {
  TcpEndpoint local;
  TcpEndpoint remote;
  // Filled by the first successful read: the socket's own addresses and
  // cookie, so later reads are exact lookups instead of a table walk.
  struct Resolved {
    TcpEndpoint local, remote;
    std::array<uint32_t, 2> cookie{};
  };
  std::optional<Resolved> resolved;
};

// Cumulative since the connection was opened.
struct TcpCounters {
  uint64_t retransmitted_segments = 0;  // tcpi_total_retrans
  uint64_t sent_segments = 0;           // tcpi_data_segs_out (data only, retransmissions too)
  // Retransmissions the peer reported as duplicates (DSACK, tcpi_dsack_dups):
  // the original had arrived, so they were not losses.
  uint64_t spurious_retransmitted_segments = 0;
  absl::Duration rtt;            // tcpi_rtt: the kernel's smoothed RTT
  absl::Duration rtt_variation;  // tcpi_rttvar
  // Now, not cumulative: segments sent and not yet acknowledged
  // (tcpi_unacked), and how often the oldest of them was retransmitted on a
  // timeout in a row (tcpi_retransmits, reset by an acknowledgement).
  uint32_t unacked_segments = 0;
  uint32_t timeout_retransmits = 0;
};

class TcpStatsSource {
 public:
  virtual ~TcpStatsSource() = default;
  // The counters of `connection`'s established socket in our network
  // namespace; kNotFound when there is none (closed). Thread-safe.
  virtual absl::StatusOr<TcpCounters> Read(TcpConnection& connection) const = 0;
};

// Reads through NETLINK_SOCK_DIAG (inet_diag, INET_DIAG_INFO); one netlink
// socket per call.
std::unique_ptr<TcpStatsSource> NewSockDiagTcpStats();

// What the connections of one probe session sent and retransmitted since the
// previous call: a new session's (or a new socket's) counters start at 0.
class TcpCounterDeltas {
 public:
  struct Delta {
    uint64_t retransmitted_segments = 0;
    uint64_t sent_segments = 0;
    uint64_t spurious_retransmitted_segments = 0;
  };
  // `index` names the connection within the session (command, bulk, then
  // the flows after the first).
  Delta Update(size_t index, const TcpCounters& now);

 private:
  std::vector<std::optional<TcpCounters>> last_;
};

// The watch over one command pair's socket (PeerProber::WatchUnacknowledged):
// whether to read it now, and what a read says. Data the peer's kernel has not
// acknowledged although ours retransmitted it on timeouts `min_retransmits`
// times in a row means nothing gets through; RTO back-off makes that about a
// second without an acknowledgement, which a few percent of random loss
// almost never does to one segment. Not thread-safe.
class UnacknowledgedWatch {
 public:
  struct Report {
    uint32_t retransmissions = 0;  // 0: acknowledged again
    absl::Duration at_least;       // how long it has been unacknowledged
  };

  UnacknowledgedWatch(absl::Duration min_age, uint32_t min_retransmits)
      : min_age_(min_age), min_retransmits_(min_retransmits) {}

  // A new session: nothing seen yet.
  void Reset();
  // Whether the socket needs a read at `now`, the last command having gone
  // out at `sent` (monotonic): it is at least min_age old and not known
  // acknowledged, or a report is standing.
  bool NeedsRead(absl::Duration now, absl::Duration sent) const;
  // What a read at `now` found; the report to make, if any.
  std::optional<Report> Update(absl::Duration now, absl::Duration sent,
                               const TcpCounters& counters);

 private:
  const absl::Duration min_age_;
  const uint32_t min_retransmits_;
  std::optional<absl::Duration> acked_through_;  // the last command known acknowledged
  std::optional<absl::Duration> unacked_since_;
  bool reported_ = false;
};

}  // namespace gloowatch
