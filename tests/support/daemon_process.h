// Test support: real gloowatchd processes on loopback, and readers for
// their gRPC status and Prometheus /metrics.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/security/credentials.h"
#include "proto/gloowatch.grpc.pb.h"
#include "tests/support/paths.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait_for.h"

namespace gloowatch::testing {

// A CA and a certificate for 127.0.0.1 signed by it (EC P-256, 2 days),
// written by the openssl CLI into `dir` as <name>-ca.pem, <name>.pem and
// <name>.key.
struct Pki {
  std::string ca, cert, key;
};
absl::StatusOr<Pki> MakePki(const TempDir& dir, const std::string& name);

// A child process, killed with SIGKILL by the destructor if still running.
class Process {
 public:
  // argv may start with a wrapper (ip netns exec, faketime); stdout and
  // stderr go to `log_path`.
  Process(std::vector<std::string> argv, std::string log_path,
          std::map<std::string, std::string> extra_env = {});
  ~Process();
  pid_t pid() const { return pid_; }
  bool running();
  void Signal(int sig);
  // Waits for exit, at most `timeout`; the exit code, or nullopt on timeout
  // (or -signal when killed by a signal).
  std::optional<int> Wait(absl::Duration timeout);
  std::string Log() const;

 private:
  pid_t pid_ = -1;
  std::string log_path_;
  std::optional<int> exit_;
};

// What a process uses now, from /proc (zeros once it is gone).
struct ProcessUsage {
  double rss_mib = 0;
  long fds = 0;
  long threads = 0;
};
ProcessUsage UsageOf(pid_t pid);

// The only child of process `parent` (a daemon's transport), or -1.
pid_t ChildPid(pid_t parent);

// GetStatus on host:port with a deadline (plaintext unless `credentials`).
absl::StatusOr<v1::NodeStatus> GetStatus(
    const std::string& address, absl::Duration deadline = absl::Seconds(2),
    std::shared_ptr<grpc::ChannelCredentials> credentials = nullptr);

// A TCP connection to 127.0.0.1:port, or -1.
int ConnectLoopback(int port);

// The serialized Gloo TCP address (what OpenProbePair carries) of ip:port.
std::string GlooAddressBytes(const char* ip, int port);

// A well-formed OpenProbePair under `from`'s name to daemon `to`, as a
// stranger sends it. Its requester address, 127.255.255.254, sorts above any
// daemon's, so the daemon's pairs wait for a connection (nothing is sent to
// it) until the 2 s Gloo timeout.
v1::OpenProbePairRequest StrangerOpenRequest(const std::string& from, const std::string& to);

// Plain HTTP/1.0 GET on 127.0.0.1:port; the body.
absl::StatusOr<std::string> HttpGet(int port, const std::string& path);

// `s` %-encoded for a URL query (PromQL in /api/v1/query?query=...).
std::string UrlEncode(const std::string& s);

// Config keys for daemons on loopback with short schedules, so a test sees
// every kind of probe within seconds; `link_speed` (e.g. "10Gbps") makes link
// ratios appear.
std::string FastLoopbackYaml(const std::string& link_speed = "");

// A daemon config for node `name` on loopback with fast schedules.
struct NodeSpec {
  std::string name;
  int grpc_port;
  int metrics_port;
};
std::string LoopbackConfig(const NodeSpec& self, const std::vector<NodeSpec>& peers,
                           const std::string& extra_yaml = "");

// How far a daemon has come with one peer, for LoopbackCluster::WaitAllUp.
using PeerCondition = std::function<bool(const v1::PeerStatus&)>;
// The peer is up.
bool PeerUp(const v1::PeerStatus& p);
// ... and has a latency figure above zero.
bool LatencyMeasured(const v1::PeerStatus& p);
// ... and a bandwidth figure both ways and a clock offset.
bool FullyMeasured(const v1::PeerStatus& p);

// Whom each daemon of a LoopbackCluster has as configured peers.
enum class ClusterPeers {
  kFullMesh,  // every other node
  kNone,      // nobody (an empty `peers:`): daemons a preflight connects itself
};

// N daemons on loopback, named node-a .. node-z, then node-26, node-27, ...
class LoopbackCluster {
 public:
  LoopbackCluster(int nodes, const std::string& extra_yaml = "",
                  ClusterPeers peers = ClusterPeers::kFullMesh);
  ~LoopbackCluster();
  void Start(int index);
  void Kill(int index, int sig);
  const NodeSpec& node(int index) const { return nodes_[index]; }
  std::string grpc(int index) const;
  int size() const { return static_cast<int>(nodes_.size()); }
  Process* process(int index) { return processes_[index].get(); }
  std::string config_path(int index) const { return configs_[index]; }
  const TempDir& dir() const { return dir_; }
  // Waits until every started daemon answers (over `credentials` when
  // given) and, in a full mesh, sees every other started one satisfy
  // `ready`; the error names the daemon and what it lacked, or gives its log
  // at once if it exited.
  absl::Status WaitAllUp(absl::Duration timeout, const PeerCondition& ready = PeerUp,
                         std::shared_ptr<grpc::ChannelCredentials> credentials = nullptr) const;

 private:
  TempDir dir_;
  ClusterPeers peers_;
  std::vector<NodeSpec> nodes_;
  std::vector<std::string> configs_;
  std::vector<std::unique_ptr<Process>> processes_;
};

// Peer `peer` as seen in `status`, or nullptr.
const v1::PeerStatus* FindPeer(const v1::NodeStatus& status, const std::string& peer);

}  // namespace gloowatch::testing
