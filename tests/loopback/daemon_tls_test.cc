// Mutual TLS: daemons with certificates from one CA probe each other; a
// client or peer without a trusted certificate gets nothing.
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "common/tls.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/support/daemon_process.h"

namespace gloowatch::testing {
namespace {

std::shared_ptr<grpc::ChannelCredentials> Credentials(const Pki& pki) {
  auto tls = LoadTls({pki.ca, pki.cert, pki.key});
  EXPECT_TRUE(tls.ok()) << tls.status();
  return MakeChannelCredentials(*tls);
}

std::string TlsYaml(const Pki& pki) {
  return absl::StrCat("gloo: {address: 127.0.0.1, timeout: 2s}\n",
                      "schedule: {latency_interval: 500ms, skew_interval: 1s, "
                      "bandwidth_interval: 30s, bandwidth_budget: 1}\n",
                      "probe: {bandwidth_bytes: 8MiB, bandwidth_message_bytes: 1MiB, "
                      "backoff_initial: 200ms, backoff_max: 1s}\n",
                      "tls: {ca: ", pki.ca, ", cert: ", pki.cert, ", key: ", pki.key, "}\n");
}

class DaemonTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<Pki> pki = MakePki(dir_, "cluster");
    absl::StatusOr<Pki> rogue = MakePki(dir_, "rogue");
    ASSERT_TRUE(pki.ok() && rogue.ok()) << pki.status() << rogue.status();
    pki_ = *pki;
    rogue_ = *rogue;
  }
  TempDir dir_;
  Pki pki_, rogue_;
};

TEST_F(DaemonTlsTest, TrustedPeersProbeEachOtherAndStrangersAreRefused) {
  LoopbackCluster cluster(2, TlsYaml(pki_));
  cluster.Start(0);
  cluster.Start(1);
  auto trusted = Credentials(pki_);
  absl::Status up = cluster.WaitAllUp(absl::Seconds(20), LatencyMeasured, trusted);
  ASSERT_TRUE(up.ok()) << up << "\n" << cluster.process(0)->Log();
  EXPECT_EQ(cluster.process(0)->Log().find("TLS is NOT configured"), std::string::npos);

  // Plaintext and a certificate from another CA: no status.
  auto plain = GetStatus(cluster.grpc(0), absl::Seconds(2));
  EXPECT_FALSE(plain.ok());
  auto rogue_status = GetStatus(cluster.grpc(0), absl::Seconds(2), Credentials(rogue_));
  EXPECT_FALSE(rogue_status.ok());

  // A stranger claiming to be node-b cannot even reach OpenProbePair.
  auto stub = v1::Peer::NewStub(grpc::CreateChannel(cluster.grpc(0), Credentials(rogue_)));
  v1::OpenProbePairRequest request;
  request.set_protocol_version(1);
  request.set_from_node("node-b");
  request.set_to_node("node-a");
  request.set_gloo_address("x");
  request.set_bulk_gloo_address("x");
  v1::OpenProbePairResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
  const grpc::Status s = stub->OpenProbePair(&context, request, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  up = cluster.WaitAllUp(absl::ZeroDuration(), LatencyMeasured, trusted);  // still, at once
  EXPECT_TRUE(up.ok()) << up;

  // The operator's client: in with the cluster's certificate, out without.
  const std::string daemons = absl::StrCat(cluster.grpc(0), ",", cluster.grpc(1));
  Process with_tls({BinaryPath("client/gloowatch"), "health", "--daemons", daemons, "--tls_ca",
                    pki_.ca, "--tls_cert", pki_.cert, "--tls_key", pki_.key},
                   dir_.path() + "/health-tls.log");
  EXPECT_EQ(with_tls.Wait(absl::Seconds(20)), 0) << with_tls.Log();
  Process without({BinaryPath("client/gloowatch"), "health", "--daemons", daemons},
                  dir_.path() + "/health-plain.log");
  EXPECT_EQ(without.Wait(absl::Seconds(20)), 69) << without.Log();  // neither answers
  EXPECT_NE(without.Log().find("UNAVAILABLE: Socket closed"), std::string::npos) << without.Log();
  Process half(
      {BinaryPath("client/gloowatch"), "health", "--daemons", daemons, "--tls_ca", pki_.ca},
      dir_.path() + "/health-half.log");
  EXPECT_GE(half.Wait(absl::Seconds(20)).value_or(0), 64) << half.Log();
  EXPECT_NE(half.Log().find("--tls_cert"), std::string::npos) << half.Log();
}

TEST_F(DaemonTlsTest, PeerWithAnUntrustedCertificateCannotRegister) {
  // node-b presents a certificate node-a's CA did not sign.
  LoopbackCluster cluster(2, TlsYaml(pki_));
  std::string b_config = LoopbackConfig(cluster.node(1), {cluster.node(0)}, TlsYaml(rogue_));
  dir_.Write("b.yaml", b_config);
  cluster.Start(0);
  Process b({BinaryPath("gloowatchd"), "--config", dir_.path() + "/b.yaml"},
            dir_.path() + "/b.log");
  // node-a's own attempts at node-b fail on the handshake; once one has,
  // node-b has had its chances to register too.
  absl::StatusOr<v1::NodeStatus> s;
  ASSERT_TRUE(WaitFor(
      [&] {
        s = GetStatus(cluster.grpc(0), absl::Seconds(2), Credentials(pki_));
        return s.ok() && FindPeer(*s, "node-b")->probes_failed() > 0;
      },
      absl::Seconds(30)))
      << (s.ok() ? FindPeer(*s, "node-b")->DebugString() : s.status().ToString());
  EXPECT_NE(FindPeer(*s, "node-b")->state(), v1::PEER_STATE_UP);
  EXPECT_EQ(FindPeer(*s, "node-b")->probes_ok(), 0u);
  EXPECT_TRUE(b.running());
}

TEST(TlsConfigTest, UnreadableCertificateIsNamed) {
  auto tls = LoadTls({"/nonexistent/ca.pem", "/nonexistent/c.pem", "/nonexistent/k.pem"});
  ASSERT_FALSE(tls.ok());
  EXPECT_THAT(std::string(tls.status().message()), ::testing::HasSubstr("tls.ca"));
  EXPECT_THAT(std::string(tls.status().message()), ::testing::HasSubstr("/nonexistent/ca.pem"));
}

TEST(TlsConfigTest, PlaintextDaemonWarnsLoudly) {
  LoopbackCluster cluster(1, "gloo: {address: 127.0.0.1}\n");
  cluster.Start(0);
  EXPECT_TRUE(WaitFor(
      [&] { return cluster.process(0)->Log().find("TLS is NOT configured") != std::string::npos; },
      absl::Seconds(10)));
}

}  // namespace
}  // namespace gloowatch::testing
