// accuracy_bench's paths: a pair of real gloowatchd ("a" on side 0, "b" on
// side 1) probing each other, built from the test support so the benchmark
// runs the same clusters as the tests: on loopback (127.0.0.1, the root
// namespace), and on two hosts of a NetnsCluster (veth links through a
// bridge namespace; 10.x addresses that exist only inside its namespaces).
// The tools compared with gloowatch run on the same sides of the same path.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/gloowatch.grpc.pb.h"
#include "tests/support/daemon_process.h"
#include "tests/support/free_port.h"
#include "tests/support/metrics_text.h"
#include "tests/support/netns_cluster.h"

namespace gloowatch::bench {

// What one pair of daemons runs with.
struct PairOptions {
  // Config keys besides node, listen addresses, gloo and peers, per side.
  std::string yaml[2];
  // Set in side 0's daemon's environment only (libfaketime).
  std::map<std::string, std::string> env_a;
  // The CPU each side's daemon and its transport run on; -1: not pinned.
  int cpu[2] = {-1, -1};
};

class BenchPath {
 public:
  virtual ~BenchPath() = default;

  virtual std::string label() const = 0;         // "lo", "veth"
  virtual std::string ns(int side) const = 0;    // "" for the root namespace
  virtual std::string ip(int side) const = 0;    // the side's address on the path
  virtual std::string node(int side) const = 0;  // its daemon's node name
  // Ports the reference tools' servers listen on, on side 1.
  virtual int iperf3_port() const = 0;
  virtual int sockperf_port() const = 0;

  // Starts both daemons and waits (at most 20 s) until each sees the other up.
  absl::Status StartPair(const PairOptions& options);
  // SIGTERM to both daemons; SIGKILL to one that does not exit in time.
  virtual void StopPair() = 0;

  virtual absl::StatusOr<std::map<std::string, double>> Metrics(int side) const = 0;
  virtual absl::StatusOr<v1::NodeStatus> Status(int side) const = 0;

  // tbf at `rate` (tc syntax) on both directions of the path; only "veth" has one.
  virtual absl::Status Shape(const std::string& rate);
  virtual void Unshape() {}

  // argv run on a side (in its namespace), killed after `timeout`.
  testing::CommandResult Exec(int side, const std::vector<std::string>& argv,
                              absl::Duration timeout) const;
  // argv started in the background on a side, its output to `log_path`.
  std::unique_ptr<testing::Process> Spawn(int side, const std::vector<std::string>& argv,
                                          const std::string& log_path) const;
  // Waits until TCP `port` listens on a side.
  bool WaitListening(int side, int port, absl::Duration timeout) const;

 protected:
  virtual void StartDaemon(int side, const std::string& yaml,
                           const std::map<std::string, std::string>& env) = 0;
  // The end of the daemon's log, for a pair that did not come up.
  virtual std::string LogTail(int side) const = 0;

 private:
  std::vector<std::string> OnSide(int side, const std::vector<std::string>& argv) const;
  bool SeesPeerUp(int side) const;
};

std::unique_ptr<BenchPath> MakeLoopbackPath();
// Two hosts of a NetnsCluster; needs root (NetnsUnavailableReason says why not).
absl::StatusOr<std::unique_ptr<BenchPath>> MakeVethPath();

// SIGTERM, then SIGKILL if it still runs 3 s later.
void Stop(testing::Process& process);

// Runs `fn` on a thread pinned to `cpu` (-1: not pinned). A process forked
// there inherits the mask, and so do its children and threads.
void OnCpu(int cpu, const std::function<void()>& fn);

}  // namespace gloowatch::bench
