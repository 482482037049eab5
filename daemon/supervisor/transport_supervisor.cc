#include "daemon/supervisor/transport_supervisor.h"

#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "channel/peer_events.h"
#include "common/estimators.h"
#include "common/log.h"

namespace gloowatch {
namespace {

using transport::v1::FromTransport;
using transport::v1::ToTransport;

// A heartbeat watchdog that wakes this much past its deadline was not
// running (the daemon itself was stopped), rather than late; and the time
// the reader then gets to take the heartbeats that waited.
constexpr absl::Duration kOverslept = absl::Seconds(1);

transport::v1::Configure ConfigureMessage(const Config& config,
                                          const std::vector<std::string>& probe_peers) {
  transport::v1::Configure configure;
  configure.set_yaml(config.yaml);
  configure.set_source(config.source);
  configure.set_node(config.node);
  for (const std::string& peer : probe_peers) configure.add_probe_peers(peer);
  return configure;
}

}  // namespace

TransportSupervisor::TransportSupervisor(Options options, const Clock* clock)
    : options_(std::move(options)),
      clock_(clock),
      admission_(options_.max_opens_in_flight, options_.max_opens_per_peer) {
  *configure_.mutable_configure() = ConfigureMessage(options_.config, options_.probe_peers);
  last_progress_ = clock_->Monotonic();
}

void TransportSupervisor::Reconfigure(const Config& config,
                                      const std::vector<std::string>& probe_peers) {
  absl::MutexLock lock(&mu_);
  *configure_.mutable_configure() = ConfigureMessage(config, probe_peers);
  // Only the latest config matters: one not yet sent is replaced.
  configure_unsent_ = true;
}

void TransportSupervisor::TellAlive() {
  absl::MutexLock lock(&mu_);
  tick_unsent_ = true;
}

TransportSupervisor::~TransportSupervisor() { Stop(); }

void TransportSupervisor::Start() {
  thread_ = std::thread([this] { Supervise(); });
}

absl::Status TransportSupervisor::AwaitStarted(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto known = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return first_start_.has_value(); };
  if (!mu_.AwaitWithTimeout(absl::Condition(&known), timeout)) {
    return absl::DeadlineExceededError(absl::StrCat("the probe transport process did not start in ",
                                                    absl::FormatDuration(timeout)));
  }
  return *first_start_;
}

void TransportSupervisor::Stop() {
  std::vector<Pending> waiting;
  std::vector<PendingPreflight> preflights;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    preflights = TakePreflights(/*expired_only=*/false);
    waiting = TakePending();
    if (channel_) channel_->Shutdown();
  }
  Fail(std::move(waiting), absl::UnavailableError("this node is shutting down"));
  FailPreflights(std::move(preflights), absl::UnavailableError("this node is shutting down"));
  if (thread_.joinable()) thread_.join();
}

std::vector<TransportSupervisor::Pending> TransportSupervisor::TakePending() {
  std::vector<Pending> taken;
  for (auto& [id, pending] : pending_) taken.push_back(std::move(pending));
  pending_.clear();
  outbox_.clear();
  return taken;
}

std::vector<TransportSupervisor::Pending> TransportSupervisor::TakeExpired() {
  std::vector<Pending> taken;
  const absl::Duration now = clock_->Monotonic();
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->second.deadline > now) {
      ++it;
      continue;
    }
    // Never sent (the transport is not reading): it must not be later.
    const uint64_t id = it->first;
    outbox_.erase(std::remove_if(outbox_.begin(), outbox_.end(),
                                 [id](const ToTransport& m) { return m.open().id() == id; }),
                  outbox_.end());
    taken.push_back(std::move(it->second));
    it = pending_.erase(it);
  }
  return taken;
}

void TransportSupervisor::Fail(std::vector<Pending> opens, const absl::Status& status) {
  for (Pending& open : opens) open.done(status);
}

std::vector<TransportSupervisor::PendingPreflight> TransportSupervisor::TakePreflights(
    bool expired_only) {
  std::vector<PendingPreflight> taken;
  const absl::Duration now = clock_->Monotonic();
  for (auto it = preflights_.begin(); it != preflights_.end();) {
    if (expired_only && it->second.deadline > now) {
      ++it;
      continue;
    }
    const uint64_t id = it->first;
    outbox_.erase(std::remove_if(outbox_.begin(), outbox_.end(),
                                 [id](const ToTransport& m) {
                                   return m.has_preflight() && m.preflight().id() == id;
                                 }),
                  outbox_.end());
    taken.push_back(std::move(it->second));
    it = preflights_.erase(it);
  }
  return taken;
}

void TransportSupervisor::FailPreflights(std::vector<PendingPreflight> steps,
                                         const absl::Status& status) {
  for (PendingPreflight& step : steps) step.done(status);
}

void TransportSupervisor::StartPreflight(transport::v1::PreflightStep step, absl::Duration timeout,
                                         PreflightDone done) {
  {
    absl::MutexLock lock(&mu_);
    if (channel_ && !stopping_) {
      const uint64_t id = ++next_id_;
      step.set_id(id);
      preflights_[id] = PendingPreflight{std::move(done), clock_->Monotonic() + timeout};
      *outbox_.emplace_back().mutable_preflight() = std::move(step);
      return;
    }
  }
  done(absl::UnavailableError("probe transport restarting; retry"));
}

void TransportSupervisor::Supervise() {
  Backoff backoff(options_.restart_initial, options_.restart_max);
  while (true) {
    const absl::Duration started = clock_->Monotonic();
    const std::string why = LaunchAndRun();
    if (why.empty()) return;
    {
      absl::MutexLock lock(&mu_);
      // The first process could not start: start-up fails with its reason
      // (the daemon stops), no restart.
      if (!first_start_) first_start_ = absl::UnavailableError(why);
      if (!first_start_->ok()) return;
      ++restarts_;
    }
    GW_LOG(kError, "%s; restarting it", why);
    if (options_.on_exit) options_.on_exit(why);
    // A transport that ran a good while before dying starts the backoff over.
    if (clock_->Monotonic() - started > absl::Minutes(1)) backoff.Reset();
    const absl::Duration until = clock_->Monotonic() + backoff.Next();
    absl::MutexLock lock(&mu_);
    // In steps, so that Healthy() sees supervision going on.
    while (!stopping_ && clock_->Monotonic() < until) {
      last_progress_ = clock_->Monotonic();
      clock_->AwaitUntil(mu_, absl::Condition(&stopping_),
                         std::min(last_progress_ + absl::Seconds(1), until));
    }
    if (stopping_) return;
  }
}

std::string TransportSupervisor::LaunchAndRun() {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) {
    return absl::StrCat("cannot start the probe transport: socketpair: ", strerror(errno));
  }
  auto channel = std::make_shared<MessageChannel>(fds[0]);
  absl::StatusOr<std::unique_ptr<LaunchedTransport>> launched =
      options_.launcher->Launch(fds[1], options_.gloo_address);
  if (!launched.ok()) {
    return absl::StrCat("cannot start the probe transport: ", launched.status().message());
  }
  return RunOnce(**launched, channel);
}

std::string TransportSupervisor::RunOnce(LaunchedTransport& transport,
                                         const std::shared_ptr<MessageChannel>& channel) {
  const pid_t pid = transport.pid();
  const std::string name = transport.name();
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) channel->Shutdown();
    channel_ = channel;
    last_heartbeat_ = clock_->Monotonic();
    stalled_ = false;
    reported_transfer_nanos_ = 0;
    configure_unsent_ = true;  // the first message of every transport
  }
  if (options_.on_pid) options_.on_pid(pid);
  std::thread writer([this, channel] { Write(channel); });
  std::string hung;
  std::thread watchdog([this, &name, channel, &hung] { WatchHeartbeats(name, channel, &hung); });
  FromTransport message;
  absl::Duration tick = absl::Seconds(1);
  while (true) {
    const MessageChannel::Received received = channel->Receive(&message, tick);
    if (received == MessageChannel::Received::kClosed) break;
    if (received == MessageChannel::Received::kMessage) Dispatch(message);
    std::vector<Pending> expired;
    std::vector<PendingPreflight> expired_preflights;
    {
      absl::MutexLock lock(&mu_);
      last_progress_ = clock_->Monotonic();
      expired = TakeExpired();
      expired_preflights = TakePreflights(/*expired_only=*/true);
      // While opens wait, wake often enough to keep their deadline to a
      // tenth of open_timeout.
      tick = pending_.empty() ? absl::Seconds(1)
                              : std::min(absl::Seconds(1), options_.open_timeout / 10);
      if (!preflights_.empty()) tick = std::min(tick, absl::Milliseconds(100));
    }
    Fail(std::move(expired), absl::DeadlineExceededError("probe transport did not answer in time"));
    FailPreflights(std::move(expired_preflights),
                   absl::DeadlineExceededError("probe transport did not finish the preflight step "
                                               "in time"));
  }
  // The transport ended, is stopped or hung: nothing it had open stays.
  bool stopping;
  std::vector<Pending> waiting;
  std::vector<PendingPreflight> preflights;
  {
    absl::MutexLock lock(&mu_);
    channel_.reset();
    stopping = stopping_;
    preflights = TakePreflights(/*expired_only=*/false);
    waiting = TakePending();
  }
  if (options_.on_pid) options_.on_pid(-1);
  const absl::Status gone = absl::UnavailableError(stopping ? "this node is shutting down"
                                                            : "probe transport restarting; retry");
  Fail(std::move(waiting), gone);
  FailPreflights(std::move(preflights), gone);
  channel->Shutdown();  // wakes the writer if it is blocked in send
  transport.Kill();
  const std::string ended = transport.Wait();
  writer.join();
  watchdog.join();  // it saw channel_ change
  if (stopping) return "";
  if (!hung.empty()) return hung;
  return absl::StrCat("probe transport ", name, " ", ended);
}

void TransportSupervisor::WatchHeartbeats(const std::string& name,
                                          const std::shared_ptr<MessageChannel>& channel,
                                          std::string* hung) {
  absl::MutexLock lock(&mu_);
  // Extends the deadline after this process itself did not run (below).
  absl::Duration grace_until = -absl::InfiniteDuration();
  while (channel_ == channel) {
    const absl::Duration last = last_heartbeat_;
    const absl::Duration deadline = std::max(last + options_.heartbeat_timeout, grace_until);
    auto moved_on = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return channel_ != channel || last_heartbeat_ != last;
    };
    // Through the clock, so that a simulated one decides when the deadline
    // has passed.
    if (clock_->AwaitUntil(mu_, absl::Condition(&moved_on), deadline)) continue;
    const absl::Duration now = clock_->Monotonic();
    const absl::Duration silent = now - last;
    if (silent < options_.heartbeat_timeout) continue;  // a real wait may end early
    // The transport's messages wait unread, or we woke long after the
    // deadline: this process did not run meanwhile (the daemon was
    // SIGSTOPped, its VM suspended) while the transport went on sending. The
    // reader gets a moment to take the heartbeats, once per deadline: the
    // transport is not to blame for our own pause.
    if (grace_until < deadline && (now - deadline > kOverslept || channel->HasUnread())) {
      grace_until = now + kOverslept;
      continue;
    }
    *hung =
        absl::StrCat("probe transport ", name, " stopped answering (no heartbeat for ",
                     absl::FormatDuration(absl::Trunc(silent, absl::Seconds(1))), "); killed it");
    channel->Shutdown();  // ends the reader's Receive, which kills the transport
    return;
  }
}

void TransportSupervisor::Write(const std::shared_ptr<MessageChannel>& channel) {
  while (true) {
    ToTransport message;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return channel_ != channel || configure_unsent_ || tick_unsent_ || !outbox_.empty();
      };
      mu_.Await(absl::Condition(&ready));
      if (channel_ != channel) return;
      if (configure_unsent_) {
        message = configure_;
        configure_unsent_ = false;
      } else if (tick_unsent_) {
        message.mutable_tick();
        tick_unsent_ = false;
      } else {
        message = std::move(outbox_.front());
        outbox_.pop_front();
      }
    }
    // Blocks while the transport does not read; a hung one is killed by the
    // reader, which ends this send.
    if (!channel->Send(message)) {
      channel->Shutdown();
      return;
    }
  }
}

void TransportSupervisor::Dispatch(const FromTransport& message) {
  switch (message.kind_case()) {
    case FromTransport::kPeer:
      if (std::shared_ptr<ProbeObserver> observer = options_.observer_for(message.peer().peer())) {
        ApplyPeerEvents(message.peer(), *observer);
      }
      break;
    case FromTransport::kOpened: {
      std::optional<Pending> answered;
      {
        absl::MutexLock lock(&mu_);
        auto it = pending_.find(message.opened().id());
        if (it == pending_.end()) break;  // it expired
        answered = std::move(it->second);
        pending_.erase(it);
      }
      const transport::v1::OpenResult& result = message.opened();
      if (result.code() != 0) {
        answered->done(
            absl::Status(static_cast<absl::StatusCode>(result.code()), result.message()));
      } else {
        answered->done(result.response());
      }
      break;
    }
    case FromTransport::kHeartbeat: {
      int64_t new_nanos = 0;
      {
        absl::MutexLock lock(&mu_);
        last_heartbeat_ = clock_->Monotonic();
        stalled_ = message.heartbeat().stalled();
        const int64_t total = message.heartbeat().bandwidth_transfer_nanos();
        new_nanos = std::max<int64_t>(total - reported_transfer_nanos_, 0);
        reported_transfer_nanos_ = std::max(total, reported_transfer_nanos_);
      }
      if (new_nanos > 0 && options_.on_bandwidth_transfer) {
        options_.on_bandwidth_transfer(absl::Nanoseconds(new_nanos));
      }
      break;
    }
    case FromTransport::kStarted: {
      absl::Status started(static_cast<absl::StatusCode>(message.started().code()),
                           message.started().message());
      absl::MutexLock lock(&mu_);
      if (!first_start_) {
        first_start_ = started;
      } else if (!started.ok()) {
        GW_LOG(kError, "probe transport: %s", started.message());
      }
      break;
    }
    case FromTransport::kPreflight: {
      std::optional<PendingPreflight> answered;
      {
        absl::MutexLock lock(&mu_);
        auto it = preflights_.find(message.preflight().id());
        if (it == preflights_.end()) break;  // it expired
        answered = std::move(it->second);
        preflights_.erase(it);
      }
      const transport::v1::PreflightReply& reply = message.preflight();
      if (reply.code() != 0) {
        answered->done(absl::Status(static_cast<absl::StatusCode>(reply.code()), reply.message()));
      } else {
        answered->done(reply);
      }
      break;
    }
    case FromTransport::KIND_NOT_SET:
      break;
  }
}

void TransportSupervisor::StartOpen(const v1::OpenProbePairRequest& request, Done done) {
  OpenAdmission::Ticket ticket;
  if (absl::Status s = admission_.Admit(request.from_node(), &ticket); !s.ok()) {
    done(s);
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    if (channel_ && !stopping_) {
      const uint64_t id = ++next_id_;
      pending_[id] =
          Pending{std::move(done), clock_->Monotonic() + options_.open_timeout, std::move(ticket)};
      ToTransport& message = outbox_.emplace_back();
      message.mutable_open()->set_id(id);
      *message.mutable_open()->mutable_request() = request;
      return;
    }
  }
  done(absl::UnavailableError("probe transport restarting; retry"));
}

bool TransportSupervisor::Healthy() const {
  absl::MutexLock lock(&mu_);
  const absl::Duration now = clock_->Monotonic();
  if (now - last_progress_ > 2 * options_.heartbeat_timeout) return false;
  if (!channel_) return true;
  return !stalled_ && now - last_heartbeat_ < options_.heartbeat_timeout;
}

uint64_t TransportSupervisor::restarts() const {
  absl::MutexLock lock(&mu_);
  return restarts_;
}

}  // namespace gloowatch
