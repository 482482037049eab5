// The daemon's side of the transport process (transport/transport_main.h):
// why everything that touches Gloo runs in a child process.
//
// Gloo's TCP pairs accept the first connection on their listening port and
// read it on Gloo's event-loop thread, where a GLOO_ENFORCE on unexpected
// bytes throws with nothing to catch it: any host that can reach a pending
// pair could abort the process. So the daemon (config, gRPC API, metrics,
// peer state) runs no Gloo code; a transport process, restarted with backoff
// when it dies, owns the Gloo device, the probers and the responders, and
// reports what it measures over a socketpair.
#pragma once

#include <sys/types.h>

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "channel/message_channel.h"
#include "channel/probe_observer.h"
#include "channel/responder_opener.h"
#include "common/clock.h"
#include "common/config.h"
#include "daemon/supervisor/open_admission.h"
#include "daemon/supervisor/transport_launcher.h"
#include "proto/transport.pb.h"

namespace gloowatch {

// Starts the transport process (through its TransportLauncher), restarts it
// with backoff when it dies or stops answering, and carries messages both
// ways. No lock is held across I/O: one thread per transport writes (latest
// config first, then queued opens), the supervising thread reads, and
// callers only queue.
class TransportSupervisor final : public ResponderOpener {
 public:
  struct Options {
    // Starts each transport: NewProcessLauncher in production.
    std::shared_ptr<TransportLauncher> launcher;
    Config config;                         // sent to every transport process started
    std::vector<std::string> probe_peers;  // the peers of `config` to probe
    std::string gloo_address;
    absl::Duration open_timeout = absl::Seconds(2);
    absl::Duration restart_initial = absl::Milliseconds(500);
    absl::Duration restart_max = absl::Seconds(30);
    // A transport that sends no heartbeat (it sends one a second) for this
    // long is killed and restarted: it is stopped, or wedged.
    absl::Duration heartbeat_timeout = absl::Seconds(5);
    // OpenProbePair requests waiting for the transport at once, in all and
    // per calling peer; more are refused at once (RESOURCE_EXHAUSTED).
    size_t max_opens_in_flight = 32;
    size_t max_opens_per_peer = 2;
    // The tracker of a peer, null for names we do not know.
    std::function<std::shared_ptr<ProbeObserver>(const std::string& peer)> observer_for;
    // Called after the transport died or was killed, with why; before the
    // restart.
    std::function<void(const std::string& why)> on_exit;
    // Called with the pid of every transport started (-1 for one that is no
    // process of its own), and with -1 once it has ended.
    std::function<void(pid_t)> on_pid;
    // Time the transport's bandwidth transfers took since the last call.
    std::function<void(absl::Duration)> on_bandwidth_transfer;
  };

  TransportSupervisor(Options options, const Clock* clock);
  ~TransportSupervisor() override;

  void Start();
  // Waits until the first transport process has its Gloo device and probers;
  // its reason when it could not (the Gloo address cannot be bound, say), or
  // when it ended first or `timeout` passed.
  absl::Status AwaitStarted(absl::Duration timeout);
  // Ends the transport process and fails every open still waiting; returns
  // within about a second whatever state the transport is in.
  void Stop();
  // Sends an accepted reload, or a new selection of peers to probe, to the
  // running transport (and to later ones). Never blocks on the transport.
  void Reconfigure(const Config& config, const std::vector<std::string>& probe_peers);
  // Tells the transport the daemon is alive (a DaemonTick), which its
  // responders pass on to the peers; Daemon::Tick calls it once a second. At
  // most one waits unsent. Never blocks on the transport.
  void TellAlive();

  // Queues the open for the transport; `done` runs when it answers, when
  // open_timeout passes or when it dies, on the supervising thread.
  void StartOpen(const v1::OpenProbePairRequest& request, Done done) override;

  // Queues one preflight step (its id is set here); `done` runs with the
  // transport's reply, or an error when `timeout` passes or the transport
  // dies, on the supervising thread. Never blocks.
  using PreflightDone = std::function<void(absl::StatusOr<transport::v1::PreflightReply>)>;
  void StartPreflight(transport::v1::PreflightStep step, absl::Duration timeout,
                      PreflightDone done);

  // False when the transport is running but its heartbeats stopped or it
  // reports a stalled prober, or when supervision itself stopped making
  // progress. Restarting after a crash counts as healthy.
  bool Healthy() const;
  uint64_t restarts() const;

 private:
  struct Pending {
    Done done;
    absl::Duration deadline;  // on clock_->Monotonic()
    OpenAdmission::Ticket ticket;
  };

  struct PendingPreflight {
    PreflightDone done;
    absl::Duration deadline;
  };

  void Supervise();
  // Launches one transport and runs it until it ends, is stopped or stops
  // answering; returns why it ended ("" when we are stopping).
  std::string LaunchAndRun();
  std::string RunOnce(LaunchedTransport& transport, const std::shared_ptr<MessageChannel>& channel);
  // Kills (through the channel) a transport that sends no heartbeat for
  // heartbeat_timeout, saying why in `hung`; ends when the channel is no
  // longer the running one.
  void WatchHeartbeats(const std::string& name, const std::shared_ptr<MessageChannel>& channel,
                       std::string* hung);
  // The writer of one transport's channel.
  void Write(const std::shared_ptr<MessageChannel>& channel);
  void Dispatch(const transport::v1::FromTransport& message);
  // Takes every waiting open out (and their messages, unsent); the caller
  // completes them once mu_ is released.
  std::vector<Pending> TakePending() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes out the opens whose deadline passed.
  std::vector<Pending> TakeExpired() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The same for preflight steps.
  std::vector<PendingPreflight> TakePreflights(bool expired_only)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static void FailPreflights(std::vector<PendingPreflight> steps, const absl::Status& status);
  static void Fail(std::vector<Pending> opens, const absl::Status& status);

  const Options options_;
  const Clock* const clock_;
  OpenAdmission admission_;
  std::thread thread_;

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::shared_ptr<MessageChannel> channel_ ABSL_GUARDED_BY(mu_);
  absl::Duration last_heartbeat_ ABSL_GUARDED_BY(mu_);
  // When the supervising thread last went round its loop.
  absl::Duration last_progress_ ABSL_GUARDED_BY(mu_);
  bool stalled_ ABSL_GUARDED_BY(mu_) = false;
  // The running transport's last reported transfer time (its total so far).
  int64_t reported_transfer_nanos_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t restarts_ ABSL_GUARDED_BY(mu_) = 0;
  // How the first transport process started, once known.
  std::optional<absl::Status> first_start_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<uint64_t, Pending> pending_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, PendingPreflight> preflights_ ABSL_GUARDED_BY(mu_);
  transport::v1::ToTransport configure_ ABSL_GUARDED_BY(mu_);
  // configure_ has not been sent to the running transport yet.
  bool configure_unsent_ ABSL_GUARDED_BY(mu_) = false;
  // A DaemonTick waits for the writer.
  bool tick_unsent_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<transport::v1::ToTransport> outbox_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gloowatch
