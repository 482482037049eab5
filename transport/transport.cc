#include "transport/transport.h"

#include <malloc.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "channel/peer_events.h"
#include "common/exit_codes.h"
#include "common/log.h"
#include "common/net.h"
#include "common/tls.h"
#include "common/version.h"
#include "gloo/transport/tcp/device.h"
#include "transport/gloo_boundary.h"
#include "transport/peer_prober.h"

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

}  // namespace

// The probers of one transport, changed in place on reload.
class ProberSet {
 public:
  ProberSet(ProberContext context, MessageChannel* channel)
      : context_(std::move(context)), channel_(channel) {}

  // Stops every prober and waits for its thread: each ends within its Gloo
  // timeout (a call running longer is a stuck prober, which the heartbeat
  // reported).
  ~ProberSet() {
    absl::MutexLock lock(&mu_);
    for (auto& [name, entry] : running_) {
      entry.prober->Stop();
      retired_.push_back(std::move(entry));
    }
    running_.clear();
    for (Entry& entry : retired_) entry.prober->Join(absl::InfiniteDuration());
  }

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

namespace {

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

// The daemon's start-up check: how this transport started (OK, or why not).
FromTransport Started(const absl::Status& status) {
  FromTransport started;
  started.mutable_started()->set_code(static_cast<int>(status.code()));
  started.mutable_started()->set_message(std::string(status.message()));
  return started;
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

Transport::Transport(std::string gloo_address, int fd, const Clock* clock)
    : gloo_address_(std::move(gloo_address)), clock_(clock), channel_(fd) {}

Transport::~Transport() {
  Stop();
  if (heartbeat_.joinable()) heartbeat_.join();
  // The members then go in reverse order: the meshes, probers and responders
  // wait for their threads, which use the channel, the gate and the device.
}

void Transport::Stop() {
  absl::MutexLock lock(&mu_);
  stopping_ = true;
  channel_.Shutdown();
}

FromTransport Transport::Heartbeat() {
  FromTransport m;
  transport::v1::Heartbeat* heartbeat = m.mutable_heartbeat();
  absl::MutexLock lock(&mu_);
  if (reported_probers_ != nullptr) {
    heartbeat->set_stalled(reported_probers_->AnyStalled(clock_->Monotonic()));
  }
  if (reported_gate_ != nullptr) {
    heartbeat->set_bandwidth_transfer_nanos(
        absl::ToInt64Nanoseconds(reported_gate_->transfer_time()));
  }
  return m;
}

void Transport::SendHeartbeats() {
  while (channel_.Send(Heartbeat())) {
    absl::MutexLock lock(&mu_);
    // Through the clock, so that simulated time paces a simulated transport.
    if (clock_->AwaitUntil(mu_, absl::Condition(&stopping_),
                           clock_->Monotonic() + absl::Seconds(1))) {
      return;
    }
  }
}

int Transport::FailStart(const absl::Status& why, int exit_code) {
  channel_.Send(Started(why));
  return exit_code;
}

int Transport::Run() {
  heartbeat_ = std::thread([this] { SendHeartbeats(); });

  ToTransport message;
  if (channel_.Receive(&message) != MessageChannel::Received::kMessage) return kExitOk;
  absl::StatusOr<Config> config = ReadConfigure(message);
  if (!config.ok()) return FailStart(config.status(), kExitConfig);
  absl::StatusOr<std::shared_ptr<gloo::transport::Device>> created =
      CreateGlooDevice(gloo_address_);
  if (!created.ok()) return FailStart(created.status(), kExitUnavailable);
  absl::StatusOr<TlsMaterial> tls = LoadTls(config->tls);
  if (!tls.ok()) return FailStart(tls.status(), kExitConfig);
  device_ = *std::move(created);
  gate_ = std::make_unique<BandwidthGate>(clock_, config->schedule.bandwidth_budget);
  tcp_stats_ = NewSockDiagTcpStats();
  registry_ = std::make_unique<ResponderRegistry>(config->node, GLOOWATCH_VERSION, device_,
                                                  gate_.get(), clock_, &liveness_);
  ProberContext context;
  context.node = config->node;
  context.version = GLOOWATCH_VERSION;
  context.device = device_;
  context.local_gloo_is_loopback = IsLoopbackHost(gloo_address_);
  context.gate = gate_.get();
  context.clock = clock_;
  context.credentials = MakeChannelCredentials(*tls);
  context.tcp_stats = tcp_stats_.get();
  probers_ = std::make_unique<ProberSet>(context, &channel_);
  probers_->Apply(ProbedOnly(*config, message.configure()));
  {
    absl::MutexLock lock(&mu_);
    reported_probers_ = probers_.get();
    reported_gate_ = gate_.get();
  }
  // Preflight meshes answer from their own threads: a mesh waiting out the
  // job's timeout never holds up this loop.
  meshes_ =
      std::make_unique<PreflightMeshes>(clock_, [this](const transport::v1::PreflightReply& r) {
        FromTransport reply;
        *reply.mutable_preflight() = r;
        channel_.Send(reply);
      });
  if (!channel_.Send(Started(absl::OkStatus()))) return kExitOk;
  Serve();
  // The daemon is gone or stopping us.
  return kExitOk;
}

void Transport::Serve() {
  ToTransport message;
  while (channel_.Receive(&message) == MessageChannel::Received::kMessage) {
    if (message.has_tick()) {
      liveness_.Heard();
      continue;
    }
    if (message.has_configure()) {
      // The daemon validated it; a failure here would be a bug, not input.
      absl::StatusOr<Config> next = ReadConfigure(message);
      if (!next.ok()) {
        GW_LOG(kError, "transport: reload: %s", next.status().message());
        continue;
      }
      registry_->Retain(PeerNames(*next));
      gate_->SetBudget(next->schedule.bandwidth_budget);
      probers_->Apply(ProbedOnly(*next, message.configure()));
      next = Config();
      message.Clear();
      // A reload to a smaller config gives the memory of the larger back.
      malloc_trim(0);
      continue;
    }
    if (message.has_preflight()) {
      meshes_->Handle(message.preflight());
      continue;
    }
    if (!message.has_open()) continue;
    FromTransport reply;
    *reply.mutable_opened() = OpenResponder(*registry_, message.open());
    if (!channel_.Send(reply)) break;
  }
}

}  // namespace gloowatch
