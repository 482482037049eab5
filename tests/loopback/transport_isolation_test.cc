// A stranger who makes Gloo's own event-loop thread throw (which aborts the
// process that runs Gloo) costs a restart of the transport process, never the
// daemon: its API answers throughout and probing resumes by itself.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "gloo/transport/tcp/address.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/support/daemon_process.h"
#include "tests/support/metrics_text.h"

namespace gloowatch::testing {
namespace {

int ConnectTo(const std::string& gloo_address) {
  gloo::transport::tcp::Address address(
      std::vector<char>(gloo_address.begin(), gloo_address.end()));
  sockaddr_storage ss = address.getSockaddr();
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(fd, reinterpret_cast<sockaddr*>(&ss), sizeof(sockaddr_in)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool PeerUp(const std::string& daemon, const std::string& peer) {
  auto status = GetStatus(daemon);
  if (!status.ok()) return false;
  const v1::PeerStatus* p = FindPeer(*status, peer);
  return p != nullptr && p->state() == v1::PEER_STATE_UP;
}

double Restarts(int metrics_port, const std::string& node) {
  auto body = HttpGet(metrics_port, "/metrics");
  if (!body.ok()) return -1;
  return FindMetric(ParseMetrics(*body), "gloowatch_transport_restarts_total", {{"node", node}})
      .value_or(-1);
}

TEST(TransportIsolationTest, GlooLoopAbortCostsATransportRestartNotTheDaemon) {
  LoopbackCluster cluster(2, FastLoopbackYaml());
  cluster.Start(0);
  cluster.Start(1);
  ASSERT_TRUE(WaitFor([&] { return PeerUp(cluster.grpc(0), "node-b"); }, absl::Seconds(20)));
  EXPECT_EQ(Restarts(cluster.node(0).metrics_port, "node-a"), 0);

  // Open a pair under node-b's name whose requester side sorts above the
  // daemon's address, so the daemon's pairs wait for an incoming connection;
  // connect first and send a Gloo op for a buffer nobody posted.
  auto stub =
      v1::Peer::NewStub(grpc::CreateChannel(cluster.grpc(0), grpc::InsecureChannelCredentials()));
  const v1::OpenProbePairRequest request = StrangerOpenRequest("node-b", "node-a");
  v1::OpenProbePairResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  ASSERT_TRUE(stub->OpenProbePair(&context, request, &response).ok());
  const int command = ConnectTo(response.gloo_address());
  const int bulk = ConnectTo(response.bulk_gloo_address());
  ASSERT_GE(command, 0);
  ASSERT_GE(bulk, 0);
  absl::SleepFor(absl::Milliseconds(200));
  // Gloo's op preamble (six size_t): nbytes, opcode 1 (unbound send), slot,
  // offset, length, remote offset.
  const size_t preamble[6] = {sizeof(preamble) + 8, 1, 99, 0, 8, 0};
  ASSERT_EQ(write(bulk, preamble, sizeof(preamble)), static_cast<ssize_t>(sizeof(preamble)));

  ASSERT_TRUE(WaitFor([&] { return Restarts(cluster.node(0).metrics_port, "node-a") >= 1; },
                      absl::Seconds(10)))
      << cluster.process(0)->Log();
  close(command);
  close(bulk);
  EXPECT_TRUE(cluster.process(0)->running());
  EXPECT_TRUE(GetStatus(cluster.grpc(0)).ok());
  EXPECT_NE(cluster.process(0)->Log().find("killed by signal 6"), std::string::npos);
  // The restarted transport reconnects to node-b, and node-b to it.
  EXPECT_TRUE(WaitFor([&] { return PeerUp(cluster.grpc(0), "node-b"); }, absl::Seconds(20)));
  EXPECT_TRUE(WaitFor([&] { return PeerUp(cluster.grpc(1), "node-a"); }, absl::Seconds(20)));
  EXPECT_EQ(Restarts(cluster.node(0).metrics_port, "node-a"), 1);
}

TEST(TransportIsolationTest, KilledTransportIsRestartedAndDaemonKeepsServing) {
  LoopbackCluster cluster(2, FastLoopbackYaml());
  cluster.Start(0);
  cluster.Start(1);
  ASSERT_TRUE(WaitFor([&] { return PeerUp(cluster.grpc(0), "node-b"); }, absl::Seconds(20)));
  pid_t transport = -1;
  ASSERT_TRUE(WaitFor([&] { return (transport = ChildPid(cluster.process(0)->pid())) > 0; },
                      absl::Seconds(5)));
  ASSERT_EQ(kill(transport, SIGKILL), 0);
  ASSERT_TRUE(WaitFor([&] { return Restarts(cluster.node(0).metrics_port, "node-a") == 1; },
                      absl::Seconds(10)));
  EXPECT_TRUE(GetStatus(cluster.grpc(0)).ok());
  EXPECT_TRUE(WaitFor([&] { return PeerUp(cluster.grpc(0), "node-b"); }, absl::Seconds(20)));
  // Stopping the daemon takes its transport along.
  cluster.Kill(0, SIGTERM);
  EXPECT_TRUE(WaitFor([&] { return kill(transport, 0) != 0; }, absl::Seconds(5)));
}

}  // namespace
}  // namespace gloowatch::testing
