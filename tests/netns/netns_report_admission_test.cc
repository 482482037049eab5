// Training reports from a stranger: host h2 (its own network namespace)
// floods host h1's daemon with ReportSteps for 300 (job, rank) series, more
// than the daemon's cap. Without TLS the daemon refuses every one of them
// (PERMISSION_DENIED naming the caller), so a training job on h1 itself still
// gets its series.
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel_posix.h"
#include "gtest/gtest.h"
#include "proto/gloowatch.grpc.pb.h"
#include "tests/support/metrics_text.h"
#include "tests/support/netns_cluster.h"

namespace gloowatch::testing {
namespace {

using ::testing::HasSubstr;

v1::ReportStepRequest Step(const std::string& job, int rank) {
  v1::ReportStepRequest r;
  r.set_job(job);
  r.set_rank(rank);
  r.set_step(1);
  r.set_step_seconds(1.0);
  r.set_communication_seconds(0.25);
  return r;
}

// ReportSteps over a socket created in namespace `ns`, i.e. from that host.
grpc::Status ReportStepsFrom(const std::string& ns, const std::string& ip, int port,
                             const v1::ReportStepsRequest& request,
                             v1::ReportStepsResponse* response) {
  absl::StatusOr<int> fd = ConnectInNetns(ns, ip, port);
  if (!fd.ok())
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, std::string(fd.status().message()));
  auto stub =
      v1::Status::NewStub(grpc::CreateInsecureChannelFromFd(absl::StrCat(ip, ":", port), *fd));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
  return stub->ReportSteps(&context, request, response);
}

TEST(NetnsReportAdmissionTest, StrangerFloodIsRefusedAndLocalJobsReport) {
  const std::string reason = NetnsUnavailableReason();
  if (!reason.empty()) GTEST_SKIP() << "netns harness unavailable: " << reason;
  NetnsClusterOptions options;
  options.hosts = 2;
  NetnsCluster cluster(options);
  ASSERT_TRUE(cluster.Setup().ok());
  cluster.Start(0);
  ASSERT_TRUE(WaitFor([&] { return cluster.Status(0).ok(); }, absl::Seconds(30)))
      << cluster.AllLogs();
  const int port = NetnsCluster::kGrpcPort;

  v1::ReportStepsRequest flood;
  for (int rank = 0; rank < 300; ++rank) {
    *flood.add_steps() = Step(rank < 150 ? "flood-a" : "flood-b", rank);
  }
  for (int round = 0; round < 2; ++round) {  // 600 series asked for in all
    v1::ReportStepsResponse response;
    grpc::Status s = ReportStepsFrom(cluster.ns(1), cluster.ip(0), port, flood, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr(absl::StrCat("ipv4:", cluster.ip(1), ":")));
    EXPECT_THAT(s.error_message(), HasSubstr("only processes on this host may report"));
    EXPECT_EQ(response.accepted(), 0u);
  }

  // The job on h1 reports to the daemon's address (its own host's).
  v1::ReportStepsRequest job;
  for (int rank = 0; rank < 4; ++rank) *job.add_steps() = Step("real-job", rank);
  v1::ReportStepsResponse response;
  grpc::Status s = ReportStepsFrom(cluster.ns(0), cluster.ip(0), port, job, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(response.accepted(), 4u);
  EXPECT_EQ(response.rejected_size(), 0);

  absl::StatusOr<v1::NodeStatus> status = cluster.Status(0);
  ASSERT_TRUE(status.ok()) << status.status();
  ASSERT_EQ(status->training_size(), 4) << status->ShortDebugString();
  for (const v1::TrainingJobStatus& t : status->training()) EXPECT_EQ(t.job(), "real-job");
  auto metrics = cluster.Metrics(0);
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_EQ(FindMetric(*metrics, "gloowatch_training_steps_total",
                       {{"training_job", "real-job"}, {"rank", "3"}}),
            1);
  EXPECT_EQ(FindMetric(*metrics, "gloowatch_training_steps_total", {{"training_job", "flood-a"}}),
            std::nullopt);
}

}  // namespace
}  // namespace gloowatch::testing
