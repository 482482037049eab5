#include "transport/probe_link.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <exception>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/failure.h"
#include "gloo/transport/buffer.h"
#include "gloo/transport/context.h"
#include "gloo/transport/device.h"
#include "gloo/transport/pair.h"
#include "gloo/transport/tcp/address.h"
#include "gloo/transport/unbound_buffer.h"
#include "transport/gloo_boundary.h"

namespace gloowatch {
namespace {

// Bound-buffer slots on the command pair and the unbound slot on the bulk pair.
constexpr int kSlotCommand = 1;
constexpr int kSlotPingReply = 2;
constexpr int kSlotControl = 3;
constexpr uint64_t kSlotBulk = 4;

// Requester -> responder commands: byte 0 is the op, bytes 1..7 the sequence.
enum Op : uint8_t {
  kOpKeepalive = 1,
  kOpPing = 2,
  kOpSync = 3,
  kOpBulkPush = 4,  // requester sends, responder receives (our tx)
  kOpBulkPull = 5,  // responder sends, requester receives (our rx)
  // The commands that follow come over the flow the sequence field names;
  // no reply. Sent only to a peer that offered more than one flow.
  kOpFlow = 6,
};

enum ControlStatus : uint8_t { kStatusOk = 0, kStatusBusy = 1, kStatusDone = 2 };

// Outstanding unbound buffers per direction during a transfer: two keep the
// socket busy while the previous message completes.
constexpr int kBulkInFlight = 2;

// The largest transfer region kept between transfers: the default 4 MiB
// message fits; a peer asking for 256 MiB messages does not pin 256 MiB here.
constexpr size_t kRetainedRegionBytes = 16 << 20;

}  // namespace

// Responder -> requester replies to sync and bulk commands. Fixed size; the
// layout is documented with kTimestampReplyBytes.
struct ControlReply {
  uint8_t op;
  uint8_t status;
  uint8_t daemon_flags;  // kDaemonLivenessPresent
  uint8_t reserved;
  uint16_t daemon_silent_seconds;
  uint8_t reserved2[2];
  uint64_t seq;
  int64_t t1_unix_nanos;
  int64_t t2_unix_nanos;
};
static_assert(sizeof(ControlReply) == kTimestampReplyBytes, "wire layout");
static_assert(offsetof(ControlReply, daemon_flags) == 2, "wire layout");
static_assert(offsetof(ControlReply, daemon_silent_seconds) == 4, "wire layout");
static_assert(offsetof(ControlReply, seq) == 8, "wire layout: as before the liveness");
static_assert(offsetof(ControlReply, t1_unix_nanos) == 16, "wire layout: as before");
static_assert(offsetof(ControlReply, t2_unix_nanos) == 24, "wire layout: as before");

namespace {

void EncodeCommand(uint8_t op, uint64_t seq, std::vector<char>& buf) {
  std::memset(buf.data(), 0, buf.size());
  buf[0] = static_cast<char>(op);
  for (int i = 1; i < 8; ++i) buf[i] = static_cast<char>((seq >> (8 * (i - 1))) & 0xff);
}

uint8_t CommandOp(const std::vector<char>& buf) { return static_cast<uint8_t>(buf[0]); }

uint64_t CommandSeq(const std::vector<char>& buf) {
  uint64_t seq = 0;
  for (int i = 1; i < 8; ++i) seq |= uint64_t{static_cast<uint8_t>(buf[i])} << (8 * (i - 1));
  return seq;
}

constexpr uint64_t kSeqMask = (uint64_t{1} << 56) - 1;

absl::StatusOr<PairEndpoint> MakePair(gloo::transport::Device& device, int rank,
                                      absl::Duration timeout) {
  PairEndpoint endpoint;
  absl::Status status = GuardGloo("create pair", [&] {
    endpoint.context = device.createContext(rank, 2);
    // The pair copies the timeout when created.
    endpoint.context->setTimeout(absl::ToChronoMilliseconds(timeout));
    endpoint.pair = endpoint.context->createPair(1 - rank).get();
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return endpoint;
}

std::string AddressBytes(const PairEndpoint& endpoint) {
  const std::vector<char> bytes = endpoint.pair->address().bytes();
  return std::string(bytes.begin(), bytes.end());
}

absl::Status ConnectPair(PairEndpoint& endpoint, const std::string& peer_address) {
  if (peer_address.empty() || peer_address.size() > gloo::transport::Address::kMaxByteSize) {
    return ProtocolError("peer sent a malformed Gloo address");
  }
  return GuardGloo("connect", [&] {
    endpoint.pair->connect(std::vector<char>(peer_address.begin(), peer_address.end()));
    return absl::OkStatus();
  });
}

absl::Duration GlooTimeout(const v1::ProbeParameters& p) {
  return absl::Milliseconds(p.gloo_timeout_ms());
}

int64_t UnixNanos(absl::Time t) { return absl::ToUnixNanos(t); }

// Moves `messages` messages of `message_bytes` through `kBulkInFlight`
// unbound buffers over one region; the contents do not matter.
absl::Status RunBulk(gloo::transport::Context& context, int peer_rank, bool sending, char* region,
                     size_t message_bytes, uint32_t messages, absl::Duration timeout) {
  return GuardGloo(sending ? "bulk send" : "bulk recv", [&] {
    std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> buffers;
    for (int i = 0; i < kBulkInFlight; ++i) {
      buffers.push_back(context.createUnboundBuffer(region, message_bytes));
    }
    auto post = [&](gloo::transport::UnboundBuffer& b) {
      if (sending) {
        b.send(peer_rank, kSlotBulk);
      } else {
        b.recv(peer_rank, kSlotBulk);
      }
    };
    const auto wait_timeout = absl::ToChronoMilliseconds(timeout);
    for (uint32_t i = 0; i < messages && i < kBulkInFlight; ++i) post(*buffers[i]);
    for (uint32_t i = 0; i < messages; ++i) {
      auto& b = *buffers[i % kBulkInFlight];
      const bool completed =
          sending ? b.waitSend(nullptr, wait_timeout) : b.waitRecv(nullptr, wait_timeout);
      if (!completed) return absl::AbortedError("bulk transfer aborted");
      if (i + kBulkInFlight < messages) post(b);
    }
    return absl::OkStatus();
  });
}

}  // namespace

DaemonLiveness::DaemonLiveness(const Clock* clock)
    : clock_(clock), heard_at_ns_(absl::ToInt64Nanoseconds(clock->Monotonic())) {}

void DaemonLiveness::Heard() {
  heard_at_ns_.store(absl::ToInt64Nanoseconds(clock_->Monotonic()), std::memory_order_relaxed);
}

uint16_t DaemonLiveness::SilentSeconds() const {
  const int64_t silent_ns =
      absl::ToInt64Nanoseconds(clock_->Monotonic()) - heard_at_ns_.load(std::memory_order_relaxed);
  const int64_t seconds = std::max<int64_t>(silent_ns, 0) / 1000000000;
  return static_cast<uint16_t>(std::min<int64_t>(seconds, UINT16_MAX));
}

BandwidthGate::BandwidthGate(const Clock* clock, double budget) : clock_(clock), budget_(budget) {}

std::optional<BandwidthGate::Lease> BandwidthGate::TryAcquire() {
  absl::MutexLock lock(&mu_);
  if (busy_ || clock_->Monotonic() < open_at_) return std::nullopt;
  busy_ = true;
  return Lease(this);
}

void BandwidthGate::Lease::Start() { started_ = gate_->clock_->Monotonic(); }

std::vector<char>& BandwidthGate::Lease::Region(size_t bytes) {
  std::vector<char>& region = gate_->region_;
  if (region.size() < bytes) region.resize(bytes);  // zero-filled: touched now, not in the transfer
  return region;
}

void BandwidthGate::Release(std::optional<absl::Duration> started) {
  if (region_.size() > kRetainedRegionBytes) std::vector<char>().swap(region_);
  absl::MutexLock lock(&mu_);
  busy_ = false;
  if (!started) return;
  const absl::Duration took = std::max(clock_->Monotonic() - *started, absl::ZeroDuration());
  transfer_time_ += took;
  open_at_ = std::max(open_at_, *started + took / budget_);
}

void BandwidthGate::SetBudget(double budget) {
  absl::MutexLock lock(&mu_);
  budget_ = budget;
}

absl::Duration BandwidthGate::open_at() const {
  absl::MutexLock lock(&mu_);
  return open_at_;
}

absl::Duration BandwidthGate::transfer_time() const {
  absl::MutexLock lock(&mu_);
  return transfer_time_;
}

bool SockaddrFromBytes(const std::string& bytes, sockaddr_storage* out) {
  if (bytes.empty() || bytes.size() > gloo::transport::Address::kMaxByteSize) return false;
  try {
    gloo::transport::tcp::Address address(std::vector<char>(bytes.begin(), bytes.end()));
    *out = address.getSockaddr();
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

std::string GlooAddressToString(const std::string& bytes) {
  sockaddr_storage ss;
  if (!SockaddrFromBytes(bytes, &ss)) return "";
  char host[INET6_ADDRSTRLEN] = {0};
  if (ss.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    return absl::StrCat(host, ":", ntohs(in->sin_port));
  }
  if (ss.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
    return absl::StrCat("[", host, "]:", ntohs(in6->sin6_port));
  }
  return "";
}

bool GlooAddressIsLoopback(const std::string& bytes) {
  sockaddr_storage ss;
  if (!SockaddrFromBytes(bytes, &ss)) return false;
  if (ss.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  if (ss.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
  }
  return false;
}

// --- ProbePairs --------------------------------------------------------------

CommandFlow::CommandFlow() = default;
CommandFlow::~CommandFlow() = default;

absl::StatusOr<std::unique_ptr<ProbePairs>> ProbePairs::Create(gloo::transport::Device& device,
                                                               const v1::ProbeParameters& params,
                                                               int rank) {
  if (absl::Status s = ValidateProbeParameters(params); !s.ok()) return s;
  std::unique_ptr<ProbePairs> p(new ProbePairs());
  const bool requester = rank == 0;
  for (uint32_t i = 0; i < ProbeFlows(params); ++i) {
    auto pair = MakePair(device, rank, GlooTimeout(params));
    if (!pair.ok()) return pair.status();
    auto flow = std::make_unique<CommandFlow>();
    flow->pair = *std::move(pair);
    flow->command_buf.resize(params.latency_message_bytes());
    flow->ping_buf.resize(params.latency_message_bytes());
    flow->control_buf.resize(sizeof(ControlReply));
    gloo::transport::Pair& gloo_pair = *flow->pair.pair;
    absl::Status status = GuardGloo("create buffers", [&] {
      auto make = [&](bool send, int slot, std::vector<char>& buf) {
        return send ? gloo_pair.createSendBuffer(slot, buf.data(), buf.size())
                    : gloo_pair.createRecvBuffer(slot, buf.data(), buf.size());
      };
      flow->command = make(requester, kSlotCommand, flow->command_buf);
      flow->ping = make(!requester, kSlotPingReply, flow->ping_buf);
      flow->control = make(!requester, kSlotControl, flow->control_buf);
      return absl::OkStatus();
    });
    if (!status.ok()) return status;
    p->flows.push_back(std::move(flow));
    // The bulk pair is made second, as before flows: its address is the
    // second a peer of any version expects.
    if (i == 0) {
      auto bulk = MakePair(device, rank, GlooTimeout(params));
      if (!bulk.ok()) return bulk.status();
      p->bulk_pair = *std::move(bulk);
    }
  }
  return p;
}

std::string ProbePairs::command_address() const { return AddressBytes(flows[0]->pair); }
std::string ProbePairs::bulk_address() const { return AddressBytes(bulk_pair); }

std::vector<std::string> ProbePairs::flow_addresses() const {
  std::vector<std::string> out;
  for (size_t i = 1; i < flows.size(); ++i) out.push_back(AddressBytes(flows[i]->pair));
  return out;
}

absl::Status ProbePairs::Connect(const std::string& peer_command_address,
                                 const std::string& peer_bulk_address,
                                 const std::vector<std::string>& peer_flow_addresses) {
  if (peer_flow_addresses.size() + 1 != flows.size()) {
    return ProtocolError(absl::StrCat("peer named ", peer_flow_addresses.size() + 1,
                                      " probe flows, expected ", flows.size()));
  }
  if (absl::Status s = ConnectPair(flows[0]->pair, peer_command_address); !s.ok()) return s;
  if (absl::Status s = ConnectPair(bulk_pair, peer_bulk_address); !s.ok()) return s;
  for (size_t i = 1; i < flows.size(); ++i) {
    if (absl::Status s = ConnectPair(flows[i]->pair, peer_flow_addresses[i - 1]); !s.ok()) {
      return s;
    }
  }
  return GuardGloo("sync mode", [&] {
    for (auto& flow : flows) flow->pair.pair->setSync(/*enable=*/true, /*busyPoll=*/false);
    return absl::OkStatus();
  });
}

// --- ProbeSession ------------------------------------------------------------

ProbeSession::ProbeSession(const v1::ProbeParameters& params, const Clock* clock)
    : params_(params), clock_(clock) {}

absl::StatusOr<std::unique_ptr<ProbeSession>> ProbeSession::Create(
    std::shared_ptr<gloo::transport::Device> device, const v1::ProbeParameters& params,
    const Clock* clock) {
  auto pairs = ProbePairs::Create(*device, params, /*rank=*/0);
  if (!pairs.ok()) return pairs.status();
  std::unique_ptr<ProbeSession> session(new ProbeSession(params, clock));
  session->pairs_ = *std::move(pairs);
  return session;
}

absl::Status ProbeSession::Connect(const std::string& peer_command_address,
                                   const std::string& peer_bulk_address,
                                   const std::vector<std::string>& peer_flow_addresses) {
  // A peer of an older version serves the command pair alone.
  if (peer_flow_addresses.empty()) pairs_->DropFlowsAfterFirst();
  peer_command_address_ = peer_command_address;
  peer_bulk_address_ = peer_bulk_address;
  peer_flow_addresses_ = peer_flow_addresses;
  current_ = 0;
  return pairs_->Connect(peer_command_address, peer_bulk_address, peer_flow_addresses);
}

std::vector<TcpConnection> ProbeSession::tcp_connections() const {
  std::vector<std::pair<std::string, std::string>> ends = {
      {pairs_->command_address(), peer_command_address_},
      {pairs_->bulk_address(), peer_bulk_address_}};
  const std::vector<std::string> ours = pairs_->flow_addresses();
  for (size_t i = 0; i < ours.size() && i < peer_flow_addresses_.size(); ++i) {
    ends.emplace_back(ours[i], peer_flow_addresses_[i]);
  }
  std::vector<TcpConnection> out;
  for (const auto& [mine, theirs] : ends) {
    sockaddr_storage local, remote;
    if (!SockaddrFromBytes(mine, &local) || !SockaddrFromBytes(theirs, &remote)) return {};
    std::optional<TcpEndpoint> l = TcpEndpoint::FromSockaddr(local);
    std::optional<TcpEndpoint> r = TcpEndpoint::FromSockaddr(remote);
    if (!l || !r) return {};
    out.push_back({*l, *r, std::nullopt});
  }
  return out;
}

std::optional<size_t> FlowOfTcpConnection(size_t index) {
  if (index == 0) return 0;
  if (index == 1) return std::nullopt;  // the bulk pair
  return index - 1;
}

size_t TcpConnectionOfFlow(size_t flow) { return flow == 0 ? 0 : flow + 1; }

absl::Status ProbeSession::SendOnCurrentFlow(uint8_t op, uint64_t seq) {
  CommandFlow& f = flow();
  EncodeCommand(op, seq, f.command_buf);
  return GuardGloo("send", [&] {
    f.command->send();
    f.command->waitSend();
    return absl::OkStatus();
  });
}

absl::Status ProbeSession::SendCommand(uint8_t op) {
  seq_ = (seq_ + 1) & kSeqMask;
  return SendOnCurrentFlow(op, seq_);
}

absl::Status ProbeSession::UseFlow(size_t next) {
  if (next >= flows()) return absl::InvalidArgumentError("no such probe flow");
  if (next == current_) return absl::OkStatus();
  if (absl::Status s = SendOnCurrentFlow(kOpFlow, next); !s.ok()) return s;
  current_ = next;
  return absl::OkStatus();
}

absl::Status ProbeSession::AwaitControl(uint8_t op, ControlReply* reply) {
  absl::Status status = GuardGloo("recv", [&] {
    flow().control->waitRecv();
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  std::memcpy(reply, flow().control_buf.data(), sizeof(*reply));
  if (reply->op != op || reply->seq != seq_) {
    return ProtocolError(absl::StrFormat("expected reply to op %d seq %d, got op %d seq %d", op,
                                         seq_, reply->op, reply->seq));
  }
  PeerDaemonReport& daemon = peer_daemon_.emplace();
  if (reply->daemon_flags & kDaemonLivenessPresent) {
    daemon.silent_seconds = reply->daemon_silent_seconds;
  }
  return absl::OkStatus();
}

std::optional<PeerDaemonReport> ProbeSession::TakePeerDaemon() {
  std::optional<PeerDaemonReport> taken = std::move(peer_daemon_);
  peer_daemon_.reset();
  return taken;
}

absl::StatusOr<absl::Duration> ProbeSession::RoundTrip() {
  const absl::Duration start = clock_->Monotonic();
  if (absl::Status s = SendCommand(kOpPing); !s.ok()) return s;
  absl::Status s = GuardGloo("recv", [&] {
    flow().ping->waitRecv();
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  const absl::Duration rtt = clock_->Monotonic() - start;
  if (CommandOp(flow().ping_buf) != kOpPing || CommandSeq(flow().ping_buf) != seq_) {
    return ProtocolError("ping echo does not match the request");
  }
  return rtt;
}

absl::StatusOr<std::pair<absl::Duration, TimestampSample>> ProbeSession::TimestampRoundTrip() {
  TimestampSample sample;
  const absl::Duration start = clock_->Monotonic();
  sample.t0 = clock_->Now();
  if (absl::Status s = SendCommand(kOpSync); !s.ok()) return s;
  ControlReply reply;
  if (absl::Status s = AwaitControl(kOpSync, &reply); !s.ok()) return s;
  sample.t3 = clock_->Now();
  const absl::Duration rtt = clock_->Monotonic() - start;
  sample.t1 = absl::FromUnixNanos(reply.t1_unix_nanos);
  sample.t2 = absl::FromUnixNanos(reply.t2_unix_nanos);
  return std::make_pair(rtt, sample);
}

absl::StatusOr<PingBurst> ProbeSession::Ping(int count) {
  // Between bursts both sides' threads sleep for seconds; the first round
  // trip also pays for waking them (50-120 us on the development VM, against
  // 20 us warm), which no training job's busy threads see. Like sockperf's
  // warm-up, it is made but not counted.
  PingBurst burst;
  burst.rtts.reserve(count);
  for (int i = 0; i <= count; ++i) {
    if (pings_carry_timestamps()) {
      absl::StatusOr<std::pair<absl::Duration, TimestampSample>> exchange = TimestampRoundTrip();
      if (!exchange.ok()) return exchange.status();
      if (i == 0) continue;
      burst.rtts.push_back(exchange->first);
      burst.samples.push_back(exchange->second);
    } else {
      absl::StatusOr<absl::Duration> rtt = RoundTrip();
      if (!rtt.ok()) return rtt.status();
      if (i > 0) burst.rtts.push_back(*rtt);
    }
  }
  return burst;
}

absl::StatusOr<std::vector<TimestampSample>> ProbeSession::SyncBurst(int count) {
  std::vector<TimestampSample> samples;
  samples.reserve(count);
  for (int i = 0; i < count; ++i) {
    absl::StatusOr<std::pair<absl::Duration, TimestampSample>> exchange = TimestampRoundTrip();
    if (!exchange.ok()) return exchange.status();
    samples.push_back(exchange->second);
  }
  return samples;
}

absl::StatusOr<BandwidthSample> ProbeSession::Bandwidth(BandwidthDirection direction,
                                                        BandwidthGate& gate) {
  std::optional<BandwidthGate::Lease> lease = gate.TryAcquire();
  if (!lease) {
    return absl::ResourceExhaustedError(
        "busy: another transfer involves this node, or its bandwidth budget is spent");
  }
  const uint8_t op = direction == BandwidthDirection::kTx ? kOpBulkPush : kOpBulkPull;
  char* region = lease->Region(params_.bandwidth_message_bytes()).data();
  if (absl::Status s = SendCommand(op); !s.ok()) return s;
  ControlReply reply;
  if (absl::Status s = AwaitControl(op, &reply); !s.ok()) return s;
  if (reply.status == kStatusBusy) {
    return absl::ResourceExhaustedError("busy: the peer is in another transfer");
  }
  if (reply.status != kStatusOk) {
    return ProtocolError("unexpected bulk reply status");
  }
  lease->Start();
  const absl::Duration start = clock_->Monotonic();
  absl::Status s = RunBulk(
      *pairs_->bulk_pair.context, /*peer_rank=*/1, direction == BandwidthDirection::kTx, region,
      params_.bandwidth_message_bytes(), params_.bandwidth_messages(), GlooTimeout(params_));
  if (!s.ok()) return s;
  if (direction == BandwidthDirection::kTx) {
    // Our sends complete when the kernel has the data; the peer's "done" says
    // it has arrived.
    if (absl::Status d = AwaitControl(op, &reply); !d.ok()) return d;
    if (reply.status != kStatusDone) return ProtocolError("expected bulk done");
  }
  const absl::Duration elapsed = clock_->Monotonic() - start;
  const uint64_t bytes = params_.bandwidth_message_bytes() * params_.bandwidth_messages();
  // No figure, and no fault of the link: only a simulated clock stands still
  // (the in-process tests'); retried later like a busy peer.
  if (elapsed <= absl::ZeroDuration()) {
    return absl::ResourceExhaustedError("no figure: the clock did not advance over the transfer");
  }
  return BandwidthSample{static_cast<double>(bytes) / absl::ToDoubleSeconds(elapsed), bytes,
                         elapsed};
}

absl::Status ProbeSession::Keepalive() { return SendCommand(kOpKeepalive); }

// --- ProbeResponder ----------------------------------------------------------

ProbeResponder::ProbeResponder(const v1::ProbeParameters& params, const Clock* clock,
                               BandwidthGate* gate, std::string peer_name,
                               const DaemonLiveness* liveness)
    : params_(params),
      clock_(clock),
      gate_(gate),
      peer_name_(std::move(peer_name)),
      liveness_(liveness) {}

absl::StatusOr<std::shared_ptr<ProbeResponder>> ProbeResponder::Create(
    std::shared_ptr<gloo::transport::Device> device, const v1::ProbeParameters& params,
    const Clock* clock, BandwidthGate* gate, std::string peer_name,
    const DaemonLiveness* liveness) {
  auto pairs = ProbePairs::Create(*device, params, /*rank=*/1);
  if (!pairs.ok()) return pairs.status();
  std::shared_ptr<ProbeResponder> responder(
      new ProbeResponder(params, clock, gate, std::move(peer_name), liveness));
  responder->pairs_ = *std::move(pairs);
  return responder;
}

void ProbeResponder::Start(const std::string& peer_command_address,
                           const std::string& peer_bulk_address,
                           const std::vector<std::string>& peer_flow_addresses) {
  // The thread keeps the responder alive until it ends.
  std::thread([self = shared_from_this(), peer_command_address, peer_bulk_address,
               peer_flow_addresses] {
    self->Serve(peer_command_address, peer_bulk_address, peer_flow_addresses);
  }).detach();
}

void ProbeResponder::Serve(std::string peer_command_address, std::string peer_bulk_address,
                           std::vector<std::string> peer_flow_addresses) {
  absl::Status status =
      pairs_->Connect(peer_command_address, peer_bulk_address, peer_flow_addresses);
  while (status.ok() && !stop_.load()) status = ServeOne();
  finished_.store(true);
}

ControlReply ProbeResponder::Reply(uint8_t op, uint64_t seq) const {
  ControlReply reply{};
  reply.op = op;
  reply.seq = seq;
  if (liveness_ != nullptr) {
    reply.daemon_flags = kDaemonLivenessPresent;
    reply.daemon_silent_seconds = liveness_->SilentSeconds();
  }
  return reply;
}

absl::Status ProbeResponder::SendControl(const ControlReply& reply) {
  std::memcpy(flow().control_buf.data(), &reply, sizeof(reply));
  return GuardGloo("send", [&] {
    flow().control->send();
    flow().control->waitSend();
    return absl::OkStatus();
  });
}

absl::Status ProbeResponder::ServeOne() {
  CommandFlow& f = flow();
  absl::Status status = GuardGloo("recv", [&] {
    f.command->waitRecv();
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  const absl::Time t1 = clock_->Now();
  const uint8_t op = CommandOp(f.command_buf);
  const uint64_t seq = CommandSeq(f.command_buf);
  switch (op) {
    case kOpKeepalive:
      return absl::OkStatus();
    case kOpFlow:
      if (seq >= pairs_->flows.size()) {
        return ProtocolError(absl::StrCat("no probe flow ", seq, " of ", pairs_->flows.size()));
      }
      current_ = static_cast<size_t>(seq);
      return absl::OkStatus();
    case kOpPing:
      std::memcpy(f.ping_buf.data(), f.command_buf.data(), f.ping_buf.size());
      return GuardGloo("send", [&] {
        f.ping->send();
        f.ping->waitSend();
        return absl::OkStatus();
      });
    case kOpSync: {
      ControlReply reply = Reply(op, seq);
      reply.t1_unix_nanos = UnixNanos(t1);
      reply.t2_unix_nanos = UnixNanos(clock_->Now());
      return SendControl(reply);
    }
    case kOpBulkPush:
      return ServeBandwidth(BandwidthDirection::kTx, seq);
    case kOpBulkPull:
      return ServeBandwidth(BandwidthDirection::kRx, seq);
    default:
      return ProtocolError(absl::StrCat("unknown command op ", op));
  }
}

absl::Status ProbeResponder::ServeBandwidth(BandwidthDirection requester_direction, uint64_t seq) {
  const uint8_t op = requester_direction == BandwidthDirection::kTx ? kOpBulkPush : kOpBulkPull;
  ControlReply reply = Reply(op, seq);
  std::optional<BandwidthGate::Lease> lease = gate_->TryAcquire();
  if (!lease) {
    reply.status = kStatusBusy;
    return SendControl(reply);
  }
  char* region = lease->Region(params_.bandwidth_message_bytes()).data();
  reply.status = kStatusOk;
  lease->Start();
  if (absl::Status s = SendControl(reply); !s.ok()) return s;
  const bool we_send = requester_direction == BandwidthDirection::kRx;
  absl::Status s = RunBulk(*pairs_->bulk_pair.context, /*peer_rank=*/0, we_send, region,
                           params_.bandwidth_message_bytes(), params_.bandwidth_messages(),
                           GlooTimeout(params_));
  if (!s.ok() || we_send) return s;
  reply = Reply(op, seq);  // the daemon's silence as of now, not the transfer's start
  reply.status = kStatusDone;
  return SendControl(reply);
}

}  // namespace gloowatch
