// fetch against an in-test gRPC server standing in for the daemon (test
// double for deadline/error behaviour only).
#include "client/sources/fetch.h"

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/core/channel.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/gloowatch.grpc.pb.h"
#include "tests/support/free_port.h"

namespace gloowatch::client {
namespace {

using ::testing::HasSubstr;

class FakeStatus final : public v1::Status::Service {
 public:
  FakeStatus(std::string node, absl::Duration delay) : node_(std::move(node)), delay_(delay) {}
  grpc::Status GetStatus(grpc::ServerContext* ctx, const v1::GetStatusRequest*,
                         v1::NodeStatus* out) override {
    const absl::Time until = absl::Now() + delay_;
    while (absl::Now() < until && !ctx->IsCancelled()) absl::SleepFor(absl::Milliseconds(10));
    out->set_node(node_);
    return grpc::Status::OK;
  }
  grpc::Status ReportStep(grpc::ServerContext*, const v1::ReportStepRequest* r,
                          v1::ReportStepResponse*) override {
    if (r->job().empty()) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "job is empty");
    return grpc::Status::OK;
  }

 private:
  std::string node_;
  absl::Duration delay_;
};

struct TestServer {
  explicit TestServer(std::string node, absl::Duration delay) : service(std::move(node), delay) {
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    b.RegisterService(&service);
    server = b.BuildAndStart();
  }
  ~TestServer() { server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1)); }
  DaemonTarget Target() const { return {"t", {"127.0.0.1", static_cast<uint16_t>(port)}}; }
  FakeStatus service;
  int port = 0;
  std::unique_ptr<grpc::Server> server;
};

TEST(FetchAll, ParallelOkSlowAndRefused) {
  TestServer fast("node-fast", absl::ZeroDuration());
  TestServer slow("node-slow", absl::Seconds(5));
  ASSERT_GT(fast.port, 0);
  ASSERT_GT(slow.port, 0);
  DaemonTarget refused{"r", {"127.0.0.1", static_cast<uint16_t>(gloowatch::testing::FreePort())}};
  const absl::Duration deadline = absl::Milliseconds(700);
  const absl::Time start = absl::Now();
  auto r = FetchAll({fast.Target(), slow.Target(), refused, slow.Target()}, deadline);
  const absl::Duration total = absl::Now() - start;
  // Parallel: two slow daemons cost one deadline, not two.
  EXPECT_LT(total, deadline + absl::Milliseconds(500));
  ASSERT_EQ(r.size(), 4u);
  ASSERT_TRUE(r[0].status.has_value()) << r[0].error;
  EXPECT_EQ(r[0].status->node(), "node-fast");
  for (int i : {1, 3}) {
    EXPECT_FALSE(r[i].status.has_value());
    EXPECT_EQ(r[i].error_code, "DEADLINE_EXCEEDED");
    EXPECT_THAT(r[i].error, HasSubstr("timeout"));
    EXPECT_GE(r[i].elapsed, deadline - absl::Milliseconds(50));
  }
  EXPECT_EQ(r[2].error_code, "UNAVAILABLE");
  EXPECT_EQ(r[2].error, "UNAVAILABLE: Connection refused");  // one short line
  EXPECT_LT(r[2].elapsed, deadline);                         // refused fails fast
}

// gRPC's connect failures, as gRPC 1.51 words them: the cause without the
// story around it.
TEST(ShortRpcError, TheCodeAndTheCause) {
  using grpc::StatusCode;
  const absl::Duration d = absl::Seconds(3);
  EXPECT_EQ(ShortRpcError(grpc::Status(StatusCode::UNAVAILABLE,
                                       "failed to connect to all addresses; last error: UNKNOWN: "
                                       "ipv4:10.0.3.2:7601: Failed to connect to remote host: "
                                       "Connection refused"),
                          d),
            "UNAVAILABLE: Connection refused");
  EXPECT_EQ(ShortRpcError(grpc::Status(StatusCode::UNAVAILABLE,
                                       "failed to connect to all addresses; last error: "
                                       "UNAVAILABLE: ipv6:[fd00::2]:7601: Socket closed"),
                          d),
            "UNAVAILABLE: Socket closed");
  EXPECT_EQ(ShortRpcError(grpc::Status(StatusCode::DEADLINE_EXCEEDED, "Deadline Exceeded"), d),
            "timeout: no answer within 3s");
  EXPECT_EQ(ShortRpcError(grpc::Status(StatusCode::UNIMPLEMENTED, ""), d), "UNIMPLEMENTED: ");
  const std::string longer(500, 'x');
  EXPECT_EQ(ShortRpcError(grpc::Status(StatusCode::INTERNAL, longer + "\nmore"), d),
            absl::StrCat("INTERNAL: ", longer.substr(0, 200), "..."));
}

TEST(SendReportStep, PassesDaemonRejection) {
  TestServer s("n", absl::ZeroDuration());
  v1::ReportStepRequest req;
  absl::Status st = SendReportStep(s.Target().endpoint, req, absl::Seconds(2));
  EXPECT_TRUE(absl::IsInvalidArgument(st));
  EXPECT_THAT(st.message(), HasSubstr("job is empty"));
  req.set_job("j");
  EXPECT_TRUE(SendReportStep(s.Target().endpoint, req, absl::Seconds(2)).ok());
}

}  // namespace
}  // namespace gloowatch::client
