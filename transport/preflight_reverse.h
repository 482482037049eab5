// The reverse round of a job preflight (docs/design.md "Preflight").
//
// Gloo decides which side of a pair listens by comparing the two pair
// addresses: the lower one (IP, then port) listens and the higher one
// connects (tcp::Pair::connect in the Gloo Debian ships; Device::isInitiator
// since Gloo's device-wide listener). Rank, creation order and who calls
// connect first do not change it, and a Gloo pair cannot be made to connect
// from the lower address, so a Gloo mesh proves every pair in one direction
// only. In the reverse round the side that listened connects the other way:
// a TCP connect to the other host's reverse listener, an ephemeral port on
// its Gloo address as a Gloo listener is, sending its rank; the other side
// waits for it to arrive. A firewall on a host's ephemeral ports then shows
// on every pair of that host, not only where Gloo made it listen.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace gloowatch {

// Whether Gloo makes the pair at `self` connect to the pair at `peer`
// (serialized Gloo TCP addresses): true when `self` is the higher address.
// An error when either is not a Gloo TCP address, the families differ or
// the two are the same address.
absl::StatusOr<bool> GlooConnectsFrom(const std::string& self, const std::string& peer);

// A listening TCP socket on a Gloo pair's IP (any port the kernel picks, as
// Gloo's listeners take), owned; closed by the destructor.
class ReverseListener {
 public:
  // `pair_address`: serialized address of a pair on the job's Gloo device.
  static absl::StatusOr<ReverseListener> Open(const std::string& pair_address, int backlog);
  ReverseListener() = default;
  ReverseListener(ReverseListener&& other) noexcept;
  ReverseListener& operator=(ReverseListener&& other) noexcept;
  ReverseListener(const ReverseListener&) = delete;
  ReverseListener& operator=(const ReverseListener&) = delete;
  ~ReverseListener();

  int fd() const { return fd_; }
  const std::string& address() const { return address_; }  // serialized Gloo TCP address

 private:
  int fd_ = -1;
  std::string address_;
};

// What this host does with one peer in the reverse round.
struct ReverseTask {
  std::string connect_to;  // the peer's reverse listener, when this side connects
  bool await = false;      // the peer connects to this host's listener
};

struct ReverseOutcome {
  bool tried = false;   // connected out, or awaited
  absl::Status status;  // OK: connected (and sent the rank), or the peer's arrived
  absl::Duration took;  // from the start of the round
  std::string address;  // ip:port connected to
};

// Accepted connections read at once, which bounds what strangers' connections
// cost; while that many are open, further ones wait in the backlog.
inline constexpr size_t kMaxAcceptedOpen = 64;

// Runs the round for `self_rank`: connects to every `connect_to` at once and
// sends each the 8 bytes naming this rank, and accepts on `listener` until
// every awaited rank has arrived, all within `timeout` of the start.
// Connections that send anything else are closed. Entry r of the result
// answers tasks[r].
std::vector<ReverseOutcome> RunReverseRound(const ReverseListener& listener, uint32_t self_rank,
                                            const std::vector<ReverseTask>& tasks,
                                            absl::Duration timeout, const Clock* clock);

}  // namespace gloowatch
