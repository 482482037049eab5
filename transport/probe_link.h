// Probing over Gloo TCP pairs: the wire protocol between two daemons.
//
// Each direction of a peer link has its own two pairs, set up by the prober
// (requester) through the peer's OpenProbePair RPC:
//  - a command pair in sync mode with bound buffers: commands, ping echoes and
//    timestamp replies. Sync mode keeps reads in our own threads, which is both
//    faster (no event-loop hand-off) and safer: a Gloo assertion then throws in
//    a thread that catches it, not in Gloo's event loop.
//  - a bulk pair in async mode with unbound buffers for bandwidth transfers.
// Every message size is fixed by the handshake, so neither side ever makes
// Gloo see a message it did not expect.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "channel/probe_observer.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/estimators.h"
#include "common/probe_parameters.h"
#include "proto/gloowatch.pb.h"
#include "transport/tcp_stats.h"

namespace gloo::transport {
class Buffer;
class Context;
class Device;
class Pair;
}  // namespace gloo::transport

namespace gloowatch {

// Allows at most one bandwidth transfer involving this node at a time,
// whichever side started it, and keeps all of them within a share of wall
// time (the budget): a transfer of duration d that started at t closes the
// gate until t + d / budget. Our own transfers and the peers' we serve both
// count, since both use this node's link. Thread-safe.
class BandwidthGate {
 public:
  class Lease {
   public:
    explicit Lease(BandwidthGate* gate) : gate_(gate) {}
    Lease(Lease&& other) noexcept : gate_(other.gate_), started_(other.started_) {
      other.gate_ = nullptr;
    }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() {
      if (gate_ != nullptr) gate_->Release(started_);
    }
    // The transfer itself begins now (both sides agreed): from here until the
    // lease ends counts against the budget. A lease never started costs nothing.
    void Start();
    // The node's transfer region, at least `bytes` long and already touched.
    // Reused from transfer to transfer (the gate admits one at a time): a
    // fresh 4 MiB region per transfer cost a thousand page faults and zeroing
    // at both ends, a quarter of the transport's CPU with 31 peers.
    std::vector<char>& Region(size_t bytes);

   private:
    BandwidthGate* gate_;
    std::optional<absl::Duration> started_;
  };

  // `budget` in (0, 1]; 1 only serializes transfers.
  explicit BandwidthGate(const Clock* clock, double budget = 1.0);

  // Empty when another transfer holds the gate or the budget is spent.
  std::optional<Lease> TryAcquire();
  void SetBudget(double budget);
  // When the budget next allows a transfer, on the clock's monotonic scale.
  absl::Duration open_at() const;
  // Time spent in transfers since the gate was created.
  absl::Duration transfer_time() const;

 private:
  void Release(std::optional<absl::Duration> started);

  const Clock* const clock_;
  mutable absl::Mutex mu_;
  double budget_ ABSL_GUARDED_BY(mu_);
  bool busy_ ABSL_GUARDED_BY(mu_) = false;
  absl::Duration open_at_ ABSL_GUARDED_BY(mu_) = -absl::InfiniteDuration();
  absl::Duration transfer_time_ ABSL_GUARDED_BY(mu_);
  // Owned by the lease holder (busy_), so not guarded by mu_. Kept between
  // transfers up to kRetainedRegionBytes; a larger one is freed after use.
  std::vector<char> region_;
};

// A Gloo pair and its context, before and after connecting.
struct PairEndpoint {
  std::shared_ptr<gloo::transport::Context> context;
  gloo::transport::Pair* pair = nullptr;
};

// One flow: a command pair in sync mode with its bound buffers. The buffers
// exist before connecting so a message that arrives early has a home; they
// are declared after the pair, so they are released before it.
struct CommandFlow {
  CommandFlow();
  ~CommandFlow();
  PairEndpoint pair;
  std::vector<char> command_buf, ping_buf, control_buf;
  std::unique_ptr<gloo::transport::Buffer> command, ping, control;
};

// The pairs of one side of a link: the command flows (flows[0] is the
// command pair, the others the extra flows of probe.flows, each its own TCP
// connection on its own ports so that ECMP may hash it onto another path)
// and the bulk pair. Rank 0 is the requester (sends commands, receives
// replies), rank 1 the responder (the reverse).
class ProbePairs {
 public:
  static absl::StatusOr<std::unique_ptr<ProbePairs>> Create(gloo::transport::Device& device,
                                                            const v1::ProbeParameters& params,
                                                            int rank);

  std::string command_address() const;
  std::string bulk_address() const;
  // The addresses of flows 1.. (empty with one flow).
  std::vector<std::string> flow_addresses() const;
  // Connects every pair (command, bulk, then flows 1.. in order, as the
  // other side does), then puts the command flows in sync mode.
  // `peer_flow_addresses` must name every flow after the first.
  absl::Status Connect(const std::string& peer_command_address,
                       const std::string& peer_bulk_address,
                       const std::vector<std::string>& peer_flow_addresses);
  // Keeps flow 0 alone (a peer that serves one flow).
  void DropFlowsAfterFirst() { flows.resize(1); }

  std::vector<std::unique_ptr<CommandFlow>> flows;
  PairEndpoint bulk_pair;

 private:
  ProbePairs() = default;
};

// The socket address in serialized Gloo TCP address bytes; false when they
// are not one.
bool SockaddrFromBytes(const std::string& bytes, sockaddr_storage* out);
// Renders the ip:port of serialized Gloo TCP address bytes (Address::str()
// prints the port byte-swapped, so it is not used).
std::string GlooAddressToString(const std::string& bytes);
// True when the serialized address is 127.0.0.0/8 or ::1.
bool GlooAddressIsLoopback(const std::string& bytes);

// The responder's reply to a timestamp exchange (and to bandwidth commands):
// op, status, what the responder knows of its daemon, sequence and its
// receive and send times. Latency messages up to this size are answered with
// it. Layout (each field in the host's byte order, little-endian on every
// host gloowatch builds for):
//   byte 0       op               the command answered
//   byte 1       status           ok, busy, done (bandwidth)
//   byte 2       daemon flags     bit 0: bytes 4-5 hold the daemon's silence
//   byte 3       reserved, 0
//   bytes 4-5    daemon silent    whole seconds since the responder's daemon
//                                 last told its transport it was alive
//                                 (uint16, saturating at 65535)
//   bytes 6-7    reserved, 0
//   bytes 8-15   seq              the command's sequence number
//   bytes 16-23  t1               receive time, unix ns
//   bytes 24-31  t2               send time, unix ns
// Bytes 2-7 were reserved and zero before the daemon's liveness went there: a
// responder of an older version sends flags 0 (unknown), and a requester of
// an older version never reads them.
inline constexpr uint32_t kTimestampReplyBytes = 32;
inline constexpr uint8_t kDaemonLivenessPresent = 1;

// When this transport's daemon last said it is alive: Daemon::Tick sends a
// DaemonTick over the socketpair every second, and the transport notes it
// here. Responders put the silence in every 32-byte reply, so a peer tells a
// daemon that is frozen (SIGSTOP, a stuck main loop) while its transport
// still answers pings. Thread-safe, lock-free: read on every reply.
class DaemonLiveness {
 public:
  // Counts as heard from now: the daemon has just started this transport.
  explicit DaemonLiveness(const Clock* clock);
  void Heard();
  // Whole seconds since the daemon was last heard from, saturating at 65535.
  uint16_t SilentSeconds() const;

 private:
  const Clock* const clock_;
  std::atomic<int64_t> heard_at_ns_;
};

// What a 32-byte reply said of the responder's daemon.
struct PeerDaemonReport {
  // Whole seconds since its daemon was last heard from; nullopt when the
  // reply carried no liveness (flags 0: a responder of an older version).
  std::optional<uint32_t> silent_seconds;
};

// One latency probe: its round trips and, when the replies carried the peer's
// timestamps, one four-timestamp sample per round trip.
struct PingBurst {
  std::vector<absl::Duration> rtts;
  std::vector<TimestampSample> samples;
};

// ProbeSession::tcp_connections' order: the command pair (flow 0), the bulk
// pair (no flow), then flows 1...
std::optional<size_t> FlowOfTcpConnection(size_t index);
size_t TcpConnectionOfFlow(size_t flow);

// The requester side of one peer link. Not thread-safe: owned and used by the
// peer's prober thread. Every method catches Gloo exceptions and returns them
// as a status whose message keeps Gloo's text (for ClassifyMessage); after a
// failed call the session is unusable and must be dropped.
class ProbeSession {
 public:
  // Creates our two pairs (unconnected) so their addresses can be sent to the
  // peer in OpenProbePair.
  static absl::StatusOr<std::unique_ptr<ProbeSession>> Create(
      std::shared_ptr<gloo::transport::Device> device, const v1::ProbeParameters& params,
      const Clock* clock);

  std::string command_address() const { return pairs_->command_address(); }
  std::string bulk_address() const { return pairs_->bulk_address(); }

  // Our flows after the first, for OpenProbePair.
  std::vector<std::string> flow_addresses() const { return pairs_->flow_addresses(); }

  // Connects every pair to the peer's addresses from OpenProbePairResponse.
  // A peer that names no flow after the first (an older version) is probed
  // over one flow; one that names some but not all broke the protocol.
  absl::Status Connect(const std::string& peer_command_address,
                       const std::string& peer_bulk_address,
                       const std::vector<std::string>& peer_flow_addresses = {});

  // The command and bulk pairs' TCP connections, then those of flows 1..
  // (TcpConnectionOfFlow), for their kernel statistics; empty before Connect.
  std::vector<TcpConnection> tcp_connections() const;

  // The flows the session probes over (1 before Connect and against a peer
  // of an older version), and the one the next command goes over.
  size_t flows() const { return pairs_->flows.size(); }
  size_t current_flow() const { return current_; }
  // Moves the commands that follow to `flow`: the peer is told over the
  // current flow (a command without a reply), then reads that flow.
  absl::Status UseFlow(size_t flow);

  // Small-message round trips, one uncounted warm-up first. When the
  // latency message fits the timestamp reply (pings_carry_timestamps()), each
  // round trip is a timestamp exchange: the burst then also yields its
  // four-timestamp samples, and skew needs no exchanges of its own.
  absl::StatusOr<PingBurst> Ping(int count);
  bool pings_carry_timestamps() const {
    return params_.latency_message_bytes() <= kTimestampReplyBytes;
  }
  // NTP-style four-timestamp exchanges.
  absl::StatusOr<std::vector<TimestampSample>> SyncBurst(int count);
  // One timed transfer of the agreed size. kResourceExhausted (not a link failure)
  // when this node or the peer is busy with another transfer.
  absl::StatusOr<BandwidthSample> Bandwidth(BandwidthDirection direction, BandwidthGate& gate);
  // Keeps the peer's command wait from timing out between probes.
  absl::Status Keepalive();

  // What the latest 32-byte reply (a timestamp exchange, a bandwidth
  // command's answer) said of the peer's daemon, once: unset when no such
  // reply came since the last call (an echoed latency message has none).
  std::optional<PeerDaemonReport> TakePeerDaemon();

  const v1::ProbeParameters& params() const { return params_; }

 private:
  ProbeSession(const v1::ProbeParameters& params, const Clock* clock);
  absl::Status SendCommand(uint8_t op);
  // `op` with `seq` as is over the current flow.
  absl::Status SendOnCurrentFlow(uint8_t op, uint64_t seq);
  CommandFlow& flow() { return *pairs_->flows[current_]; }
  // An echo of the latency message.
  absl::StatusOr<absl::Duration> RoundTrip();
  // A timestamp exchange, timed like a round trip.
  absl::StatusOr<std::pair<absl::Duration, TimestampSample>> TimestampRoundTrip();
  absl::Status AwaitControl(uint8_t op, struct ControlReply* reply);

  v1::ProbeParameters params_;
  const Clock* clock_;
  uint64_t seq_ = 0;
  std::unique_ptr<ProbePairs> pairs_;
  std::string peer_command_address_, peer_bulk_address_;
  std::vector<std::string> peer_flow_addresses_;
  size_t current_ = 0;
  std::optional<PeerDaemonReport> peer_daemon_;
};

// The serving side of one peer link: answers a single requester's commands on
// its own thread until the link fails, times out or Stop() is called.
class ProbeResponder : public std::enable_shared_from_this<ProbeResponder> {
 public:
  // `liveness`: what its replies say of this node's daemon; null sends flags
  // 0 (unknown), as an older responder does.
  static absl::StatusOr<std::shared_ptr<ProbeResponder>> Create(
      std::shared_ptr<gloo::transport::Device> device, const v1::ProbeParameters& params,
      const Clock* clock, BandwidthGate* gate, std::string peer_name,
      const DaemonLiveness* liveness = nullptr);
  std::string command_address() const { return pairs_->command_address(); }
  std::string bulk_address() const { return pairs_->bulk_address(); }
  std::vector<std::string> flow_addresses() const { return pairs_->flow_addresses(); }
  const std::string& peer_name() const { return peer_name_; }

  // Starts the serving thread, which connects to the requester's pairs first.
  void Start(const std::string& peer_command_address, const std::string& peer_bulk_address,
             const std::vector<std::string>& peer_flow_addresses = {});
  // Asks the thread to end; it does at its next command or timeout.
  void Stop() { stop_.store(true); }
  bool finished() const { return finished_.load(); }

 private:
  ProbeResponder(const v1::ProbeParameters& params, const Clock* clock, BandwidthGate* gate,
                 std::string peer_name, const DaemonLiveness* liveness);
  // A reply to `op` `seq` with this node's daemon liveness filled in.
  struct ControlReply Reply(uint8_t op, uint64_t seq) const;
  void Serve(std::string peer_command_address, std::string peer_bulk_address,
             std::vector<std::string> peer_flow_addresses);
  CommandFlow& flow() { return *pairs_->flows[current_]; }
  absl::Status ServeOne();
  absl::Status SendControl(const struct ControlReply& reply);
  absl::Status ServeBandwidth(BandwidthDirection requester_direction, uint64_t seq);

  v1::ProbeParameters params_;
  const Clock* clock_;
  BandwidthGate* gate_;
  std::string peer_name_;
  const DaemonLiveness* const liveness_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> finished_{false};
  std::unique_ptr<ProbePairs> pairs_;
  // The flow the requester's next command comes over (its serving thread only).
  size_t current_ = 0;
};

}  // namespace gloowatch
