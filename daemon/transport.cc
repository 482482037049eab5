#include "daemon/transport.h"

#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <optional>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "daemon/estimators.h"
#include "daemon/log.h"
#include "daemon/peer_prober.h"
#include "daemon/probe_link.h"
#include "daemon/tls.h"
#include "daemon/version.h"
#include "gloo/transport/tcp/device.h"

namespace gloowatch {
namespace {

using transport::v1::FromTransport;
using transport::v1::ToTransport;

// Reports a prober's observations to the daemon.
class ChannelObserver final : public ProbeObserver {
 public:
  ChannelObserver(std::string peer, MessageChannel* channel)
      : peer_(std::move(peer)), channel_(channel) {}

  void SetConnecting() override {
    FromTransport m = Event();
    m.mutable_peer()->mutable_connecting();
    channel_->Send(m);
  }
  void SetUp(const std::string& gloo_address, const std::string& peer_version) override {
    FromTransport m = Event();
    auto* up = m.mutable_peer()->mutable_up();
    up->set_gloo_address(gloo_address);
    up->set_peer_version(peer_version);
    channel_->Send(m);
  }
  void RecordFailure(v1::FailureReason reason, const std::string& message) override {
    FromTransport m = Event();
    auto* failure = m.mutable_peer()->mutable_failure();
    failure->set_reason(reason);
    failure->set_message(message);
    channel_->Send(m);
  }
  void RecordRtts(const std::vector<absl::Duration>& rtts) override {
    FromTransport m = Event();
    auto* out = m.mutable_peer()->mutable_rtts();
    for (absl::Duration rtt : rtts) out->add_nanos(absl::ToInt64Nanoseconds(rtt));
    channel_->Send(m);
  }
  void RecordOffset(const OffsetEstimate& e) override {
    FromTransport m = Event();
    auto* out = m.mutable_peer()->mutable_offset();
    out->set_offset_nanos(absl::ToInt64Nanoseconds(e.offset));
    out->set_delay_nanos(absl::ToInt64Nanoseconds(e.delay));
    out->set_error_nanos(absl::ToInt64Nanoseconds(e.error));
    channel_->Send(m);
  }
  void RecordBandwidth(BandwidthDirection direction, const BandwidthSample& sample) override {
    FromTransport m = Event();
    auto* out = m.mutable_peer()->mutable_bandwidth();
    out->set_tx(direction == BandwidthDirection::kTx);
    out->set_bytes_per_second(sample.bytes_per_second);
    out->set_bytes(sample.bytes);
    out->set_elapsed_nanos(absl::ToInt64Nanoseconds(sample.elapsed));
    channel_->Send(m);
  }

 private:
  FromTransport Event() const {
    FromTransport m;
    m.mutable_peer()->set_peer(peer_);
    return m;
  }

  const std::string peer_;
  MessageChannel* const channel_;
};

void Apply(const transport::v1::PeerEvent& e, ProbeObserver& observer) {
  switch (e.event_case()) {
    case transport::v1::PeerEvent::kConnecting:
      observer.SetConnecting();
      break;
    case transport::v1::PeerEvent::kUp:
      observer.SetUp(e.up().gloo_address(), e.up().peer_version());
      break;
    case transport::v1::PeerEvent::kFailure:
      observer.RecordFailure(e.failure().reason(), e.failure().message());
      break;
    case transport::v1::PeerEvent::kRtts: {
      std::vector<absl::Duration> rtts;
      for (int64_t ns : e.rtts().nanos()) rtts.push_back(absl::Nanoseconds(ns));
      observer.RecordRtts(rtts);
      break;
    }
    case transport::v1::PeerEvent::kOffset:
      observer.RecordOffset({absl::Nanoseconds(e.offset().offset_nanos()),
                             absl::Nanoseconds(e.offset().delay_nanos()),
                             absl::Nanoseconds(e.offset().error_nanos())});
      break;
    case transport::v1::PeerEvent::kBandwidth:
      observer.RecordBandwidth(
          e.bandwidth().tx() ? BandwidthDirection::kTx : BandwidthDirection::kRx,
          {e.bandwidth().bytes_per_second(), e.bandwidth().bytes(),
           absl::Nanoseconds(e.bandwidth().elapsed_nanos())});
      break;
    case transport::v1::PeerEvent::EVENT_NOT_SET:
      break;
  }
}

std::string DescribeExit(int status) {
  if (WIFEXITED(status)) return absl::StrCat("exited with code ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return absl::StrCat("was killed by signal ", WTERMSIG(status), " (",
                        strsignal(WTERMSIG(status)), ")");
  }
  return absl::StrCat("ended with status ", status);
}

}  // namespace

// --- the transport process ---------------------------------------------------

namespace {

// What changing a peer's config means for its running prober.
bool NeedsNewPairs(const PeerConfig& a, const PeerConfig& b, const Config& old_config,
                   const Config& new_config) {
  return a.grpc.ToString() != b.grpc.ToString() ||
         !(MakeProbeParameters(old_config).SerializeAsString() ==
           MakeProbeParameters(new_config).SerializeAsString()) ||
         old_config.probe.latency_burst != new_config.probe.latency_burst ||
         old_config.probe.backoff_initial != new_config.probe.backoff_initial ||
         old_config.probe.backoff_max != new_config.probe.backoff_max;
}

bool SameSchedule(const ScheduleConfig& a, const ScheduleConfig& b) {
  return a.latency_interval == b.latency_interval && a.skew_interval == b.skew_interval &&
         a.bandwidth_interval == b.bandwidth_interval && a.jitter == b.jitter;
}

// The probers of one transport process, changed in place on reload.
class ProberSet {
 public:
  ProberSet(ProberContext context, MessageChannel* channel)
      : context_(std::move(context)), channel_(channel) {}

  void Apply(const Config& config) {
    absl::MutexLock lock(&mu_);
    std::map<std::string, Entry> next;
    for (const PeerConfig& peer : config.peers) {
      auto it = running_.find(peer.name);
      if (it != running_.end() && !NeedsNewPairs(it->second.peer, peer, config_, config)) {
        if (!SameSchedule(config_.schedule, config.schedule)) {
          it->second.prober->UpdateSchedule(config.schedule);
        }
        next.emplace(peer.name, std::move(it->second));
        running_.erase(it);
        continue;
      }
      Entry entry;
      entry.peer = peer;
      entry.observer = std::make_unique<ChannelObserver>(peer.name, channel_);
      entry.prober = std::make_unique<PeerProber>(context_, config, peer, entry.observer.get());
      entry.prober->Start();
      next.emplace(peer.name, std::move(entry));
    }
    // Gone or changed: stop, and keep until the thread has ended (it may be
    // inside a Gloo call using its observer).
    for (auto& [name, entry] : running_) {
      entry.prober->Stop();
      retired_.push_back(std::move(entry));
    }
    running_ = std::move(next);
    config_ = config;
  }

  bool AnyStalled(absl::Duration now) {
    absl::MutexLock lock(&mu_);
    retired_.erase(std::remove_if(retired_.begin(), retired_.end(),
                                  [](Entry& e) { return e.prober->Join(absl::ZeroDuration()); }),
                   retired_.end());
    for (const auto& [name, entry] : running_) {
      if (entry.prober->Stalled(now)) return true;
    }
    return false;
  }

 private:
  struct Entry {
    PeerConfig peer;
    std::unique_ptr<ChannelObserver> observer;
    std::unique_ptr<PeerProber> prober;
  };

  const ProberContext context_;
  MessageChannel* const channel_;
  absl::Mutex mu_;
  Config config_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Entry> running_ ABSL_GUARDED_BY(mu_);
  std::vector<Entry> retired_ ABSL_GUARDED_BY(mu_);
};

absl::StatusOr<Config> ReadConfigure(const ToTransport& message) {
  if (!message.has_configure()) {
    return absl::InvalidArgumentError("expected a configure message first");
  }
  return ParseConfig(message.configure().yaml(), message.configure().source());
}

// Every configured peer: they may all open pairs to us.
std::set<std::string> PeerNames(const Config& config) {
  std::set<std::string> names;
  for (const PeerConfig& peer : config.peers) names.insert(peer.name);
  return names;
}

// The config with only the peers the daemon's topology selected.
Config ProbedOnly(Config config, const transport::v1::Configure& configure) {
  const std::set<std::string> probe(configure.probe_peers().begin(), configure.probe_peers().end());
  config.peers.erase(std::remove_if(config.peers.begin(), config.peers.end(),
                                    [&](const PeerConfig& p) { return !probe.count(p.name); }),
                     config.peers.end());
  return config;
}

}  // namespace

namespace {

// What the heartbeat reports, once the transport has set itself up.
class Liveness {
 public:
  void Set(ProberSet* probers, const BandwidthGate* gate) {
    absl::MutexLock lock(&mu_);
    probers_ = probers;
    gate_ = gate;
  }
  FromTransport Heartbeat(absl::Duration now) {
    FromTransport m;
    transport::v1::Heartbeat* heartbeat = m.mutable_heartbeat();
    absl::MutexLock lock(&mu_);
    if (probers_ != nullptr) heartbeat->set_stalled(probers_->AnyStalled(now));
    if (gate_ != nullptr) {
      heartbeat->set_bandwidth_transfer_nanos(absl::ToInt64Nanoseconds(gate_->transfer_time()));
    }
    return m;
  }

 private:
  absl::Mutex mu_;
  ProberSet* probers_ ABSL_GUARDED_BY(mu_) = nullptr;
  const BandwidthGate* gate_ ABSL_GUARDED_BY(mu_) = nullptr;
};

// Ends the transport process. Threads may be inside Gloo calls or sending a
// heartbeat: exit around them rather than tear down what they use.
[[noreturn]] void ExitTransport(int code) {
  std::fflush(stderr);
  std::_Exit(code);
}

transport::v1::OpenResult OpenResponder(ResponderRegistry& registry,
                                        const transport::v1::OpenResponder& open) {
  transport::v1::OpenResult result;
  result.set_id(open.id());
  absl::StatusOr<v1::OpenProbePairResponse> opened = registry.Open(open.request());
  if (opened.ok()) {
    *result.mutable_response() = *std::move(opened);
  } else {
    result.set_code(static_cast<int>(opened.status().code()));
    result.set_message(std::string(opened.status().message()));
  }
  return result;
}

}  // namespace

int RunTransport(const std::string& gloo_address, int fd) {
  // The daemon's death must end us too, even if it could not tell us.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() == 1) return 0;
  // The daemon's thread that started us had its signals blocked.
  sigset_t none;
  sigemptyset(&none);
  pthread_sigmask(SIG_SETMASK, &none, nullptr);
  // Both outlive every thread: the process ends with _Exit, never returns.
  auto* channel = new MessageChannel(fd);
  auto* liveness = new Liveness;
  const Clock* clock = RealClock::Get();
  // Heartbeats from the start: parsing a large config takes a while, and the
  // daemon kills a transport that stays silent.
  std::thread([channel, liveness, clock] {
    while (channel->Send(liveness->Heartbeat(clock->Monotonic()))) {
      absl::SleepFor(absl::Seconds(1));
    }
  }).detach();

  ToTransport message;
  if (channel->Receive(&message) != MessageChannel::Received::kMessage) ExitTransport(0);
  absl::StatusOr<Config> config = ReadConfigure(message);
  if (!config.ok()) {
    GW_LOG(kError, "transport: %s", config.status().message());
    ExitTransport(78);
  }
  absl::StatusOr<std::shared_ptr<gloo::transport::Device>> created = CreateGlooDevice(gloo_address);
  if (!created.ok()) {
    GW_LOG(kError, "transport: %s", created.status().message());
    ExitTransport(69);
  }
  absl::StatusOr<TlsMaterial> tls = LoadTls(config->tls);
  if (!tls.ok()) {
    GW_LOG(kError, "transport: %s", tls.status().message());
    ExitTransport(78);
  }
  std::shared_ptr<gloo::transport::Device> device = *std::move(created);
  auto* gate = new BandwidthGate(clock, config->schedule.bandwidth_budget);
  auto* registry = new ResponderRegistry(config->node, GLOOWATCH_VERSION, device, gate, clock);
  ProberContext context;
  context.node = config->node;
  context.version = GLOOWATCH_VERSION;
  context.device = device;
  context.local_gloo_is_loopback = IsLoopbackHost(gloo_address);
  context.gate = gate;
  context.clock = clock;
  context.credentials = MakeChannelCredentials(*tls);
  auto* probers = new ProberSet(context, channel);
  probers->Apply(ProbedOnly(*config, message.configure()));
  liveness->Set(probers, gate);

  while (channel->Receive(&message) == MessageChannel::Received::kMessage) {
    if (message.has_configure()) {
      // The daemon validated it; a failure here would be a bug, not input.
      absl::StatusOr<Config> next = ReadConfigure(message);
      if (!next.ok()) {
        GW_LOG(kError, "transport: reload: %s", next.status().message());
        continue;
      }
      registry->Retain(PeerNames(*next));
      gate->SetBudget(next->schedule.bandwidth_budget);
      probers->Apply(ProbedOnly(*next, message.configure()));
      next = Config();
      message.Clear();
      // A reload to a smaller config gives the memory of the larger back.
      malloc_trim(0);
      continue;
    }
    if (!message.has_open()) continue;
    FromTransport reply;
    *reply.mutable_opened() = OpenResponder(*registry, message.open());
    if (!channel->Send(reply)) break;
  }
  // The daemon is gone or stopping us.
  ExitTransport(0);
}

// --- TransportSupervisor -----------------------------------------------------

TransportSupervisor::TransportSupervisor(Options options, const Clock* clock)
    : options_(std::move(options)),
      clock_(clock),
      admission_(options_.max_opens_in_flight, options_.max_opens_per_peer) {
  configure_.mutable_configure()->set_yaml(options_.config.yaml);
  configure_.mutable_configure()->set_source(options_.config.source);
  for (const std::string& peer : options_.probe_peers) {
    configure_.mutable_configure()->add_probe_peers(peer);
  }
  last_progress_ = clock_->Monotonic();
}

void TransportSupervisor::Reconfigure(const Config& config,
                                      const std::vector<std::string>& probe_peers) {
  absl::MutexLock lock(&mu_);
  transport::v1::Configure* configure = configure_.mutable_configure();
  configure->set_yaml(config.yaml);
  configure->set_source(config.source);
  configure->clear_probe_peers();
  for (const std::string& peer : probe_peers) configure->add_probe_peers(peer);
  // Only the latest config matters: one not yet sent is replaced.
  configure_unsent_ = true;
}

TransportSupervisor::~TransportSupervisor() { Stop(); }

void TransportSupervisor::Start() {
  thread_ = std::thread([this] { Supervise(); });
}

void TransportSupervisor::Stop() {
  std::vector<Pending> waiting;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    waiting = TakePending();
    if (channel_) channel_->Shutdown();
  }
  Fail(std::move(waiting), absl::UnavailableError("this node is shutting down"));
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

pid_t TransportSupervisor::Spawn(int fd) {
  // Everything the child needs is built before fork: after it, only
  // async-signal-safe calls.
  std::vector<std::string> args = {options_.executable, "--transport_fd=3",
                                   absl::StrCat("--gloo_address=", options_.gloo_address),
                                   absl::StrCat("--log_level=", options_.log_level)};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    if (fd == 3) {
      fcntl(3, F_SETFD, 0);  // dup2 onto itself would keep close-on-exec
    } else {
      dup2(fd, 3);
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

void TransportSupervisor::Supervise() {
  Backoff backoff(options_.restart_initial, options_.restart_max);
  while (true) {
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) {
      GW_LOG(kError, "transport: socketpair: %s", strerror(errno));
      absl::SleepFor(backoff.Next());
      continue;
    }
    const pid_t pid = Spawn(fds[1]);
    close(fds[1]);
    const absl::Duration started = clock_->Monotonic();
    const std::string why = RunOnce(pid, std::make_shared<MessageChannel>(fds[0]));
    if (why.empty()) return;
    GW_LOG(kError, "%s; restarting it", why);
    {
      absl::MutexLock lock(&mu_);
      ++restarts_;
    }
    if (options_.on_exit) options_.on_exit(why);
    // A transport that ran a good while before dying starts the backoff over.
    if (clock_->Monotonic() - started > absl::Minutes(1)) backoff.Reset();
    const absl::Duration until = clock_->Monotonic() + backoff.Next();
    absl::MutexLock lock(&mu_);
    // In steps, so that Healthy() sees supervision going on.
    while (!stopping_ && clock_->Monotonic() < until) {
      last_progress_ = clock_->Monotonic();
      mu_.AwaitWithTimeout(absl::Condition(&stopping_),
                           std::min(absl::Seconds(1), until - clock_->Monotonic()));
    }
    if (stopping_) return;
  }
}

std::string TransportSupervisor::RunOnce(pid_t pid,
                                         const std::shared_ptr<MessageChannel>& channel) {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) channel->Shutdown();
    channel_ = channel;
    pid_ = pid;
    last_heartbeat_ = clock_->Monotonic();
    stalled_ = false;
    reported_transfer_nanos_ = 0;
    configure_unsent_ = true;  // the first message of every transport
  }
  std::thread writer([this, channel] { Write(channel); });
  std::string hung;
  FromTransport message;
  absl::Duration tick = absl::Seconds(1);
  while (true) {
    const MessageChannel::Received received = channel->Receive(&message, tick);
    if (received == MessageChannel::Received::kClosed) break;
    if (received == MessageChannel::Received::kMessage) Dispatch(message);
    std::vector<Pending> expired;
    {
      absl::MutexLock lock(&mu_);
      const absl::Duration now = clock_->Monotonic();
      last_progress_ = now;
      if (now - last_heartbeat_ > options_.heartbeat_timeout) {
        hung =
            absl::StrCat("probe transport process ", pid, " stopped answering (no heartbeat for ",
                         absl::FormatDuration(absl::Trunc(now - last_heartbeat_, absl::Seconds(1))),
                         "); killed it");
        break;
      }
      expired = TakeExpired();
      // While opens wait, wake often enough to keep their deadline to a
      // tenth of open_timeout.
      tick = pending_.empty() ? absl::Seconds(1)
                              : std::min(absl::Seconds(1), options_.open_timeout / 10);
    }
    Fail(std::move(expired), absl::DeadlineExceededError("probe transport did not answer in time"));
  }
  // The transport ended, is stopped or hung: nothing it had open stays.
  bool stopping;
  std::vector<Pending> waiting;
  {
    absl::MutexLock lock(&mu_);
    channel_.reset();
    pid_ = -1;
    stopping = stopping_;
    waiting = TakePending();
  }
  Fail(std::move(waiting), absl::UnavailableError(stopping ? "this node is shutting down"
                                                           : "probe transport restarting; retry"));
  channel->Shutdown();  // wakes the writer if it is blocked in send
  int status = 0;
  if (pid > 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  writer.join();
  if (stopping) return "";
  if (!hung.empty()) return hung;
  return absl::StrCat("probe transport process ", pid, " ", DescribeExit(status));
}

void TransportSupervisor::Write(const std::shared_ptr<MessageChannel>& channel) {
  while (true) {
    ToTransport message;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return channel_ != channel || configure_unsent_ || !outbox_.empty();
      };
      mu_.Await(absl::Condition(&ready));
      if (channel_ != channel) return;
      if (configure_unsent_) {
        message = configure_;
        configure_unsent_ = false;
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
        Apply(message.peer(), *observer);
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

pid_t TransportSupervisor::pid() const {
  absl::MutexLock lock(&mu_);
  return pid_;
}

}  // namespace gloowatch
