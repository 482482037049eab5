// In-process cluster fixture, after Gloo's BaseTest::spawn: N nodes as
// objects in one test process, sharing one SimulatedClock. Each node has a
// real Gloo device on loopback, a BandwidthGate, a ResponderRegistry and the
// PeerService answering OpenProbePair on its own loopback gRPC port; probers
// between nodes are real PeerProbers over real Gloo pairs. Nothing is mocked:
// only time is simulated, so schedules and backoff are asserted exactly and
// no test sleeps.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "channel/probe_observer.h"
#include "common/config.h"
#include "daemon/api/peer_service.h"
#include "daemon/daemon.h"
#include "grpcpp/grpcpp.h"
#include "tests/inprocess/thread_launcher.h"
#include "tests/support/simulated_clock.h"
#include "transport/peer_prober.h"
#include "transport/probe_link.h"
#include "transport/responder_registry.h"

namespace gloowatch::inprocess {

// Real time a test gives other threads to get somewhere; never slept.
inline constexpr absl::Duration kRealTimeout = absl::Seconds(20);

// What a prober reported, for asserts; thread-safe.
class RecordingObserver final : public ProbeObserver {
 public:
  void SetConnecting() override {}
  void SetUp(const std::string& gloo_address, const std::string& peer_version) override;
  void RecordFailure(v1::FailureReason reason, const std::string& message) override;
  void RecordRtts(const std::vector<absl::Duration>& rtts) override;
  void RecordOffset(const OffsetEstimate& estimate) override;
  void RecordBandwidth(BandwidthDirection direction, const BandwidthSample& sample) override;
  void RecordTcp(const TcpSample& sample) override;

  int ups() const;
  int failures() const;
  int latency_probes() const;
  int skew_probes() const;
  int bandwidth_samples() const;
  // The TCP reads reported, and their segments summed.
  int tcp_reads() const;
  TcpSample tcp_totals() const;
  std::string last_failure() const;
  // Waits in real time, at most kRealTimeout, until `failures() >= n`.
  bool AwaitFailures(int n) const;
  bool AwaitUps(int n) const;

 private:
  mutable absl::Mutex mu_;
  int ups_ ABSL_GUARDED_BY(mu_) = 0;
  int failures_ ABSL_GUARDED_BY(mu_) = 0;
  int latency_probes_ ABSL_GUARDED_BY(mu_) = 0;
  int skew_probes_ ABSL_GUARDED_BY(mu_) = 0;
  int bandwidth_samples_ ABSL_GUARDED_BY(mu_) = 0;
  int tcp_reads_ ABSL_GUARDED_BY(mu_) = 0;
  TcpSample tcp_totals_ ABSL_GUARDED_BY(mu_);
  std::string last_failure_ ABSL_GUARDED_BY(mu_);
};

// A loopback port that refuses connections for as long as this lives (bound,
// never listening): a peer that is down.
class RefusingPort {
 public:
  RefusingPort();
  ~RefusingPort();
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

class InProcessCluster {
 public:
  struct Node {
    std::string name;
    HostPort grpc;
    std::shared_ptr<gloo::transport::Device> device;
    std::unique_ptr<BandwidthGate> gate;
    std::unique_ptr<ResponderRegistry> registry;
    std::unique_ptr<PeerService> service;
    std::unique_ptr<grpc::Server> server;
  };

  // Starts `n` nodes named node-0, node-1, ... that accept pairs from each
  // other.
  static absl::StatusOr<std::unique_ptr<InProcessCluster>> Spawn(int n);
  // Stops every prober, then the responders and servers.
  ~InProcessCluster();

  SimulatedClock& clock() { return clock_; }
  Node& node(int i) { return *nodes_[i]; }
  PeerConfig PeerConfigOf(int i) const;
  // Starts a PeerProber on node `from` toward `peer` with `config` (its
  // schedule, probe and gloo sections), reporting to `observer`, reading its
  // pairs' TCP statistics from `tcp_stats` when given.
  PeerProber& StartProber(int from, const PeerConfig& peer, const Config& config,
                          ProbeObserver* observer, const TcpStatsSource* tcp_stats = nullptr);

 private:
  InProcessCluster() = default;

  SimulatedClock clock_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<PeerProber>> probers_;
};

// Config sized for tests: small probes, a short Gloo timeout.
Config SmallConfig(const std::string& node);

// N whole daemons (Daemon::Start: gRPC API, metrics, trackers, topology,
// transport supervisor) as objects in this test process, sharing one
// SimulatedClock; each supervises its transport, a Transport on a thread of
// this process (ThreadLauncher) on the same clock: real Gloo pairs on
// loopback, real gRPC. Node i is node-i and has every other node as a peer.
class InProcessDaemons {
 public:
  static absl::StatusOr<std::unique_ptr<InProcessDaemons>> Spawn(int n);
  ~InProcessDaemons();

  SimulatedClock& clock() { return clock_; }
  Daemon& daemon(int i) { return *daemons_[i]; }
  // Transport threads running or not yet freed, of every daemon.
  int transports_alive() const { return launcher_->alive(); }
  // Node i's config YAML with `peers` as its peer entries.
  std::string Yaml(int i, const std::vector<PeerConfig>& peers) const;
  PeerConfig PeerConfigOf(int i) const;
  int metrics_port(int i) const { return metrics_ports_[i]; }
  // Waits, at most kRealTimeout of real time, until `holds` is true of
  // daemon i's status (pairs connect and probes run on real sockets, in real
  // time); the last status read. While nothing changes for 200 ms, moves the
  // clock to the next pending deadline: what the daemon waits for may be due
  // on simulated time (the backoff toward a peer that started after it).
  v1::NodeStatus AwaitStatus(int i, const std::function<bool(const v1::NodeStatus&)>& holds);

 private:
  InProcessDaemons() = default;

  SimulatedClock clock_;
  const std::shared_ptr<ThreadLauncher> launcher_ = std::make_shared<ThreadLauncher>(&clock_);
  std::vector<int> grpc_ports_, metrics_ports_;
  std::vector<std::unique_ptr<Daemon>> daemons_;
};

}  // namespace gloowatch::inprocess
