#include "transport/peer_prober.h"

#include <algorithm>

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

// --- PeerProber --------------------------------------------------------------

v1::ProbeParameters MakeProbeParameters(const Config& config) {
  v1::ProbeParameters p;
  p.set_latency_message_bytes(config.probe.latency_message_bytes);
  p.set_bandwidth_message_bytes(config.probe.bandwidth_message_bytes);
  p.set_bandwidth_messages(
      static_cast<uint32_t>(config.probe.bandwidth_bytes / config.probe.bandwidth_message_bytes));
  p.set_skew_burst(config.probe.skew_burst);
  p.set_gloo_timeout_ms(absl::ToInt64Milliseconds(config.gloo.timeout));
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
      failure_log_(kFailureLogInterval, context_.clock) {}

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

absl::StatusOr<std::unique_ptr<ProbeSession>> PeerProber::Connect() {
  auto session = ProbeSession::Create(context_.device, params_, context_.clock);
  if (!session.ok()) return WithFailureReason(session.status(), v1::FAILURE_REASON_OTHER);

  v1::OpenProbePairRequest request;
  request.set_protocol_version(kProbeProtocolVersion);
  request.set_from_node(context_.node);
  request.set_to_node(peer_.name);
  request.set_version(context_.version);
  request.set_gloo_address((*session)->command_address());
  request.set_bulk_gloo_address((*session)->bulk_address());
  *request.mutable_parameters() = params_;
  v1::OpenProbePairResponse response;
  grpc::ClientContext rpc;
  rpc.set_deadline(absl::ToChronoTime(absl::Now() + gloo_timeout_));
  const grpc::Status rpc_status = stub_->OpenProbePair(&rpc, request, &response);
  if (!rpc_status.ok()) {
    // A fresh channel next time: a channel that saw the peer refuse keeps
    // failing fast through gRPC's reconnect backoff ("tcp handshaker
    // shutdown") for seconds after the peer is back.
    stub_ = v1::Peer::NewStub(PeerChannel(peer_.grpc, context_.credentials));
    const std::string message =
        absl::StrCat("OpenProbePair to ", peer_.grpc.ToString(), ": ", rpc_status.error_message());
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
  if (response.protocol_version() != kProbeProtocolVersion || response.node() != peer_.name) {
    return WithFailureReason(absl::FailedPreconditionError(absl::StrCat(
                                 "peer at ", peer_.grpc.ToString(), " answered as node '",
                                 response.node(), "' protocol ", response.protocol_version(),
                                 ", expected '", peer_.name, "' protocol ", kProbeProtocolVersion)),
                             v1::FAILURE_REASON_PROTOCOL);
  }
  // The classic Gloo misconfiguration: one side binds to loopback while the
  // other is on another host, so pairs can never connect.
  if (!peer_is_loopback_ && context_.local_gloo_is_loopback) {
    return WithFailureReason(
        absl::FailedPreconditionError("our Gloo address is loopback but the peer is remote: set "
                                      "gloo.interface or gloo.address (or GLOO_SOCKET_IFNAME)"),
        v1::FAILURE_REASON_WRONG_INTERFACE);
  }
  if (!peer_is_loopback_ && GlooAddressIsLoopback(response.gloo_address())) {
    return WithFailureReason(
        absl::FailedPreconditionError(absl::StrCat(
            "peer advertises loopback Gloo address ", GlooAddressToString(response.gloo_address()),
            " (its host name resolves to loopback?): set gloo.interface on the peer")),
        v1::FAILURE_REASON_WRONG_INTERFACE);
  }
  if (absl::Status s = (*session)->Connect(response.gloo_address(), response.bulk_gloo_address());
      !s.ok()) {
    // The RPC got through, so the host is up: a failing pair points at the
    // ports Gloo pairs use (the ephemeral range), not at the peer.
    return absl::Status(s.code(), absl::StrCat(s.message(),
                                               " (gRPC reached the peer; Gloo pairs use "
                                               "ephemeral ports: check firewalls)"));
  }
  observer_->SetUp(GlooAddressToString(response.gloo_address()), response.version());
  return session;
}

absl::Status PeerProber::ProbeLatency(ProbeSession& session, ProbeSchedule& schedule) {
  absl::StatusOr<PingBurst> burst = session.Ping(static_cast<int>(probe_config_.latency_burst));
  if (!burst.ok()) return burst.status();
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
    const TcpCounterDeltas::Delta d = deltas.Update(i, *counters);
    sample.retransmitted_segments += d.retransmitted_segments;
    sample.sent_segments += d.sent_segments;
    sample.spurious_retransmitted_segments += d.spurious_retransmitted_segments;
    if (i == 0) {
      sample.rtt = counters->rtt;
      sample.rtt_variation = counters->rtt_variation;
    }
  }
  if (read) observer_->RecordTcp(sample);
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
  const Clock& clock = *context_.clock;
  schedule.Reset(clock.Monotonic());
  schedule.set_latency_carries_timestamps(session.pings_carry_timestamps());
  skew_samples_.clear();
  bandwidth_tx_done_ = false;
  std::vector<TcpConnection> tcp_connections;
  if (context_.tcp_stats != nullptr) tcp_connections = session.tcp_connections();
  TcpCounterDeltas tcp_deltas;
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
    absl::Status status = RunProbe(kind, session, schedule);
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
