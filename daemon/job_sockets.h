// The TCP connections of the training ranks that report to this daemon: a
// rank lists its socket inodes (CollectiveReport.sockets, from its own
// /proc/self/fd), and the daemon reads those sockets in the kernel's table
// (sock_diag, matched by inode) every few seconds. What `gloowatch job`
// joins into rank pairs: bytes, segments, loss, RTT, what is unacknowledged
// or unread and for how long (docs/client.md, "The job's links").
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/tcp_diag.h"
#include "proto/gloowatch.pb.h"

namespace gloowatch {

// The host's TCP socket table; a seam so tests can put sockets in it.
class TcpSocketTable {
 public:
  virtual ~TcpSocketTable() = default;
  // Calls `visit` for every TCP socket of this network namespace that is
  // not listening (IPv4 and IPv6).
  virtual absl::Status Visit(const std::function<void(const TcpDiagEntry&)>& visit) const = 0;
};

// sock_diag dumps, one per family.
std::unique_ptr<TcpSocketTable> NewSockDiagSocketTable();

class JobSockets {
 public:
  // `loss_window`: the loss ratio covers the reads within it.
  // `own_ports`: this daemon's listening ports; a rank's connection to one
  // of them on this host (the reporter's own channel) is not the job's.
  JobSockets(const Clock* clock, const TcpSocketTable* table, std::vector<uint16_t> own_ports,
             absl::Duration loss_window = absl::Seconds(15));

  // What a rank asked for: its socket inodes and its store's port.
  struct Wanted {
    uint32_t store_port = 0;
  };
  // Reads the table now and keeps the figures of the sockets in `wanted`
  // (by inode); sockets no longer wanted or no longer in the table are
  // forgotten. Thread-safe; the table is read without the lock held.
  absl::Status Read(const std::unordered_map<uint64_t, Wanted>& wanted);

  // The last read's figures of `inode`, absent when not found.
  std::optional<v1::JobSocket> Find(uint64_t inode) const;

  // Sockets found by the last read.
  size_t size() const;

 private:
  struct Sample {
    absl::Time at;
    uint64_t sent = 0, retransmitted = 0, spurious = 0;
  };
  struct Socket {
    uint64_t cookie = 0;  // tells a reused inode apart
    v1::JobSocket figures;
    std::deque<Sample> history;  // within loss_window_, oldest first
    uint64_t copied_bytes = 0;   // read by the process: received - receive queue
    std::optional<absl::Time> unread_since;
  };
  void Update(Socket& socket, const TcpDiagEntry& entry, const Wanted& wanted,
              absl::Time now) const;

  const Clock* clock_;
  const TcpSocketTable* table_;
  const std::vector<uint16_t> own_ports_;
  const absl::Duration loss_window_;
  mutable absl::Mutex mu_;
  std::unordered_map<uint64_t, Socket> sockets_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gloowatch
