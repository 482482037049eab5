#include "daemon/daemon.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "common/net.h"
#include "common/proto_time.h"
#include "common/tls.h"
#include "common/user_text.h"
#include "common/version.h"
#include "daemon/metrics/job_link_series.h"
#include "daemon/peers/peer_series.h"
#include "daemon/supervisor/transport_supervisor.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/resource_quota.h"

namespace gloowatch {
namespace {

// A job that stops reporting for this long is dropped from the metrics, and
// at most this many (job, rank) series exist, so a misbehaving client cannot
// grow the exported series without bound.
constexpr absl::Duration kTrainingSeriesExpiry = absl::Minutes(10);
constexpr size_t kMaxTrainingSeries = 256;
// How often the training ranks' sockets are read (docs/performance.md: a
// 64-rank job's costs well under 0.2% of a core at this interval).
constexpr absl::Duration kJobSocketsInterval = absl::Seconds(5);
// Threads of gRPC's sync server at most. Our services use the callback API
// and hold no thread while they wait; this caps whatever still runs on the
// sync path (gRPC's own health service).
constexpr int kMaxRpcThreads = 128;

bool AnyPeerRemote(const Config& config) {
  for (const PeerConfig& peer : config.peers) {
    if (!IsLoopbackHost(peer.grpc.host)) return true;
  }
  return false;
}

// The thresholds as exported on /metrics (gloowatch_threshold_*), so a client
// that reads Prometheus judges links as GetStatus readers do.
v1::Thresholds ThresholdsProto(const Thresholds& t) {
  v1::Thresholds p;
  p.set_latency_seconds(absl::ToDoubleSeconds(t.latency));
  p.set_bandwidth_link_ratio(t.bandwidth_link_ratio);
  p.set_clock_offset_seconds(absl::ToDoubleSeconds(t.clock_offset));
  p.set_failure_window_seconds(absl::ToDoubleSeconds(t.failure_window));
  p.set_communication_share(t.communication_share);
  p.set_scheduling_delay_seconds(absl::ToDoubleSeconds(t.scheduling_delay));
  p.set_cpu_steal_ratio(t.cpu_steal_ratio);
  return p;
}

}  // namespace

Daemon::Daemon(Config config, const Clock* clock)
    : config_(std::move(config)),
      clock_(clock),
      started_at_(clock->Now()),
      host_load_(std::make_shared<HostLoad>("/proc", getpid(), clock)) {
  host_load_->SetStarvedThreshold(config_.thresholds.scheduling_delay);
}

Daemon::~Daemon() {
  Shutdown(absl::Seconds(1));
  // The scrape server renders metrics_ and probed_ (the peer series) on its
  // thread: it stops before the members go.
  scrape_server_.reset();
}

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Start(Config config, const Clock* clock,
                                                      std::shared_ptr<TransportLauncher> launcher) {
  std::unique_ptr<Daemon> d(new Daemon(std::move(config), clock));
  const Config c = d->config_;  // before any other thread runs
  if (absl::Status s = d->ChooseGlooEndpoint(c); !s.ok()) return s;
  d->MakeTraining(c);  // before /metrics, whose job link series read it
  if (absl::Status s = d->ServeMetrics(c); !s.ok()) return s;
  const std::vector<std::string> probe_peers = d->SelectFirstPeers(c);
  d->MakeServices(c, std::move(launcher), probe_peers);
  absl::StatusOr<TlsMaterial> tls = LoadTls(c.tls);
  if (!tls.ok()) return tls.status();
  if (absl::Status s = d->ServeGrpc(c, *tls); !s.ok()) return s;

  d->transport_->Start();
  // Fail at start, with the reason, rather than in a restart loop of the
  // transport process.
  if (absl::Status started = d->transport_->AwaitStarted(absl::Seconds(30)); !started.ok()) {
    return started;
  }
  return d;
}

absl::Status Daemon::ChooseGlooEndpoint(const Config& c) {
  EndpointRequest request;
  request.config_address = c.gloo.address;
  request.config_interface = c.gloo.interface;
  if (const char* env = std::getenv("GLOO_SOCKET_IFNAME"); env != nullptr && *env != '\0') {
    request.env_gloo_socket_ifname = env;
  }
  request.peers_are_remote = AnyPeerRemote(c);
  request.link_speed_override = c.gloo.link_speed_bytes_per_second;
  auto endpoint = ResolveGlooEndpoint(request, RealSystem());
  if (!endpoint.ok()) return endpoint.status();
  endpoint_ = *std::move(endpoint);
  if (!endpoint_.warning.empty()) GW_LOG(kWarning, "gloo: %s", endpoint_.warning);
  GW_LOG(kInfo, "gloo: using %s (interface %s, chosen by %s)", endpoint_.address,
         endpoint_.interface.empty() ? "?" : endpoint_.interface, endpoint_.source);
  if (auto range = ReadEphemeralPortRange(RealSystem()); range.ok()) ephemeral_ports_ = *range;
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) == 0) hostname_ = host;
  return absl::OkStatus();
}

void Daemon::MakeTraining(const Config& c) {
  socket_table_ = NewSockDiagSocketTable();
  job_sockets_ = std::make_unique<JobSockets>(
      clock_, socket_table_.get(),
      std::vector<uint16_t>{c.grpc_listen.port, c.metrics_listen.port});
  training_ =
      std::make_unique<TrainingReports>(clock_, kTrainingSeriesExpiry, kMaxTrainingSeries,
                                        absl::Minutes(5), absl::Minutes(1), job_sockets_.get());
}

absl::Status Daemon::ServeMetrics(const Config& c) {
  metrics_ = std::make_unique<Metrics>(
      Metrics::Identity{c.node, GLOOWATCH_VERSION, GLOOWATCH_GLOO_VERSION, endpoint_.interface,
                        endpoint_.link_speed_bytes_per_second, c.group, c.labels});
  metrics_->SetThresholds(ThresholdsProto(c.thresholds));
  metrics_->AddCollectable(std::make_shared<HostLoadCollector>(host_load_, c.node));
  metrics_->AddCollectable(
      std::make_shared<JobLinkSeries>(c.node, [this] { return training_->Snapshot(); }));
  metrics_->AddCollectable(std::make_shared<PeerSeries>(c.node, [this] {
    std::vector<std::shared_ptr<const PeerTracker>> trackers;
    absl::MutexLock lock(&mu_);
    for (const Probed& probed : probed_) trackers.push_back(probed.tracker);
    return trackers;
  }));
  absl::StatusOr<ScrapeServer::Options> options = ScrapeServer::OptionsFor(c.metrics_web);
  if (!options.ok()) return options.status();
  absl::StatusOr<std::unique_ptr<ScrapeServer>> server = ScrapeServer::Start(
      c.metrics_listen.ToString(), [this] { return metrics_->Render(); }, *std::move(options));
  if (!server.ok()) return server.status();
  scrape_server_ = *std::move(server);
  return absl::OkStatus();
}

void Daemon::ProbeLink(const v1::ProbeLinkRequest& request, StatusService::ProbeLinkDone done) {
  absl::Duration timeout;
  {
    absl::MutexLock lock(&mu_);
    const bool known = std::any_of(config_.peers.begin(), config_.peers.end(),
                                   [&](const PeerConfig& p) { return p.name == request.peer(); });
    if (!known) {
      done(absl::NotFoundError(
          absl::StrCat(Quote(request.peer()), " is not a peer of ", config_.node)));
      return;
    }
    // Its steps are bounded as a prober's: the connect and the pings by a
    // few Gloo timeouts, a transfer by one per message each way; and each
    // transfer waits for the bandwidth gate 30 s at most
    // (kProbeLinkMaxGateWait).
    const uint64_t messages =
        request.bandwidth() ? 2 * (config_.probe.bandwidth_bytes /
                                   std::max<uint64_t>(config_.probe.bandwidth_message_bytes, 1))
                            : 0;
    timeout = (6 + static_cast<int64_t>(messages)) * config_.gloo.timeout +
              (request.bandwidth() ? absl::Seconds(60) : absl::ZeroDuration()) + absl::Seconds(2);
  }
  if (absl::Status s = probe_link_admission_->Admit(request); !s.ok()) {
    done(s);
    return;
  }
  transport::v1::PreflightStep step;
  *step.mutable_probe_link() = request;
  transport_->StartPreflight(
      std::move(step), timeout,
      [this, done = std::move(done)](absl::StatusOr<transport::v1::PreflightReply> r) {
        probe_link_admission_->Done();
        if (!r.ok()) return done(r.status());
        if (r->code() != 0) {
          return done(absl::Status(static_cast<absl::StatusCode>(r->code()), r->message()));
        }
        done(r->probe_link());
      });
}

std::vector<std::string> Daemon::SelectFirstPeers(const Config& c) {
  absl::MutexLock lock(&mu_);
  topology_ = std::make_unique<Topology>(Topology::FromConfig(c));
  std::vector<std::string> probe_peers = Select(CurrentEpoch());
  if (topology_->sampled()) {
    GW_LOG(kInfo, "topology: sampled mesh of %d nodes in %d groups; probing %d peers (epoch %d)",
           topology_->size(), topology_->group_count(), probe_peers.size(), epoch_);
  }
  return probe_peers;
}

void Daemon::MakeServices(const Config& c, std::shared_ptr<TransportLauncher> launcher,
                          const std::vector<std::string>& probe_peers) {
  status_service_ = std::make_unique<StatusService>(
      [this] { return Status(); },
      [this](const v1::ReportStepRequest& r, const std::string& client) {
        return ReportStep(r, client);
      },
      [this](const v1::CollectiveReport& r, const std::string& client) {
        return ReportCollective(r, client);
      },
      [this](const std::string& peer) { return report_admission_->Admit(peer); },
      [this](const v1::ProbeLinkRequest& r, StatusService::ProbeLinkDone done) {
        ProbeLink(r, std::move(done));
      });
  probe_link_admission_ = std::make_unique<ProbeLinkAdmission>(clock_);
  TransportSupervisor::Options transport;
  transport.launcher = std::move(launcher);
  transport.config = c;
  transport.gloo_address = endpoint_.address;
  transport.probe_peers = probe_peers;
  transport.observer_for = [this](const std::string& peer) -> std::shared_ptr<ProbeObserver> {
    return FindTracker(peer);
  };
  transport.on_exit = [this](const std::string& why) {
    metrics_->CountTransportRestart();
    absl::MutexLock lock(&mu_);
    for (auto& probed : probed_) probed.tracker->RecordFailure(v1::FAILURE_REASON_OTHER, why);
  };
  transport.on_pid = [this](pid_t pid) {
    metrics_->SetTransportPid(pid);
    host_load_->SetTransportPid(pid);
  };
  transport.on_bandwidth_transfer = [this](absl::Duration took) {
    metrics_->CountBandwidthTransferTime(absl::ToDoubleSeconds(took));
  };
  transport_ = std::make_unique<TransportSupervisor>(std::move(transport), clock_);
  // Every configured peer may open pairs to us; we probe the ones the
  // topology selects.
  std::set<std::string> peer_names;
  for (const PeerConfig& peer : c.peers) peer_names.insert(peer.name);
  peer_service_ =
      std::make_unique<PeerService>(c.node, GLOOWATCH_VERSION, peer_names, transport_.get());
  preflight_service_ = std::make_unique<PreflightService>(c.node, &RealSystem(), transport_.get());
}

absl::Status Daemon::ServeGrpc(const Config& c, const TlsMaterial& tls) {
  report_admission_ = std::make_unique<ReportAdmission>(&RealSystem(), clock_, tls.enabled);
  if (!tls.enabled) {
    GW_LOG(kWarning,
           "TLS is NOT configured: anyone who can reach %s can read this node's status and "
           "open probe pairs as one of its peers; set tls.ca, tls.cert and tls.key",
           c.grpc_listen.ToString());
  }
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int selected_port = 0;
  builder.AddListeningPort(c.grpc_listen.ToString(), MakeServerCredentials(tls), &selected_port);
  builder.RegisterService(status_service_.get());
  builder.RegisterService(peer_service_.get());
  builder.RegisterService(preflight_service_.get());
  // Without SO_REUSEPORT a second daemon on the same port fails to bind
  // instead of silently sharing it.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  grpc::ResourceQuota quota("gloowatchd");
  quota.SetMaxThreads(kMaxRpcThreads);
  builder.SetResourceQuota(quota);
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || selected_port == 0) {
    return absl::UnavailableError(absl::StrCat(
        "cannot listen for gRPC on ", c.grpc_listen.ToString(), " (is the port already in use?)"));
  }
  GW_LOG(kInfo, "node %s: gRPC on %s, metrics on %s, %d peers", c.node, c.grpc_listen.ToString(),
         c.metrics_listen.ToString(), c.peers.size());
  return absl::OkStatus();
}

std::shared_ptr<PeerTracker> Daemon::MakeTracker(const PeerConfig& peer) const {
  return std::make_shared<PeerTracker>(peer, config_.probe.latency_window,
                                       config_.thresholds.failure_window,
                                       endpoint_.link_speed_bytes_per_second, clock_);
}

std::shared_ptr<PeerTracker> Daemon::FindTracker(const std::string& peer) const {
  absl::MutexLock lock(&mu_);
  for (const auto& probed : probed_) {
    if (probed.tracker->peer().name == peer) return probed.tracker;
  }
  return nullptr;
}

uint64_t Daemon::CurrentEpoch() const {
  return SampleEpoch(clock_->Now(), config_.topology.sample_rotation);
}

std::vector<std::string> Daemon::Select(uint64_t epoch) {
  absl::flat_hash_map<std::string, Selection> chosen;
  for (const ProbeTarget& t : topology_->Select(topology_->IndexOf(config_.node), epoch)) {
    chosen.emplace(topology_->node(t.index).name, t.selection);
  }
  absl::flat_hash_map<std::string, std::shared_ptr<PeerTracker>> running;
  for (Probed& p : probed_) running.emplace(p.tracker->peer().name, std::move(p.tracker));
  std::vector<Probed> next;
  std::vector<std::string> names;
  for (const PeerConfig& peer : config_.peers) {
    auto it = chosen.find(peer.name);
    if (it == chosen.end()) continue;
    // Trackers of peers that stay keep their figures (and their series).
    auto kept = running.find(peer.name);
    if (kept != running.end() && kept->second->peer().grpc.ToString() == peer.grpc.ToString()) {
      next.push_back({std::move(kept->second), it->second});
    } else {
      next.push_back({MakeTracker(peer), it->second});
    }
    names.push_back(peer.name);
  }
  probed_ = std::move(next);  // the trackers left in `running` go; /metrics reads probed_
  epoch_ = epoch;
  return names;
}

absl::Status Daemon::Reload(Config next) {
  absl::MutexLock select(&select_mu_);
  std::set<std::string> names;
  std::vector<std::string> probe_peers;
  {
    absl::MutexLock lock(&mu_);
    const Config& now = config_;
    std::vector<std::string> restart_only;
    if (next.node != now.node) restart_only.push_back("node");
    if (next.grpc_listen.ToString() != now.grpc_listen.ToString()) {
      restart_only.push_back("grpc_listen");
    }
    if (next.metrics_listen.ToString() != now.metrics_listen.ToString()) {
      restart_only.push_back("metrics_listen");
    }
    if (next.metrics_web.Tied() != now.metrics_web.Tied()) restart_only.push_back("metrics_web");
    if (next.gloo.address != now.gloo.address || next.gloo.interface != now.gloo.interface ||
        next.gloo.link_speed_bytes_per_second != now.gloo.link_speed_bytes_per_second) {
      restart_only.push_back("gloo.address/interface/link_speed");
    }
    if (next.probe.latency_window != now.probe.latency_window ||
        next.thresholds.failure_window != now.thresholds.failure_window) {
      restart_only.push_back("probe.latency_window/thresholds.failure_window");
    }
    if (!restart_only.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat(next.source, ": changing ", absl::StrJoin(restart_only, ", "),
                       " needs a restart; keeping the running config"));
    }
    config_ = next;
    metrics_->SetThresholds(ThresholdsProto(next.thresholds));
    host_load_->SetStarvedThreshold(next.thresholds.scheduling_delay);
    metrics_->SetPlacement(next.group, next.labels);
    for (const PeerConfig& peer : next.peers) names.insert(peer.name);
    topology_ = std::make_unique<Topology>(Topology::FromConfig(next));
    probe_peers = Select(CurrentEpoch());
  }
  peer_service_->SetAllowedPeers(names);
  transport_->Reconfigure(next, probe_peers);
  GW_LOG(kInfo, "reloaded %s: %d peers, probing %d", next.source, next.peers.size(),
         probe_peers.size());
  // A reload to a smaller config gives the memory of the larger back.
  next = Config();
  malloc_trim(0);
  return absl::OkStatus();
}

void Daemon::Shutdown(absl::Duration grace) {
  if (shut_down_) return;
  shut_down_ = true;
  // The transport first: that fails the OpenProbePair calls waiting for it,
  // so the server's grace is not spent on them.
  if (transport_) transport_->Stop();
  if (server_) server_->Shutdown(absl::ToChronoTime(absl::Now() + grace));
}

absl::Status Daemon::ReportStep(const v1::ReportStepRequest& request, const std::string& client) {
  std::optional<TrainingReports::Key> evicted;
  if (absl::Status s = training_->Report(request, &evicted, client); !s.ok()) return s;
  if (evicted) metrics_->RemoveTrainingSeries(evicted->first, evicted->second);
  metrics_->RecordTrainingStep(request.job(), request.rank(), request.step_seconds(),
                               request.communication_seconds());
  return absl::OkStatus();
}

absl::Status Daemon::ReportCollective(const v1::CollectiveReport& report,
                                      const std::string& client) {
  std::optional<TrainingReports::Key> evicted;
  if (absl::Status s = training_->ReportCollective(report, &evicted, client); !s.ok()) return s;
  if (evicted) metrics_->RemoveTrainingSeries(evicted->first, evicted->second);
  return absl::OkStatus();
}

void Daemon::Tick() {
  // Through the transport's replies, the peers see this daemon is alive: a
  // daemon whose main loop is stuck (or that is stopped) stops telling them.
  transport_->TellAlive();
  host_load_->Sample();
  // The ranks' own sockets, every few seconds: one dump of the socket table.
  if (const absl::Duration at = clock_->Monotonic(); at >= job_sockets_read_at_) {
    job_sockets_read_at_ = at + kJobSocketsInterval;
    if (absl::Status s = job_sockets_->Read(training_->WantedSockets());
        !s.ok() && !job_sockets_error_logged_) {
      job_sockets_error_logged_ = true;
      GW_LOG(kWarning, "training ranks' sockets not read: %s", s.message());
    }
  }
  for (const TrainingReports::Key& key : training_->Expire()) {
    metrics_->RemoveTrainingSeries(key.first, key.second);
  }
  ExportTrainingState();
  absl::MutexLock select(&select_mu_);
  Config config;
  std::vector<std::string> probe_peers;
  uint64_t epoch;
  {
    absl::MutexLock lock(&mu_);
    if (!topology_->sampled()) return;
    epoch = CurrentEpoch();
    if (epoch == epoch_) return;
    probe_peers = Select(epoch);
    config = config_;
  }
  GW_LOG(kInfo, "topology: epoch %d, probing %d peers", epoch, probe_peers.size());
  transport_->Reconfigure(config, probe_peers);
}

void Daemon::ExportTrainingState() {
  // A stopped rank sends nothing: its time inside grows here, not by reports.
  // A rank whose process is gone is in no call: no time inside at all, so
  // no hang alert for a job that was killed. Gauges of series gone since the
  // last tick (expired, evicted) go too.
  std::set<TrainingReports::Key> with_collective, with_process;
  std::set<std::string> ended;
  const absl::Time now = clock_->Now();
  const std::vector<v1::TrainingJobStatus> ranks = training_->Snapshot(/*with_sockets=*/false);
  for (const v1::TrainingJobStatus& t : ranks) {
    const TrainingReports::Key key(t.job(), t.rank());
    if (!t.process().empty()) {
      metrics_->SetTrainingProcessState(t.job(), t.rank(), t.process());
      with_process.insert(key);
    }
    if (!t.has_collective()) continue;
    metrics_->SetTrainingCollective(
        t.job(), t.rank(),
        t.process() == "gone" ? std::nullopt
                              : std::optional<double>(t.collective().inside_seconds()),
        t.collective().seq(),
        std::max(0.0, absl::ToDoubleSeconds(now - FromProtoTimestamp(t.last_report()))));
    with_collective.insert(key);
  }
  for (const v1::TrainingJobSummary& job : SummarizeTrainingJobs(ranks)) {
    if (job.ended_how().empty()) continue;
    metrics_->SetTrainingJobEnded(job.job(), job.ended_how());
    ended.insert(job.job());
  }
  for (const TrainingReports::Key& key : collective_series_) {
    if (!with_collective.count(key)) metrics_->RemoveTrainingCollective(key.first, key.second);
  }
  for (const TrainingReports::Key& key : process_series_) {
    if (!with_process.count(key)) metrics_->SetTrainingProcessState(key.first, key.second, "");
  }
  for (const std::string& job : ended_series_) {
    if (!ended.count(job)) metrics_->SetTrainingJobEnded(job, "");
  }
  collective_series_ = std::move(with_collective);
  process_series_ = std::move(with_process);
  ended_series_ = std::move(ended);
}

v1::NodeStatus Daemon::Status() const {
  absl::MutexLock lock(&mu_);
  v1::NodeStatus s;
  s.set_node(config_.node);
  s.set_version(GLOOWATCH_VERSION);
  s.set_gloo_version(GLOOWATCH_GLOO_VERSION);
  s.set_hostname(hostname_);
  *s.mutable_gloo() = GlooEndpointProto(endpoint_);
  *s.mutable_started_at() = ToProtoTimestamp(started_at_);
  *s.mutable_now() = ToProtoTimestamp(clock_->Now());
  for (const Probed& probed : probed_) {
    v1::PeerStatus* peer = s.add_peers();
    *peer = probed.tracker->Snapshot().status;
    peer->set_selection(std::string(SelectionName(probed.selection)));
    if (const size_t at = topology_->IndexOf(peer->name()); at < topology_->size()) {
      peer->set_group(topology_->node(at).group);
    }
  }
  // The labels of the live config's entries (a tracker keeps the entry it was
  // made with, and a reload may change them): one pass over the config.
  absl::flat_hash_map<absl::string_view, v1::PeerStatus*> by_name;
  for (v1::PeerStatus& peer : *s.mutable_peers()) by_name[peer.name()] = &peer;
  for (const PeerConfig& entry : config_.peers) {
    if (entry.labels.empty()) continue;
    if (auto it = by_name.find(entry.name); it != by_name.end()) {
      it->second->mutable_labels()->insert(entry.labels.begin(), entry.labels.end());
    }
  }
  v1::Topology* topology = s.mutable_topology();
  topology->set_mode(topology_->sampled() ? "sampled" : "full_mesh");
  topology->set_cluster_nodes(topology_->size());
  topology->set_probed_peers(probed_.size());
  topology->set_group(config_.group);
  s.mutable_labels()->insert(config_.labels.begin(), config_.labels.end());
  if (topology_->sampled()) topology->set_sample_epoch(epoch_);
  *s.mutable_thresholds() = ThresholdsProto(config_.thresholds);
  *s.mutable_host_load() = host_load_->Figures();
  const TransportSupervisor::State transport = transport_->state();
  v1::TransportStatus* t = s.mutable_transport();
  if (transport.started_at) *t->mutable_started_at() = ToProtoTimestamp(*transport.started_at);
  t->set_restarts(transport.restarts);
  t->set_last_exit(transport.last_exit);
  if (transport.last_exit_time) {
    *t->mutable_last_exit_time() = ToProtoTimestamp(*transport.last_exit_time);
  }
  std::vector<v1::TrainingJobStatus> ranks = training_->Snapshot();
  for (v1::TrainingJobSummary& job : SummarizeTrainingJobs(ranks)) {
    *s.add_training_jobs() = std::move(job);
  }
  for (v1::TrainingJobStatus& rank : ranks) *s.add_training() = std::move(rank);
  s.set_ephemeral_port_low(ephemeral_ports_.first);
  s.set_ephemeral_port_high(ephemeral_ports_.second);
  return s;
}

bool Daemon::Healthy() const { return transport_->Healthy(); }

}  // namespace gloowatch
