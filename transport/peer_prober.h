// One thread per peer: connects the probe pairs through the peer's
// OpenProbePair RPC, runs the latency / skew / bandwidth schedule, and on any
// failure classifies it, drops the pairs and reconnects with capped backoff.
// Peers never share a thread, so one dead or slow peer cannot stall another.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <thread>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "channel/probe_observer.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/estimators.h"
#include "common/log.h"
#include "grpcpp/security/credentials.h"
#include "proto/gloowatch.grpc.pb.h"
#include "transport/probe_link.h"
#include "transport/tcp_stats.h"

namespace gloo::transport {
class Device;
}

namespace gloowatch {

// When each kind of probe is due next, on the monotonic clock.
class ProbeSchedule {
 public:
  enum class Kind { kLatency, kSkew, kBandwidth, kKeepalive };

  ProbeSchedule(const ScheduleConfig& config, absl::Duration keepalive, uint64_t seed);
  // A fresh session: latency and skew at once, bandwidth after a random delay
  // so daemons started together do not all transfer at the same moment.
  void Reset(absl::Duration now);
  // The kind due first and when.
  Kind Next(absl::Duration* at) const;
  // When `kind` is due, and its interval (before jitter).
  absl::Duration Due(Kind kind) const { return due_[static_cast<int>(kind)]; }
  absl::Duration Interval(Kind kind) const;
  // `kind` ran at `now`: schedule its next run. Any command also counts as a
  // keepalive.
  void Done(Kind kind, absl::Duration now);
  // New intervals from a reload: a probe now due later than one new interval
  // from `now` is brought forward.
  void SetConfig(const ScheduleConfig& config, absl::Duration now);
  // Try `kind` again after `delay` (bandwidth while a transfer is running).
  void Defer(Kind kind, absl::Duration now, absl::Duration delay);
  // Whether the session's latency probes yield timestamp samples.
  void set_latency_carries_timestamps(bool carries) { latency_carries_timestamps_ = carries; }
  // Skew is then taken from the latency probes' samples, reported by the
  // latency probe nearest its due time, and never runs as a probe of its own
  // (unless asked for more often than latency).
  bool skew_rides_on_latency() const {
    return latency_carries_timestamps_ && config_.skew_interval >= config_.latency_interval;
  }

 private:
  ScheduleConfig config_;
  bool latency_carries_timestamps_ = false;
  absl::Duration keepalive_;
  std::mt19937_64 rng_;
  absl::Duration due_[4];
};

// The loss follow-up: once a probe pair of this transport lost a segment (a
// retransmission the peer did not report as spurious), every prober's
// latency probes make kLossFollowUpPings round trips instead of
// probe.latency_burst, until a loss window (60 s) passes without another.
// At the default schedule a direction sends about 80 segments a minute,
// too few to tell a loss of 2% from none; with the follow-up it sends about
// 1,200, and the pooled evidence over a node's links (client/health/
// localise.h) names a lossy NIC within seconds and clears a repaired one
// within the recent window. A healthy cluster pays nothing. Thread-safe.
class LossFollowUp {
 public:
  static constexpr int kLossFollowUpPings = 100;
  static constexpr absl::Duration kActiveFor = absl::Seconds(60);

  explicit LossFollowUp(const Clock* clock) : clock_(clock) {}
  void SawLoss();
  bool Active() const;

 private:
  const Clock* const clock_;
  std::atomic<int64_t> until_ns_{INT64_MIN};
};

struct ProberContext {
  std::string node;
  std::string version;
  std::shared_ptr<gloo::transport::Device> device;
  bool local_gloo_is_loopback = false;
  BandwidthGate* gate = nullptr;
  const Clock* clock = nullptr;
  // For the peers' gRPC API; plaintext when null.
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  // Reads the pairs' kernel TCP statistics; none are reported when null.
  const TcpStatsSource* tcp_stats = nullptr;
  // Shared by the transport's probers; no follow-up when null.
  LossFollowUp* loss_follow_up = nullptr;
};

// Builds the probe parameters we send in OpenProbePair from the config.
v1::ProbeParameters MakeProbeParameters(const Config& config);

// What the peer said when a session connected.
struct ConnectedPeer {
  bool rpc_failed = false;  // OpenProbePair itself failed: use a fresh channel next
  std::string gloo_address;
  std::string version;
};

// A probe session to `peer`: our two pairs, its OpenProbePair, both pairs
// connected; the failure classified (FailureReasonOf) otherwise.
absl::StatusOr<std::unique_ptr<ProbeSession>> ConnectProbeSession(
    const ProberContext& context, const v1::ProbeParameters& params, const PeerConfig& peer,
    absl::Duration gloo_timeout, v1::Peer::Stub& stub, ConnectedPeer* connected);

// How long an on-demand transfer waits for the node's bandwidth gate (its
// budget, after the last transfer) before it is refused.
inline constexpr absl::Duration kProbeLinkMaxGateWait = absl::Seconds(30);

// gloowatch probe: one link tested now over a fresh session of its own (the
// prober's session and schedule are not touched): `request.pings` latency
// round trips and, when asked, one transfer each way through the node's
// bandwidth gate, waiting up to kProbeLinkMaxGateWait for it to open
// (RESOURCE_EXHAUSTED with the reason when it opens later or a transfer is
// running). Every other step is bounded by the Gloo timeout, as the
// prober's are; `cancelled` ends a wait for the gate.
absl::StatusOr<v1::ProbeLinkResponse> ProbeLinkNow(const ProberContext& context,
                                                   const Config& config, const PeerConfig& peer,
                                                   const v1::ProbeLinkRequest& request,
                                                   const std::atomic<bool>& cancelled);

class PeerProber {
 public:
  PeerProber(ProberContext context, const Config& config, PeerConfig peer, ProbeObserver* observer);
  ~PeerProber();

  void Start();
  // Applies new probe intervals without dropping the pairs.
  void UpdateSchedule(const ScheduleConfig& schedule);
  // Asks the thread to stop; it does within one Gloo timeout.
  void Stop();
  // Joins the thread if it ended within `timeout`; true when joined.
  bool Join(absl::Duration timeout);

  // True when the thread has been inside one step longer than any healthy
  // step takes: a connect or probe for more than 6 Gloo timeouts (a bandwidth
  // transfer also gets one Gloo timeout per message), a sleep for more than
  // its length plus that. Never true before Start() or after the thread ended.
  bool Stalled(absl::Duration now) const;

  // The transport's watch over the command pair, called about once a second
  // from another thread (Transport's heartbeat thread): when a command went
  // out at least a second ago, reads the socket's tcp_info; data the peer's
  // kernel has not acknowledged although ours retransmitted it on timeouts
  // twice or more means nothing gets through (a partition, a dead host, a
  // firewall that drops) well before the probe's Gloo timeout. Calls
  // `report(retransmissions, at_least)` when that starts or goes on, and
  // `report(0, 0)` once it is acknowledged again; under a lock the session's
  // end also takes, so no report of a session follows that session's failure.
  void WatchUnacknowledged(absl::Duration now,
                           const std::function<void(uint32_t, absl::Duration)>& report);

 private:
  void Run();
  absl::StatusOr<std::unique_ptr<ProbeSession>> Connect();
  absl::Status RunProbe(ProbeSchedule::Kind kind, ProbeSession& session, ProbeSchedule& schedule);
  // A latency probe over the next flow in turn (and, during a loss
  // follow-up, the follow-up's round trips over every flow); reports the
  // skew from its samples when that is due.
  absl::Status ProbeLatency(ProbeSession& session, ProbeSchedule& schedule);
  // Moves the session's commands to `flow`, and the watch with them.
  absl::Status UseFlow(ProbeSession& session, size_t flow);
  // Probes over one connected session on `schedule` until a probe fails
  // (that failure) or Stop() (nullopt).
  std::optional<absl::Status> ProbeUntilFailure(ProbeSession& session, ProbeSchedule& schedule,
                                                std::mt19937_64& rng);
  std::optional<absl::Status> ProbeSessionLoop(ProbeSession& session, ProbeSchedule& schedule,
                                               std::mt19937_64& rng,
                                               std::vector<TcpConnection>& tcp_connections);
  // Sleeps until the monotonic time `at` or Stop(); false when stopping.
  bool SleepUntil(absl::Duration at);
  std::optional<ScheduleConfig> TakeScheduleUpdate();
  void Fail(const absl::Status& status);
  // Reports what the session's sockets sent and retransmitted since the last
  // report.
  void ReportTcpStats(std::vector<TcpConnection>& connections, TcpCounterDeltas& deltas);
  // Records progress; the step that starts now may take up to `may_take`.
  void Progress(absl::Duration may_take);

  ProberContext context_;
  const v1::ProbeParameters params_;
  const ScheduleConfig schedule_config_;
  const ProbeConfig probe_config_;
  const absl::Duration gloo_timeout_;
  const PeerConfig peer_;
  ProbeObserver* const observer_;
  std::unique_ptr<v1::Peer::Stub> stub_;
  bool peer_is_loopback_;
  // Monotonic nanoseconds: when the current step counts as stalled
  // (INT64_MAX while not running).
  std::atomic<int64_t> stall_at_ns_{INT64_MAX};
  // The latency probes' timestamp samples since skew was last reported.
  std::vector<TimestampSample> skew_samples_;
  // The tx half of the current bandwidth probe ran; rx is still due.
  bool bandwidth_tx_done_ = false;
  // The same failure reason is logged at most every 30 s.
  LogRateLimiter failure_log_;
  // A failing TCP statistics read is logged once per prober.
  bool tcp_stats_error_logged_ = false;
  // The flow the next latency probe takes.
  size_t next_flow_ = 0;
  // The session's connections (ProbeSession::tcp_connections; written under
  // watch_mu_ at a session's start, then read by the prober's thread), and
  // which carried commands since their last read.
  std::vector<TcpConnection> tcp_connections_;
  std::vector<bool> flow_used_;

  // Monotonic nanoseconds of the last command sent over the command pair.
  std::atomic<int64_t> last_command_ns_{0};
  // The watch over the command pair (WatchUnacknowledged).
  absl::Mutex watch_mu_;
  std::optional<TcpConnection> watched_ ABSL_GUARDED_BY(watch_mu_);
  UnacknowledgedWatch watch_ ABSL_GUARDED_BY(watch_mu_);

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<ScheduleConfig> new_schedule_ ABSL_GUARDED_BY(mu_);
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace gloowatch
