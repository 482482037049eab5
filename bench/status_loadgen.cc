// Serves the real gloowatch.v1.Status API for N simulated nodes from one
// process, so `gloowatch health` can be timed against clusters of hundreds of
// daemons. One gRPC server listens on N ports of 127.0.0.1 (base_port ..
// base_port + N - 1); a call is answered as the node whose port the client
// dialed, read from the call's :authority (ServerContext::
// ExperimentalGetAuthority, which carries the host:port the client's channel
// was created for).
//
// The topology is the product's: a full mesh up to --full_mesh_max nodes,
// above that a bounded, symmetric peer set per node (ring neighbours at +-1
// and +-2, and "sample" peers at +-N/4 and N/2), so every link is reported
// from both ends. Every figure is a fixed function of (from, to), printed by
// --print_expected for checking the client's output:
//   rtt p50  = (20 + (31 a + 17 b) % 400) us,  p99 = 2 x p50
//   tx       = 1e9 + 1e6 a + 1e3 b bytes/s,    rx = 2e9 + 1e6 a + 1e3 b
//   offset   = (b - a) x 10 us (so a->b and b->a cancel), error 50 us
// All links are up and within the default thresholds (the verdict is
// healthy).
//
//   status_loadgen --nodes 256 --base_port 24000
// Prints "ready" on stdout once every port listens; runs until killed.
#include <signal.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "proto/gloowatch.grpc.pb.h"

ABSL_FLAG(int, nodes, 16, "Simulated nodes (1..4096).");
ABSL_FLAG(int, base_port, 24000, "Node i listens on 127.0.0.1:base_port+i.");
ABSL_FLAG(int, full_mesh_max, 64, "Largest cluster that is probed as a full mesh.");
ABSL_FLAG(bool, print_expected, false,
          "Print the expected p50 (ms) of every probed pair as 'a b p50' and exit.");

namespace gloowatch::bench {
namespace {

std::string NodeName(int i) { return absl::StrFormat("n%04d", i); }

double RttP50Seconds(int a, int b) { return (20 + (31 * a + 17 * b) % 400) * 1e-6; }

// Peers of node i and why they are probed, as the daemon's topology would pick.
std::vector<std::pair<int, const char*>> PeersOf(int i, int n, int full_mesh_max) {
  std::vector<std::pair<int, const char*>> peers;
  if (n <= full_mesh_max) {
    for (int j = 0; j < n; ++j) {
      if (j != i) peers.emplace_back(j, "mesh");
    }
    return peers;
  }
  std::vector<bool> taken(n, false);
  taken[i] = true;
  auto add = [&](int offset, const char* why) {
    const int j = ((i + offset) % n + n) % n;
    if (taken[j]) return;
    taken[j] = true;
    peers.emplace_back(j, why);
  };
  for (int d : {1, -1, 2, -2}) add(d, "ring");
  for (int d : {n / 4, -(n / 4), n / 2}) add(d, "sample");
  return peers;
}

class FakeCluster final : public v1::Status::Service {
 public:
  FakeCluster(int nodes, int base_port, int full_mesh_max)
      : nodes_(nodes), base_port_(base_port), full_mesh_max_(full_mesh_max) {
    const absl::Time now = absl::Now();
    for (int i = 0; i < nodes_; ++i) statuses_.push_back(Build(i, now));
  }

  grpc::Status GetStatus(grpc::ServerContext* context, const v1::GetStatusRequest*,
                         v1::NodeStatus* response) override {
    const grpc::string_ref authority = context->ExperimentalGetAuthority();
    const std::string text(authority.data(), authority.size());
    const size_t colon = text.rfind(':');
    int port = 0;
    if (colon == std::string::npos || !absl::SimpleAtoi(text.substr(colon + 1), &port) ||
        port < base_port_ || port >= base_port_ + nodes_) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          absl::StrCat("no simulated node at authority '", text, "'"));
    }
    *response = statuses_[port - base_port_];
    return grpc::Status::OK;
  }

 private:
  v1::NodeStatus Build(int i, absl::Time now) const {
    v1::NodeStatus s;
    s.set_node(NodeName(i));
    s.set_version("loadgen");
    s.set_gloo_version("0.0.0");
    s.set_hostname(NodeName(i));
    s.mutable_gloo()->set_interface("lo");
    s.mutable_gloo()->set_address("127.0.0.1");
    s.mutable_gloo()->set_source("config:address");
    s.mutable_gloo()->set_is_loopback(true);
    s.mutable_started_at()->set_seconds(absl::ToUnixSeconds(now) - 3600);
    s.mutable_now()->set_seconds(absl::ToUnixSeconds(now));
    v1::Thresholds* t = s.mutable_thresholds();
    t->set_latency_seconds(0.002);
    t->set_bandwidth_link_ratio(0.8);
    t->set_clock_offset_seconds(0.1);
    t->set_failure_window_seconds(3600);
    t->set_communication_share(0.3);
    const auto peers = PeersOf(i, nodes_, full_mesh_max_);
    v1::Topology* topology = s.mutable_topology();
    topology->set_mode(nodes_ <= full_mesh_max_ ? "full_mesh" : "sampled");
    topology->set_cluster_nodes(nodes_);
    topology->set_probed_peers(peers.size());
    for (const auto& [j, why] : peers) {
      v1::PeerStatus* p = s.add_peers();
      p->set_name(NodeName(j));
      p->set_grpc_address(absl::StrCat("127.0.0.1:", base_port_ + j));
      p->set_state(v1::PEER_STATE_UP);
      p->set_gloo_address(absl::StrCat("127.0.0.1:", 40000 + j));
      p->set_selection(why);
      p->set_peer_version("loadgen");
      const double p50 = RttP50Seconds(i, j);
      p->mutable_latency()->set_last_seconds(p50);
      p->mutable_latency()->set_p50_seconds(p50);
      p->mutable_latency()->set_p99_seconds(2 * p50);
      p->mutable_latency()->set_samples_in_window(300);
      p->mutable_latency()->set_window_seconds(300);
      p->mutable_bandwidth()->set_tx_bytes_per_second(1e9 + 1e6 * i + 1e3 * j);
      p->mutable_bandwidth()->set_rx_bytes_per_second(2e9 + 1e6 * i + 1e3 * j);
      p->mutable_clock()->set_offset_seconds((j - i) * 10e-6);
      p->mutable_clock()->set_error_seconds(50e-6);
      p->set_probes_ok(1000);
      p->mutable_up_since()->set_seconds(absl::ToUnixSeconds(now) - 3600);
    }
    return s;
  }

  const int nodes_, base_port_, full_mesh_max_;
  std::vector<v1::NodeStatus> statuses_;
};

int Main() {
  const int nodes = absl::GetFlag(FLAGS_nodes);
  const int base_port = absl::GetFlag(FLAGS_base_port);
  const int full_mesh_max = absl::GetFlag(FLAGS_full_mesh_max);
  if (nodes < 1 || nodes > 4096 || base_port < 1 || base_port + nodes > 65536) {
    std::fprintf(stderr, "status_loadgen: --nodes must be 1..4096 and the ports fit below 65536\n");
    return 64;
  }
  if (absl::GetFlag(FLAGS_print_expected)) {
    for (int i = 0; i < nodes; ++i) {
      for (const auto& [j, why] : PeersOf(i, nodes, full_mesh_max)) {
        std::printf("%s %s %.6f\n", NodeName(i).c_str(), NodeName(j).c_str(),
                    RttP50Seconds(i, j) * 1e3);
      }
    }
    return 0;
  }
  // Blocked before gRPC starts its threads, so they inherit the mask and
  // SIGTERM/SIGINT reach the sigwait below.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  FakeCluster service(nodes, base_port, full_mesh_max);
  grpc::ServerBuilder builder;
  std::vector<int> selected(nodes, 0);
  for (int i = 0; i < nodes; ++i) {
    builder.AddListeningPort(absl::StrCat("127.0.0.1:", base_port + i),
                             grpc::InsecureServerCredentials(), &selected[i]);
  }
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  for (int i = 0; i < nodes; ++i) {
    if (server == nullptr || selected[i] == 0) {
      std::fprintf(stderr, "status_loadgen: cannot listen on 127.0.0.1:%d\n", base_port + i);
      return 69;
    }
  }
  std::printf("ready\n");
  std::fflush(stdout);
  // Until SIGTERM/SIGINT.
  int sig = 0;
  sigwait(&signals, &sig);
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  return 0;
}

}  // namespace
}  // namespace gloowatch::bench

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return gloowatch::bench::Main();
}
