#include "tests/inprocess/inprocess_cluster.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/support/free_port.h"
#include "transport/gloo_boundary.h"

namespace gloowatch::inprocess {

void RecordingObserver::SetUp(const std::string&, const std::string&) {
  absl::MutexLock lock(&mu_);
  ++ups_;
}

void RecordingObserver::RecordFailure(v1::FailureReason, const std::string& message) {
  absl::MutexLock lock(&mu_);
  ++failures_;
  last_failure_ = message;
}

void RecordingObserver::RecordRtts(const std::vector<absl::Duration>&) {
  absl::MutexLock lock(&mu_);
  ++latency_probes_;
}

void RecordingObserver::RecordOffset(const OffsetEstimate&) {
  absl::MutexLock lock(&mu_);
  ++skew_probes_;
}

void RecordingObserver::RecordBandwidth(BandwidthDirection, const BandwidthSample&) {
  absl::MutexLock lock(&mu_);
  ++bandwidth_samples_;
}

void RecordingObserver::RecordTcp(const TcpSample& sample) {
  absl::MutexLock lock(&mu_);
  ++tcp_reads_;
  tcp_totals_.retransmitted_segments += sample.retransmitted_segments;
  tcp_totals_.sent_segments += sample.sent_segments;
}

int RecordingObserver::tcp_reads() const {
  absl::MutexLock lock(&mu_);
  return tcp_reads_;
}

TcpSample RecordingObserver::tcp_totals() const {
  absl::MutexLock lock(&mu_);
  return tcp_totals_;
}

int RecordingObserver::ups() const {
  absl::MutexLock lock(&mu_);
  return ups_;
}

int RecordingObserver::failures() const {
  absl::MutexLock lock(&mu_);
  return failures_;
}

int RecordingObserver::latency_probes() const {
  absl::MutexLock lock(&mu_);
  return latency_probes_;
}

int RecordingObserver::skew_probes() const {
  absl::MutexLock lock(&mu_);
  return skew_probes_;
}

int RecordingObserver::bandwidth_samples() const {
  absl::MutexLock lock(&mu_);
  return bandwidth_samples_;
}

std::string RecordingObserver::last_failure() const {
  absl::MutexLock lock(&mu_);
  return last_failure_;
}

bool RecordingObserver::AwaitFailures(int n) const {
  absl::MutexLock lock(&mu_);
  auto reached = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return failures_ >= n; };
  return mu_.AwaitWithTimeout(absl::Condition(&reached), kRealTimeout);
}

bool RecordingObserver::AwaitUps(int n) const {
  absl::MutexLock lock(&mu_);
  auto reached = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return ups_ >= n; };
  return mu_.AwaitWithTimeout(absl::Condition(&reached), kRealTimeout);
}

RefusingPort::RefusingPort() {
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (fd_ >= 0 && bind(fd_, reinterpret_cast<sockaddr*>(&address), length) == 0 &&
      getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port_ = ntohs(address.sin_port);
  }
}

RefusingPort::~RefusingPort() {
  if (fd_ >= 0) close(fd_);
}

Config SmallConfig(const std::string& node) {
  Config config;
  config.node = node;
  config.gloo.timeout = absl::Seconds(2);
  config.probe.latency_burst = 3;
  config.probe.skew_burst = 4;
  config.probe.bandwidth_bytes = 1 << 20;
  config.probe.bandwidth_message_bytes = 256 << 10;
  return config;
}

absl::StatusOr<std::unique_ptr<InProcessCluster>> InProcessCluster::Spawn(int n) {
  std::unique_ptr<InProcessCluster> cluster(new InProcessCluster());
  std::set<std::string> names;
  for (int i = 0; i < n; ++i) names.insert(absl::StrCat("node-", i));
  for (int i = 0; i < n; ++i) {
    auto node = std::make_unique<Node>();
    node->name = absl::StrCat("node-", i);
    absl::StatusOr<std::shared_ptr<gloo::transport::Device>> device = CreateGlooDevice("127.0.0.1");
    if (!device.ok()) return device.status();
    node->device = *std::move(device);
    node->gate = std::make_unique<BandwidthGate>(&cluster->clock_);
    node->registry = std::make_unique<ResponderRegistry>(node->name, "test", node->device,
                                                         node->gate.get(), &cluster->clock_);
    std::set<std::string> others = names;
    others.erase(node->name);
    node->service =
        std::make_unique<PeerService>(node->name, "test", std::move(others), node->registry.get());
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(node->service.get());
    node->server = builder.BuildAndStart();
    if (node->server == nullptr || port == 0) {
      return absl::UnavailableError(absl::StrCat(node->name, ": no gRPC server on loopback"));
    }
    node->grpc = HostPort{"127.0.0.1", static_cast<uint16_t>(port)};
    cluster->nodes_.push_back(std::move(node));
  }
  return cluster;
}

InProcessCluster::~InProcessCluster() {
  for (auto& prober : probers_) prober->Stop();
  for (auto& prober : probers_) prober->Join(kRealTimeout);
  for (auto& node : nodes_) {
    node->registry->StopAll();
    node->server->Shutdown(std::chrono::system_clock::now());
  }
}

PeerConfig InProcessCluster::PeerConfigOf(int i) const {
  PeerConfig peer;
  peer.name = nodes_[i]->name;
  peer.grpc = nodes_[i]->grpc;
  return peer;
}

PeerProber& InProcessCluster::StartProber(int from, const PeerConfig& peer, const Config& config,
                                          ProbeObserver* observer,
                                          const TcpStatsSource* tcp_stats) {
  Node& node = *nodes_[from];
  ProberContext context;
  context.node = node.name;
  context.version = "test";
  context.device = node.device;
  context.local_gloo_is_loopback = true;
  context.gate = node.gate.get();
  context.clock = &clock_;
  context.tcp_stats = tcp_stats;
  probers_.push_back(std::make_unique<PeerProber>(std::move(context), config, peer, observer));
  probers_.back()->Start();
  return *probers_.back();
}

absl::StatusOr<std::unique_ptr<InProcessDaemons>> InProcessDaemons::Spawn(int n) {
  std::unique_ptr<InProcessDaemons> daemons(new InProcessDaemons());
  for (int i = 0; i < n; ++i) {
    daemons->grpc_ports_.push_back(testing::FreePort());
    daemons->metrics_ports_.push_back(testing::FreePort());
  }
  for (int i = 0; i < n; ++i) {
    std::vector<PeerConfig> peers;
    for (int j = 0; j < n; ++j) {
      if (j != i) peers.push_back(daemons->PeerConfigOf(j));
    }
    absl::StatusOr<Config> config =
        ParseConfig(daemons->Yaml(i, peers), absl::StrCat("node-", i, ".yaml"));
    if (!config.ok()) return config.status();
    absl::StatusOr<std::unique_ptr<Daemon>> daemon =
        Daemon::Start(*std::move(config), &daemons->clock_, daemons->launcher_);
    if (!daemon.ok()) return daemon.status();
    daemons->daemons_.push_back(*std::move(daemon));
  }
  return daemons;
}

InProcessDaemons::~InProcessDaemons() {
  for (auto& daemon : daemons_) daemon->Shutdown(absl::Seconds(1));
}

v1::NodeStatus InProcessDaemons::AwaitStatus(
    int i, const std::function<bool(const v1::NodeStatus&)>& holds) {
  constexpr absl::Duration kQuiet = absl::Milliseconds(200);
  const absl::Time deadline = absl::Now() + kRealTimeout;
  absl::Time advance_at = absl::Now() + kQuiet;
  v1::NodeStatus status = daemons_[i]->Status();
  while (!holds(status) && absl::Now() < deadline) {
    if (absl::Now() >= advance_at) {
      const std::optional<absl::Duration> wake = clock_.AwaitPendingDeadline(absl::ZeroDuration());
      if (wake.has_value()) clock_.AdvanceTo(*wake);
      advance_at = absl::Now() + kQuiet;
    }
    absl::SleepFor(absl::Milliseconds(10));
    status = daemons_[i]->Status();
  }
  return status;
}

PeerConfig InProcessDaemons::PeerConfigOf(int i) const {
  PeerConfig peer;
  peer.name = absl::StrCat("node-", i);
  peer.grpc = HostPort{"127.0.0.1", static_cast<uint16_t>(grpc_ports_[i])};
  return peer;
}

std::string InProcessDaemons::Yaml(int i, const std::vector<PeerConfig>& peers) const {
  std::string yaml = absl::StrCat("node: node-", i, "\ngrpc_listen: 127.0.0.1:", grpc_ports_[i],
                                  "\nmetrics_listen: 127.0.0.1:", metrics_ports_[i],
                                  "\ngloo:\n  address: 127.0.0.1\n  timeout: 2s\n");
  if (peers.empty()) return yaml;
  absl::StrAppend(&yaml, "peers:\n");
  for (const PeerConfig& peer : peers) {
    absl::StrAppend(&yaml, "  - name: ", peer.name, "\n    grpc: ", peer.grpc.ToString(), "\n");
  }
  return yaml;
}

}  // namespace gloowatch::inprocess
