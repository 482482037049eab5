#include "transport/peer_prober.h"

#include <algorithm>
#include <atomic>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/failure.h"
#include "common/log.h"
#include "common/net.h"
#include "common/version.h"
#include "grpcpp/grpcpp.h"

namespace gloowatch {
namespace {

// A connect is one RPC deadline plus up to five Gloo timeouts for the pairs;
// any step still running after six Gloo timeouts is hung.
constexpr int kStallTimeouts = 6;
constexpr absl::Duration kFailureLogInterval = absl::Seconds(30);
// How often the pairs' TCP statistics are read: often enough for a loss
// window of a minute, rarely enough to cost nothing. A read rides on a latency
// probe (its sample then travels in the probe's message) at most every
// kTcpStatsInterval, and follows any other probe only once it is overdue.
constexpr absl::Duration kTcpStatsInterval = absl::Seconds(4);
constexpr absl::Duration kTcpStatsOverdue = absl::Seconds(10);
// The watch reads a command's socket once it has been out this long (a
// healthy answer takes milliseconds), and reports it unacknowledged after
// this many timeouts in a row (UnacknowledgedWatch): under 5% random loss
// one segment needs three losses in a row for that, 1 in 8,000.
constexpr absl::Duration kUnackedMinAge = absl::Seconds(1);
constexpr uint32_t kUnackedRetransmits = 2;

// gRPC's reconnect backoff defaults reach two minutes; a restarted peer
// should be found within seconds.
std::shared_ptr<grpc::Channel> PeerChannel(const HostPort& address,
                                           std::shared_ptr<grpc::ChannelCredentials> credentials) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  if (credentials == nullptr) credentials = grpc::InsecureChannelCredentials();
  return grpc::CreateCustomChannel(address.ToString(), credentials, args);
}

}  // namespace

// --- ProbeSchedule -----------------------------------------------------------

ProbeSchedule::ProbeSchedule(const ScheduleConfig& config, absl::Duration keepalive, uint64_t seed)
    : config_(config), keepalive_(keepalive), rng_(seed) {
  Reset(absl::ZeroDuration());
}

absl::Duration ProbeSchedule::Interval(Kind kind) const {
  switch (kind) {
    case Kind::kLatency:
      return config_.latency_interval;
    case Kind::kSkew:
      return config_.skew_interval;
    case Kind::kBandwidth:
      return config_.bandwidth_interval;
    case Kind::kKeepalive:
      return keepalive_;
  }
  return keepalive_;
}

void ProbeSchedule::Reset(absl::Duration now) {
  due_[static_cast<int>(Kind::kLatency)] = now;
  due_[static_cast<int>(Kind::kSkew)] = now;
  const absl::Duration spread = std::min(config_.bandwidth_interval, absl::Seconds(5));
  std::uniform_real_distribution<double> fraction(0.2, 1.0);
  due_[static_cast<int>(Kind::kBandwidth)] = now + spread * fraction(rng_);
  due_[static_cast<int>(Kind::kKeepalive)] = now + keepalive_;
}

ProbeSchedule::Kind ProbeSchedule::Next(absl::Duration* at) const {
  int best = 0;
  for (int i = 1; i < 4; ++i) {
    if (i == static_cast<int>(Kind::kSkew) && skew_rides_on_latency()) continue;
    if (due_[i] < due_[best]) best = i;
  }
  *at = due_[best];
  return static_cast<Kind>(best);
}

void ProbeSchedule::Done(Kind kind, absl::Duration now) {
  if (kind != Kind::kKeepalive) {
    due_[static_cast<int>(kind)] = now + Jittered(Interval(kind), config_.jitter, rng_);
  }
  due_[static_cast<int>(Kind::kKeepalive)] = now + keepalive_;
}

void ProbeSchedule::SetConfig(const ScheduleConfig& config, absl::Duration now) {
  config_ = config;
  for (Kind kind : {Kind::kLatency, Kind::kSkew, Kind::kBandwidth}) {
    absl::Duration& due = due_[static_cast<int>(kind)];
    due = std::min(due, now + Jittered(Interval(kind), config_.jitter, rng_));
  }
}

void ProbeSchedule::Defer(Kind kind, absl::Duration now, absl::Duration delay) {
  due_[static_cast<int>(kind)] = now + delay;
}

// --- LossFollowUp ------------------------------------------------------------

void LossFollowUp::SawLoss() {
  until_ns_.store(absl::ToInt64Nanoseconds(clock_->Monotonic() + kActiveFor),
                  std::memory_order_relaxed);
}

bool LossFollowUp::Active() const {
  return absl::ToInt64Nanoseconds(clock_->Monotonic()) < until_ns_.load(std::memory_order_relaxed);
}

// --- PeerProber --------------------------------------------------------------

v1::ProbeParameters MakeProbeParameters(const Config& config) {
  v1::ProbeParameters p;
  p.set_latency_message_bytes(config.probe.latency_message_bytes);
  p.set_bandwidth_message_bytes(config.probe.bandwidth_message_bytes);
  p.set_bandwidth_messages(
      static_cast<uint32_t>(config.probe.bandwidth_bytes / config.probe.bandwidth_message_bytes));
  p.set_skew_burst(config.probe.skew_burst);
  p.set_gloo_timeout_ms(absl::ToInt64Milliseconds(config.gloo.timeout));
  p.set_flows(config.probe.flows);
  return p;
}

PeerProber::PeerProber(ProberContext context, const Config& config, PeerConfig peer,
                       ProbeObserver* observer)
    : context_(std::move(context)),
      params_(MakeProbeParameters(config)),
      schedule_config_(config.schedule),
      probe_config_(config.probe),
      gloo_timeout_(config.gloo.timeout),
      peer_(std::move(peer)),
      observer_(observer),
      stub_(v1::Peer::NewStub(PeerChannel(peer_.grpc, context_.credentials))),
      peer_is_loopback_(IsLoopbackHost(peer_.grpc.host)),
      failure_log_(kFailureLogInterval, context_.clock),
      watch_(kUnackedMinAge, kUnackedRetransmits) {}

PeerProber::~PeerProber() {
  Stop();
  if (thread_.joinable()) thread_.detach();
}

void PeerProber::Start() {
  Progress(kStallTimeouts * gloo_timeout_);
  thread_ = std::thread([this] {
    Run();
    stall_at_ns_.store(INT64_MAX);
    absl::MutexLock lock(&mu_);
    finished_ = true;
  });
}

void PeerProber::Stop() {
  absl::MutexLock lock(&mu_);
  stopping_ = true;
}

bool PeerProber::Join(absl::Duration timeout) {
  {
    absl::MutexLock lock(&mu_);
    if (!mu_.AwaitWithTimeout(absl::Condition(&finished_), timeout)) return false;
  }
  if (thread_.joinable()) thread_.join();
  return true;
}

bool PeerProber::Stalled(absl::Duration now) const {
  return absl::ToInt64Nanoseconds(now) > stall_at_ns_.load(std::memory_order_relaxed);
}

void PeerProber::Progress(absl::Duration may_take) {
  const int64_t now = absl::ToInt64Nanoseconds(context_.clock->Monotonic());
  const int64_t limit = absl::ToInt64Nanoseconds(may_take);  // saturates
  stall_at_ns_.store(limit > INT64_MAX - now ? INT64_MAX : now + limit, std::memory_order_relaxed);
}

std::optional<ScheduleConfig> PeerProber::TakeScheduleUpdate() {
  absl::MutexLock lock(&mu_);
  std::optional<ScheduleConfig> update = std::move(new_schedule_);
  new_schedule_.reset();
  return update;
}

void PeerProber::UpdateSchedule(const ScheduleConfig& schedule) {
  absl::MutexLock lock(&mu_);
  new_schedule_ = schedule;
}

bool PeerProber::SleepUntil(absl::Duration at) {
  observer_->Flush();
  const absl::Duration wait = at - context_.clock->Monotonic();
  Progress(std::max(wait, absl::ZeroDuration()) + kStallTimeouts * gloo_timeout_);
  absl::MutexLock lock(&mu_);
  auto woken = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || new_schedule_.has_value();
  };
  // Through the clock, so that a simulated one decides when backoff and the
  // schedule's waits end.
  context_.clock->AwaitUntil(mu_, absl::Condition(&woken), at);
  return !stopping_;
}

void PeerProber::Fail(const absl::Status& status) {
  const v1::FailureReason reason = FailureReasonOf(status);
  observer_->RecordFailure(reason, std::string(status.message()));
  uint64_t suppressed = 0;
  if (failure_log_.Allow(ReasonName(reason), &suppressed)) {
    GW_LOG(kWarning, "peer %s: %s: %s%s", peer_.name, ReasonName(reason), status.message(),
           SuppressedSuffix(suppressed));
  }
}

absl::StatusOr<std::unique_ptr<ProbeSession>> ConnectProbeSession(
    const ProberContext& context, const v1::ProbeParameters& params, const PeerConfig& peer,
    absl::Duration gloo_timeout, v1::Peer::Stub& stub, ConnectedPeer* connected) {
  connected->rpc_failed = false;
  const bool peer_is_loopback = IsLoopbackHost(peer.grpc.host);
  auto session = ProbeSession::Create(context.device, params, context.clock);
  if (!session.ok()) return WithFailureReason(session.status(), v1::FAILURE_REASON_OTHER);

  v1::OpenProbePairRequest request;
  request.set_protocol_version(kProbeProtocolVersion);
  request.set_from_node(context.node);
  request.set_to_node(peer.name);
  request.set_version(context.version);
  request.set_gloo_address((*session)->command_address());
  request.set_bulk_gloo_address((*session)->bulk_address());
  for (const std::string& address : (*session)->flow_addresses()) {
    request.add_flow_gloo_addresses(address);
  }
  *request.mutable_parameters() = params;
  v1::OpenProbePairResponse response;
  grpc::ClientContext rpc;
  rpc.set_deadline(absl::ToChronoTime(absl::Now() + gloo_timeout));
  const grpc::Status rpc_status = stub.OpenProbePair(&rpc, request, &response);
  if (!rpc_status.ok()) {
    connected->rpc_failed = true;
    const std::string message =
        absl::StrCat("OpenProbePair to ", peer.grpc.ToString(), ": ", rpc_status.error_message());
    const v1::FailureReason reason =
        ClassifyGrpc(rpc_status.error_code(), rpc_status.error_message());
    // The peer's daemon answered but has no room for us now (its pairs for
    // us are winding down, or someone floods it): kept apart so that Run()
    // retries soon instead of backing off.
    if (rpc_status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      return WithFailureReason(absl::ResourceExhaustedError(message), reason);
    }
    return WithFailureReason(absl::UnavailableError(message), reason);
  }
  if (response.protocol_version() != kProbeProtocolVersion || response.node() != peer.name) {
    return WithFailureReason(absl::FailedPreconditionError(absl::StrCat(
                                 "peer at ", peer.grpc.ToString(), " answered as node '",
                                 response.node(), "' protocol ", response.protocol_version(),
                                 ", expected '", peer.name, "' protocol ", kProbeProtocolVersion)),
                             v1::FAILURE_REASON_PROTOCOL);
  }
  // The classic Gloo misconfiguration: one side binds to loopback while the
  // other is on another host, so pairs can never connect.
  if (!peer_is_loopback && context.local_gloo_is_loopback) {
    return WithFailureReason(
        absl::FailedPreconditionError("our Gloo address is loopback but the peer is remote: set "
                                      "gloo.interface or gloo.address (or GLOO_SOCKET_IFNAME)"),
        v1::FAILURE_REASON_WRONG_INTERFACE);
  }
  if (!peer_is_loopback && GlooAddressIsLoopback(response.gloo_address())) {
    return WithFailureReason(
        absl::FailedPreconditionError(absl::StrCat(
            "peer advertises loopback Gloo address ", GlooAddressToString(response.gloo_address()),
            " (its host name resolves to loopback?): set gloo.interface on the peer")),
        v1::FAILURE_REASON_WRONG_INTERFACE);
  }
  if (absl::Status s = (*session)->Connect(
          response.gloo_address(), response.bulk_gloo_address(),
          {response.flow_gloo_addresses().begin(), response.flow_gloo_addresses().end()});
      !s.ok()) {
    // The RPC got through, so the host is up: a failing pair points at the
    // ports Gloo pairs use (the ephemeral range), not at the peer.
    return absl::Status(s.code(), absl::StrCat(s.message(),
                                               " (gRPC reached the peer; Gloo pairs use "
                                               "ephemeral ports: check firewalls)"));
  }
  connected->gloo_address = GlooAddressToString(response.gloo_address());
  connected->version = response.version();
  return session;
}

absl::StatusOr<std::unique_ptr<ProbeSession>> PeerProber::Connect() {
  ConnectedPeer connected;
  absl::StatusOr<std::unique_ptr<ProbeSession>> session =
      ConnectProbeSession(context_, params_, peer_, gloo_timeout_, *stub_, &connected);
  // A fresh channel next time: a channel that saw the peer refuse keeps
  // failing fast through gRPC's reconnect backoff ("tcp handshaker
  // shutdown") for seconds after the peer is back.
  if (connected.rpc_failed)
    stub_ = v1::Peer::NewStub(PeerChannel(peer_.grpc, context_.credentials));
  if (session.ok()) observer_->SetUp(connected.gloo_address, connected.version);
  return session;
}

namespace {

// Waits on `clock` until `at`; false when `cancelled` is set first (looked
// at every 100 ms: nothing else wakes this wait).
bool WaitUntil(const Clock& clock, absl::Duration at, const std::atomic<bool>& cancelled) {
  absl::Mutex mu;
  absl::MutexLock lock(&mu);
  while (clock.Monotonic() < at) {
    if (cancelled) return false;
    clock.AwaitUntil(mu,
                     absl::Condition(
                         +[](const std::atomic<bool>* c) { return c->load(); }, &cancelled),
                     std::min(at, clock.Monotonic() + absl::Milliseconds(100)));
  }
  return !cancelled;
}

}  // namespace

absl::StatusOr<v1::ProbeLinkResponse> ProbeLinkNow(const ProberContext& context,
                                                   const Config& config, const PeerConfig& peer,
                                                   const v1::ProbeLinkRequest& request,
                                                   const std::atomic<bool>& cancelled) {
  const Clock& clock = *context.clock;
  const absl::Duration start = clock.Monotonic();
  const v1::ProbeParameters params = MakeProbeParameters(config);
  auto stub = v1::Peer::NewStub(PeerChannel(peer.grpc, context.credentials));
  ConnectedPeer connected;
  absl::StatusOr<std::unique_ptr<ProbeSession>> session =
      ConnectProbeSession(context, params, peer, config.gloo.timeout, *stub, &connected);
  if (!session.ok()) return session.status();
  v1::ProbeLinkResponse out;
  out.set_node(context.node);
  out.set_peer(peer.name);
  out.set_connect_seconds(absl::ToDoubleSeconds(clock.Monotonic() - start));
  absl::StatusOr<PingBurst> burst =
      (*session)->Ping(request.pings() == 0 ? 20 : static_cast<int>(request.pings()));
  if (!burst.ok()) return burst.status();
  for (absl::Duration rtt : burst->rtts) out.add_rtt_seconds(absl::ToDoubleSeconds(rtt));
  if (request.bandwidth()) {
    for (BandwidthDirection direction : {BandwidthDirection::kTx, BandwidthDirection::kRx}) {
      if (request.transfers() == (direction == BandwidthDirection::kTx
                                      ? v1::ProbeLinkRequest::TRANSFERS_RX_ONLY
                                      : v1::ProbeLinkRequest::TRANSFERS_TX_ONLY)) {
        continue;
      }
      // The node's gate: a transfer now must fit its bandwidth budget like
      // any scheduled one. The budget closes the gate for d / budget after a
      // transfer of d (the tx closes it for the rx), so a short wait is part
      // of the probe; a longer one is refused, saying when it would open.
      const absl::Duration wait = context.gate->open_at() - clock.Monotonic();
      if (wait > kProbeLinkMaxGateWait) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "bandwidth budget: this node's schedule.bandwidth_budget allows its next transfer",
            direction == BandwidthDirection::kRx ? " (the rx, after the tx)" : "", " in ",
            absl::ToInt64Seconds(wait) + 1, " s; an on-demand probe waits at most ",
            absl::FormatDuration(kProbeLinkMaxGateWait)));
      }
      if (!WaitUntil(clock, context.gate->open_at(), cancelled)) {
        return absl::CancelledError("the transport is stopping");
      }
      absl::StatusOr<BandwidthSample> sample = (*session)->Bandwidth(direction, *context.gate);
      if (!sample.ok()) return sample.status();
      if (direction == BandwidthDirection::kTx) {
        out.set_tx_bytes_per_second(sample->bytes_per_second);
      } else {
        out.set_rx_bytes_per_second(sample->bytes_per_second);
      }
      out.set_bandwidth_bytes(sample->bytes);
    }
  }
  out.set_seconds(absl::ToDoubleSeconds(clock.Monotonic() - start));
  return out;
}

absl::Status PeerProber::UseFlow(ProbeSession& session, size_t flow) {
  if (absl::Status s = session.UseFlow(flow); !s.ok()) return s;
  const size_t index = TcpConnectionOfFlow(flow);
  if (index < flow_used_.size()) flow_used_[index] = true;
  absl::MutexLock lock(&watch_mu_);
  // The watch follows the commands: what is unacknowledged is on this flow.
  if (watched_ && index < tcp_connections_.size()) watched_ = tcp_connections_[index];
  return absl::OkStatus();
}

absl::Status PeerProber::ProbeLatency(ProbeSession& session, ProbeSchedule& schedule) {
  const size_t counted = probe_config_.latency_burst;
  // While a loss is followed up, more round trips carry more segments (the
  // evidence); only the first `counted` are latency samples, as always.
  const bool follow_up = context_.loss_follow_up != nullptr && context_.loss_follow_up->Active() &&
                         counted < static_cast<size_t>(LossFollowUp::kLossFollowUpPings);
  // The flows take the latency probes in turn: a healthy link costs what
  // one flow did, and each flow carries a burst every `flows` intervals.
  const size_t flows = session.flows();
  const size_t flow = next_flow_ % flows;
  next_flow_ = (flow + 1) % flows;
  if (absl::Status s = UseFlow(session, flow); !s.ok()) return s;
  absl::StatusOr<PingBurst> burst =
      session.Ping(follow_up ? LossFollowUp::kLossFollowUpPings : static_cast<int>(counted));
  if (!burst.ok()) return burst.status();
  // While a loss is followed up every flow carries the follow-up's round
  // trips, so each flow's own loss ratio has the segments to tell a lossy
  // path from a clean one as fast as a link's does.
  for (size_t other = 1; follow_up && other < flows; ++other) {
    if (absl::Status s = UseFlow(session, (flow + other) % flows); !s.ok()) return s;
    absl::StatusOr<PingBurst> more = session.Ping(LossFollowUp::kLossFollowUpPings);
    if (!more.ok()) return more.status();
  }
  if (burst->rtts.size() > counted) burst->rtts.resize(counted);
  if (burst->samples.size() > counted) burst->samples.resize(counted);
  observer_->RecordRtts(burst->rtts);
  if (!schedule.skew_rides_on_latency()) {
    skew_samples_.clear();  // a reload made skew a probe of its own
    return absl::OkStatus();
  }
  skew_samples_.insert(skew_samples_.end(), burst->samples.begin(), burst->samples.end());
  // The latency probe nearest the due time reports, so skew comes at its
  // interval on average.
  const absl::Duration now = context_.clock->Monotonic();
  if (schedule.Due(ProbeSchedule::Kind::kSkew) >
      now + schedule.Interval(ProbeSchedule::Kind::kLatency) / 2) {
    return absl::OkStatus();
  }
  // The tightest exchange since the last report, as a skew probe would pick
  // from its own burst.
  if (std::optional<OffsetEstimate> best = BestOffset(skew_samples_)) {
    observer_->RecordOffset(*best);
  }
  skew_samples_.clear();
  schedule.Done(ProbeSchedule::Kind::kSkew, now);
  return absl::OkStatus();
}

absl::Status PeerProber::RunProbe(ProbeSchedule::Kind kind, ProbeSession& session,
                                  ProbeSchedule& schedule) {
  switch (kind) {
    case ProbeSchedule::Kind::kLatency:
      return ProbeLatency(session, schedule);
    case ProbeSchedule::Kind::kSkew: {
      auto samples = session.SyncBurst(static_cast<int>(probe_config_.skew_burst));
      if (!samples.ok()) return samples.status();
      if (std::optional<OffsetEstimate> best = BestOffset(*samples)) observer_->RecordOffset(*best);
      return absl::OkStatus();
    }
    case ProbeSchedule::Kind::kBandwidth:
      for (BandwidthDirection d : {BandwidthDirection::kTx, BandwidthDirection::kRx}) {
        // After a deferral (busy, or the budget spent after tx) only rx is left.
        if (d == BandwidthDirection::kTx && bandwidth_tx_done_) continue;
        auto sample = session.Bandwidth(d, *context_.gate);
        if (!sample.ok()) return sample.status();
        observer_->RecordBandwidth(d, *sample);
        bandwidth_tx_done_ = d == BandwidthDirection::kTx;
      }
      return absl::OkStatus();
    case ProbeSchedule::Kind::kKeepalive:
      return session.Keepalive();
  }
  return absl::OkStatus();
}

void PeerProber::ReportTcpStats(std::vector<TcpConnection>& connections, TcpCounterDeltas& deltas) {
  TcpSample sample;
  bool read = false;
  for (size_t i = 0; i < connections.size(); ++i) {
    const std::optional<size_t> flow = FlowOfTcpConnection(i);
    // The bulk pair and the flows after the first carry data only while a
    // transfer or commands go over them: one that did not since its last
    // read has nothing to add. (The command pair is read every time: its RTT
    // is the peer's TCP RTT figure.) So a read costs what it did with one
    // flow: the command pair and the flow the latency probe took.
    if (i != 0 && i < flow_used_.size() && !flow_used_[i]) continue;
    absl::StatusOr<TcpCounters> counters = context_.tcp_stats->Read(connections[i]);
    if (!counters.ok()) {
      // Not found: the pair broke, which its next probe reports.
      if (!absl::IsNotFound(counters.status()) && !tcp_stats_error_logged_) {
        tcp_stats_error_logged_ = true;
        GW_LOG(kWarning, "peer %s: no TCP statistics: %s", peer_.name, counters.status().message());
      }
      continue;
    }
    read = true;
    if (i < flow_used_.size()) flow_used_[i] = false;
    const TcpCounterDeltas::Delta d = deltas.Update(i, *counters);
    sample.retransmitted_segments += d.retransmitted_segments;
    sample.sent_segments += d.sent_segments;
    sample.spurious_retransmitted_segments += d.spurious_retransmitted_segments;
    if (flow) {
      sample.flows.push_back({static_cast<uint32_t>(*flow), d.retransmitted_segments,
                              d.sent_segments, d.spurious_retransmitted_segments});
    }
    if (i == 0) {
      sample.rtt = counters->rtt;
      sample.rtt_variation = counters->rtt_variation;
    }
  }
  if (read) observer_->RecordTcp(sample);
  if (context_.loss_follow_up != nullptr &&
      sample.retransmitted_segments > sample.spurious_retransmitted_segments) {
    context_.loss_follow_up->SawLoss();
  }
}

void PeerProber::WatchUnacknowledged(absl::Duration now,
                                     const std::function<void(uint32_t, absl::Duration)>& report) {
  absl::MutexLock lock(&watch_mu_);
  if (!watched_ || context_.tcp_stats == nullptr) return;
  const absl::Duration sent = absl::Nanoseconds(last_command_ns_.load(std::memory_order_relaxed));
  if (!watch_.NeedsRead(now, sent)) return;
  absl::StatusOr<TcpCounters> counters = context_.tcp_stats->Read(*watched_);
  if (!counters.ok()) return;  // closed: the next command fails and says why
  if (std::optional<UnacknowledgedWatch::Report> r = watch_.Update(now, sent, *counters)) {
    report(r->retransmissions, r->at_least);
  }
}

void PeerProber::Run() {
  const uint64_t seed = std::hash<std::string>()(context_.node + "/" + peer_.name);
  Backoff backoff(probe_config_.backoff_initial, probe_config_.backoff_max, seed);
  ProbeSchedule schedule(schedule_config_, gloo_timeout_ / 2, seed);
  std::mt19937_64 rng(seed);
  while (true) {
    observer_->SetConnecting();
    Progress(kStallTimeouts * gloo_timeout_);
    absl::StatusOr<std::unique_ptr<ProbeSession>> session = Connect();
    absl::Status ended = session.status();
    if (session.ok()) {
      if (backoff.failures() > 0) {
        const uint64_t unlogged = failure_log_.Reset();
        GW_LOG(kInfo, "peer %s: up%s", peer_.name,
               unlogged == 0 ? std::string()
                             : absl::StrCat(" (", unlogged, " repeated failures were not logged)"));
      }
      backoff.Reset();
      std::optional<absl::Status> failed = ProbeUntilFailure(**session, schedule, rng);
      if (!failed) return;  // stopping
      ended = *std::move(failed);
    }
    // A busy answer right after a failure of ours is that failure's echo:
    // the peer's responders for our failed pairs wait out their Gloo
    // timeout. The failure that caused it stays the one reported.
    const bool echo = absl::IsResourceExhausted(ended) && backoff.failures() > 0;
    if (!echo) Fail(ended);
    // A busy peer frees its slots within a Gloo timeout (its stale
    // responders time out): retry then, so that once nothing is wrong every
    // peer is up within backoff_max plus two Gloo timeouts.
    const absl::Duration wait = absl::IsResourceExhausted(ended)
                                    ? gloo_timeout_ + absl::Milliseconds(rng() % 1000)
                                    : backoff.Next();
    session = absl::CancelledError();  // drops the pairs before backing off
    if (!SleepUntil(context_.clock->Monotonic() + wait)) return;
  }
}

std::optional<absl::Status> PeerProber::ProbeUntilFailure(ProbeSession& session,
                                                          ProbeSchedule& schedule,
                                                          std::mt19937_64& rng) {
  next_flow_ = 0;
  last_command_ns_.store(absl::ToInt64Nanoseconds(context_.clock->Monotonic()));
  {
    absl::MutexLock lock(&watch_mu_);
    tcp_connections_.clear();
    if (context_.tcp_stats != nullptr) tcp_connections_ = session.tcp_connections();
    flow_used_.assign(tcp_connections_.size(), false);
    if (!tcp_connections_.empty()) watched_ = tcp_connections_[0];  // the command pair
    watch_.Reset();
  }
  std::optional<absl::Status> ended = ProbeSessionLoop(session, schedule, rng, tcp_connections_);
  // Before the caller reports the failure: no watch report of this session
  // comes after it.
  absl::MutexLock lock(&watch_mu_);
  watched_.reset();
  return ended;
}

std::optional<absl::Status> PeerProber::ProbeSessionLoop(
    ProbeSession& session, ProbeSchedule& schedule, std::mt19937_64& rng,
    std::vector<TcpConnection>& tcp_connections) {
  const Clock& clock = *context_.clock;
  schedule.Reset(clock.Monotonic());
  schedule.set_latency_carries_timestamps(session.pings_carry_timestamps());
  skew_samples_.clear();
  bandwidth_tx_done_ = false;
  // The baseline: what the connections show before the first probe is their
  // handshake's. A SYN or SYN-ACK repeated while the path was still cut
  // counts in tcpi_total_retrans (an accepted socket inherits its request's),
  // and a session that connects the moment a cut ends is no lossy link.
  TcpCounterDeltas tcp_deltas;
  for (size_t i = 0; i < tcp_connections.size(); ++i) {
    if (absl::StatusOr<TcpCounters> c = context_.tcp_stats->Read(tcp_connections[i]); c.ok()) {
      tcp_deltas.Update(i, *c);
    }
  }
  absl::Duration tcp_read_at = clock.Monotonic();
  absl::Duration reported_bandwidth_due = -absl::InfiniteDuration();
  while (true) {
    if (std::optional<ScheduleConfig> update = TakeScheduleUpdate()) {
      schedule.SetConfig(*update, clock.Monotonic());
    }
    // So the status API can say when a missing bandwidth figure comes.
    if (const absl::Duration due = schedule.Due(ProbeSchedule::Kind::kBandwidth);
        due != reported_bandwidth_due) {
      reported_bandwidth_due = due;
      const absl::Duration gate_opens = context_.gate != nullptr ? context_.gate->open_at() : due;
      observer_->RecordBandwidthDue(clock.Now() + (std::max(due, gate_opens) - clock.Monotonic()));
    }
    absl::Duration at;
    const ProbeSchedule::Kind kind = schedule.Next(&at);
    if (!SleepUntil(at)) return std::nullopt;
    if (clock.Monotonic() < at) continue;  // woken early by a schedule update
    absl::Duration may_take = kStallTimeouts * gloo_timeout_;
    if (kind == ProbeSchedule::Kind::kBandwidth) {
      // Each message of both directions may take up to one Gloo timeout.
      may_take += 2 * static_cast<int64_t>(params_.bandwidth_messages()) * gloo_timeout_;
    }
    Progress(may_take);
    last_command_ns_.store(absl::ToInt64Nanoseconds(clock.Monotonic()), std::memory_order_relaxed);
    absl::Status status = RunProbe(kind, session, schedule);
    if (kind == ProbeSchedule::Kind::kBandwidth && flow_used_.size() > 1) {
      flow_used_[1] = true;  // the bulk pair (TcpConnectionOfFlow's order)
    }
    // What the peer's transport said of its daemon travels with the probe's
    // results (the latency probe's, every latency_interval by default).
    if (std::optional<PeerDaemonReport> daemon = session.TakePeerDaemon()) {
      observer_->RecordPeerDaemon(
          daemon->silent_seconds ? std::optional<double>(*daemon->silent_seconds) : std::nullopt);
    }
    if (absl::IsResourceExhausted(status)) {
      // Another transfer holds this node or the peer, or a bandwidth budget
      // is spent: not a link fault. Retry at a random moment after our own
      // budget allows, so our probers do not all retry at once.
      std::uniform_int_distribution<int> ms(500, 3000);
      const absl::Duration now = clock.Monotonic();
      const absl::Duration wait = std::max(context_.gate->open_at() - now, absl::ZeroDuration());
      schedule.Defer(kind, now, wait + absl::Milliseconds(ms(rng)));
      continue;
    }
    if (!status.ok()) {
      // The flow the failed command went over (a transfer's data goes over
      // the bulk pair, no flow's), when it timed out: a path drops, it never
      // resets or refuses (that is the peer's process going or restarting).
      if (kind != ProbeSchedule::Kind::kBandwidth &&
          FailureReasonOf(status) == v1::FAILURE_REASON_TIMEOUT) {
        observer_->RecordFlowFailure(static_cast<uint32_t>(session.current_flow()));
      }
      // A ping that timed out is a lost latency probe; the failure (reason
      // timeout) that ends the session is recorded by the caller.
      if (kind == ProbeSchedule::Kind::kLatency &&
          FailureReasonOf(status) == v1::FAILURE_REASON_TIMEOUT) {
        observer_->RecordLatencyProbeLost();
      }
      return status;
    }
    schedule.Done(kind, clock.Monotonic());
    // Between probes, so no probe waits for it.
    const absl::Duration since_read = clock.Monotonic() - tcp_read_at;
    if (!tcp_connections.empty() &&
        since_read >=
            (kind == ProbeSchedule::Kind::kLatency ? kTcpStatsInterval : kTcpStatsOverdue)) {
      ReportTcpStats(tcp_connections, tcp_deltas);
      tcp_read_at = clock.Monotonic();
    }
  }
}

}  // namespace gloowatch
