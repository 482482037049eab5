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
#include <unordered_set>
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
  // Calls `visit` for every TCP socket of `family` (AF_INET, AF_INET6) in
  // this network namespace held by a process, whose inode `keep` accepts.
  virtual absl::Status Visit(int family, const std::function<bool(uint64_t inode)>& keep,
                             const std::function<void(const TcpDiagEntry&)>& visit) const = 0;
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
  // forgotten. Thread-safe; Find does not wait for the table walk.
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
    uint64_t cookie = 0;      // tells a reused inode apart
    uint64_t generation = 0;  // of the last read that found it
    int state = 0;            // TCP state as of that read
    v1::JobSocket figures;
    std::deque<Sample> history;  // within loss_window_, oldest first
    uint64_t copied_bytes = 0;   // read by the process: received - receive queue
    std::optional<absl::Time> unread_since;
  };
  // `added`: first seen by this read (its addresses are set then).
  void Update(Socket& socket, const TcpDiagEntry& entry, const Wanted& wanted, absl::Time now,
              bool added) const;

  const Clock* clock_;
  const TcpSocketTable* table_;
  const std::vector<uint16_t> own_ports_;
  const absl::Duration loss_window_;
  mutable absl::Mutex mu_;
  std::unordered_map<uint64_t, Socket> sockets_ ABSL_GUARDED_BY(mu_);
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  // Each table walk costs the same whatever it finds (the kernel walks all
  // of the host's TCP hash buckets: about 1.7 ms on the development VM), so
  // the IPv6 table is walked only while it held a wanted socket, or when a
  // wanted inode is new: one found in neither table before (a rank's Unix
  // and UDP sockets, its channel to us) is remembered as absent.
  absl::Mutex read_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  std::unordered_set<uint64_t> absent_ ABSL_GUARDED_BY(read_mu_);
  bool ipv6_found_ ABSL_GUARDED_BY(read_mu_) = false;
};

}  // namespace gloowatch
