#include "transport/transport_main.h"

#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstring>
#include <exception>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "channel/message_channel.h"
#include "channel/peer_events.h"
#include "common/exit_codes.h"
#include "common/log.h"
#include "common/net.h"
#include "common/tls.h"
#include "common/version.h"
#include "gloo/transport/tcp/device.h"
#include "transport/peer_prober.h"
#include "transport/preflight_mesh.h"
#include "transport/probe_link.h"
#include "transport/responder_registry.h"
#include "transport/tcp_stats.h"

namespace gloowatch {

using transport::v1::FromTransport;
using transport::v1::ToTransport;

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
  ConfigOptions options;
  options.node = message.configure().node();
  return ParseConfig(message.configure().yaml(), message.configure().source(), options);
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

// The daemon's start-up check: how this process started (OK, or why not).
FromTransport Started(const absl::Status& status) {
  FromTransport started;
  started.mutable_started()->set_code(static_cast<int>(status.code()));
  started.mutable_started()->set_message(std::string(status.message()));
  return started;
}

// Tells the daemon (which logs it) why we cannot start, then exits.
[[noreturn]] void FailStart(MessageChannel& channel, const absl::Status& why, int exit_code) {
  channel.Send(Started(why));
  ExitTransport(exit_code);
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
  if (getppid() == 1) return kExitOk;
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
  if (channel->Receive(&message) != MessageChannel::Received::kMessage) ExitTransport(kExitOk);
  absl::StatusOr<Config> config = ReadConfigure(message);
  if (!config.ok()) FailStart(*channel, config.status(), kExitConfig);
  absl::StatusOr<std::shared_ptr<gloo::transport::Device>> created = CreateGlooDevice(gloo_address);
  if (!created.ok()) FailStart(*channel, created.status(), kExitUnavailable);
  absl::StatusOr<TlsMaterial> tls = LoadTls(config->tls);
  if (!tls.ok()) FailStart(*channel, tls.status(), kExitConfig);
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
  context.tcp_stats = NewSockDiagTcpStats().release();  // lives as long as the probers
  auto* probers = new ProberSet(context, channel);
  probers->Apply(ProbedOnly(*config, message.configure()));
  liveness->Set(probers, gate);
  // Preflight meshes answer from their own threads: a mesh waiting out the
  // job's timeout never holds up this loop.
  auto* meshes = new PreflightMeshes(clock, [channel](const transport::v1::PreflightReply& r) {
    FromTransport reply;
    *reply.mutable_preflight() = r;
    channel->Send(reply);
  });
  if (!channel->Send(Started(absl::OkStatus()))) ExitTransport(kExitOk);

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
    if (message.has_preflight()) {
      meshes->Handle(message.preflight());
      continue;
    }
    if (!message.has_open()) continue;
    FromTransport reply;
    *reply.mutable_opened() = OpenResponder(*registry, message.open());
    if (!channel->Send(reply)) break;
  }
  // The daemon is gone or stopping us.
  ExitTransport(kExitOk);
}

}  // namespace gloowatch
