// gloowatch probe A B against two real daemons on loopback: latency and
// bandwidth of one link now through A's daemon (Status.ProbeLink over a
// fresh session of Gloo pairs), and the refusals: an unknown peer, a request
// out of range, and the rate limit of on-demand probes.
#include <regex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/gloowatch.grpc.pb.h"
#include "tests/support/daemon_process.h"
#include "tests/support/subprocess.h"

namespace gloowatch::testing {
namespace {

using ::testing::HasSubstr;

ProcessResult Cli(std::vector<std::string> args) {
  args.insert(args.begin(), CliPath());
  ProcessResult r = RunProcess(args, std::nullopt, "", absl::Seconds(60));
  std::cout << "gloowatch " << absl::StrJoin(args.begin() + 1, args.end(), " ") << " (exit "
            << r.exit_code << ")\n"
            << r.out << r.err;
  return r;
}

// The first number after `label` in `text`, or -1.
double NumberAfter(const std::string& text, const std::string& label) {
  std::smatch m;
  const std::regex re(label + R"(\s*([0-9]+(\.[0-9]+)?))");
  return std::regex_search(text, m, re) ? std::stod(m[1]) : -1;
}

class ProbeCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A budget of 1 closes the bandwidth gate for no longer than a transfer
    // took: on-demand transfers never wait for it here.
    cluster_ = std::make_unique<LoopbackCluster>(
        2,
        "gloo:\n  address: 127.0.0.1\n  timeout: 2s\n"
        "schedule:\n  latency_interval: 1s\n  bandwidth_interval: 1h\n  bandwidth_budget: 1\n"
        "probe:\n  bandwidth_bytes: 8MiB\n  bandwidth_message_bytes: 1MiB\n");
    cluster_->Start(0);
    cluster_->Start(1);
    // Each daemon's first scheduled transfer comes within 5 s of its
    // session; once both are over (a figure both ways on both nodes) the
    // gate stays open for the hour, and a transfer asked for now cannot
    // meet a scheduled one.
    absl::Status up = cluster_->WaitAllUp(absl::Seconds(60), [](const v1::PeerStatus& p) {
      return PeerUp(p) && p.bandwidth().has_tx_bytes_per_second() &&
             p.bandwidth().has_rx_bytes_per_second();
    });
    ASSERT_TRUE(up.ok()) << up;
  }

  std::unique_ptr<LoopbackCluster> cluster_;
};

TEST_F(ProbeCommandTest, LatencyAndBandwidthNowThenTheLimits) {
  const std::string config = cluster_->config_path(0);
  ProcessResult r = Cli({"probe", "node-a", "node-b", "--config", config, "--pings", "10"});
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("probing node-a -> node-b now"));
  EXPECT_THAT(r.out, HasSubstr("10 round trips"));
  const double p50 = NumberAfter(r.out, "p50");
  EXPECT_GT(p50, 0);     // ms
  EXPECT_LT(p50, 1000);  // a loopback round trip, even on a loaded machine

  r = Cli({"probe", "node-a", "node-b", "--config", config, "--bandwidth"});
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_GT(NumberAfter(r.out, R"(tx \(node-a sends\):)"), 1);  // MB/s
  EXPECT_GT(NumberAfter(r.out, R"(rx \(node-b sends\):)"), 1);
  EXPECT_EQ(NumberAfter(r.out, R"(Gbit/s\),)"), 8);  // MiB, as the config says

  // A's daemon only probes its configured peers.
  r = Cli({"probe", "node-a", "node-z", "--config", config});
  EXPECT_EQ(r.exit_code, 64);
  EXPECT_THAT(r.err, HasSubstr("'node-z' is not a peer of node-a"));
  r = Cli({"probe", "node-a", "node-b", "--config", config, "--pings", "5000"});
  EXPECT_EQ(r.exit_code, 64);

  // Straight to the RPC: one direction alone, out of range, then the rate
  // limit (10 a minute, of which the calls above took 5: one for the
  // latency, three for --bandwidth, the rx alone; the refused ones none).
  auto stub = v1::Status::NewStub(
      grpc::CreateChannel(cluster_->grpc(0), grpc::InsecureChannelCredentials()));
  v1::ProbeLinkRequest request;
  request.set_peer("node-b");
  request.set_pings(1);
  request.set_bandwidth(true);
  request.set_transfers(v1::ProbeLinkRequest::TRANSFERS_RX_ONLY);
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    v1::ProbeLinkResponse response;
    grpc::Status s = stub->ProbeLink(&ctx, request, &response);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_FALSE(response.has_tx_bytes_per_second());
    EXPECT_GT(response.rx_bytes_per_second(), 1e6);
  }
  request.set_transfers(static_cast<v1::ProbeLinkRequest::Transfers>(7));
  {
    grpc::ClientContext ctx;
    v1::ProbeLinkResponse response;
    grpc::Status s = stub->ProbeLink(&ctx, request, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr("transfers: 7"));
  }
  request = v1::ProbeLinkRequest();
  request.set_peer("node-b");
  request.set_pings(100000);
  {
    grpc::ClientContext ctx;
    v1::ProbeLinkResponse response;
    grpc::Status s = stub->ProbeLink(&ctx, request, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  }
  request.set_pings(1);
  int ok = 0, limited = 0;
  for (int i = 0; i < 10; ++i) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::ProbeLinkResponse response;
    grpc::Status s = stub->ProbeLink(&ctx, request, &response);
    if (s.ok()) {
      ++ok;
      EXPECT_EQ(response.rtt_seconds_size(), 1);
    } else {
      EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
      EXPECT_THAT(s.error_message(), HasSubstr("rate limit: 10 on-demand probes a minute"));
      ++limited;
    }
  }
  EXPECT_EQ(ok, 5);
  EXPECT_EQ(limited, 5);
  r = Cli({"probe", "node-a", "node-b", "--config", config});
  EXPECT_EQ(r.exit_code, 75);
  EXPECT_THAT(r.err, HasSubstr("rate limit"));
  // node-b's limits are its own.
  r = Cli({"probe", "node-b", "node-a", "--config", cluster_->config_path(1)});
  EXPECT_EQ(r.exit_code, 0);
}

// The node's bandwidth budget holds for on-demand transfers too: after a
// scheduled transfer of d, a budget of 1e-5 closes the gate for d * 1e5 (an
// 8 MiB transfer on loopback takes a millisecond or more: 100 s or more),
// past the 30 s an on-demand probe waits, so it is refused, naming the
// budget and when it opens. Its latency part is not gated.
TEST(ProbeCommandBudgetTest, TransferRefusedWhileTheBudgetIsSpent) {
  LoopbackCluster cluster(
      2,
      "gloo:\n  address: 127.0.0.1\n  timeout: 2s\n"
      "schedule:\n  latency_interval: 1s\n  bandwidth_interval: 1h\n  bandwidth_budget: 0.00001\n"
      "probe:\n  bandwidth_bytes: 8MiB\n  bandwidth_message_bytes: 1MiB\n");
  cluster.Start(0);
  cluster.Start(1);
  ASSERT_TRUE(cluster.WaitAllUp(absl::Seconds(30)).ok());
  // One scheduled tx (A's or B's, within 5 s of its session) closes both
  // nodes' gates: the other side's is refused or deferred.
  std::vector<std::unique_ptr<v1::Status::Stub>> stubs;
  for (int i = 0; i < 2; ++i) {
    stubs.push_back(v1::Status::NewStub(
        grpc::CreateChannel(cluster.grpc(i), grpc::InsecureChannelCredentials())));
  }
  bool transferred = false;
  for (absl::Time end = absl::Now() + absl::Seconds(30); !transferred && absl::Now() < end;
       absl::SleepFor(absl::Milliseconds(200))) {
    for (auto& stub : stubs) {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
      v1::NodeStatus status;
      if (!stub->GetStatus(&ctx, v1::GetStatusRequest(), &status).ok()) continue;
      for (const v1::PeerStatus& p : status.peers()) {
        transferred = transferred || p.bandwidth().has_tx_bytes_per_second();
      }
    }
  }
  ASSERT_TRUE(transferred) << "no scheduled transfer within 30 s";

  const std::string config = cluster.config_path(0);
  ProcessResult r = Cli({"probe", "node-a", "node-b", "--config", config, "--bandwidth"});
  EXPECT_EQ(r.exit_code, 75);
  EXPECT_THAT(r.out, HasSubstr("round trips: min"));  // the latency part ran
  EXPECT_THAT(r.err, HasSubstr("RESOURCE_EXHAUSTED: bandwidth budget: this node's "
                               "schedule.bandwidth_budget allows its next transfer in"));
  const double opens_in = NumberAfter(r.err, "next transfer in");
  EXPECT_GT(opens_in, 30);  // past the longest wait, else it would have waited
}

}  // namespace
}  // namespace gloowatch::testing
