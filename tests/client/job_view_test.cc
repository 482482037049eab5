#include "client/job_view.h"

#include "common/proto_time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gloowatch::client {
namespace {

using ::testing::HasSubstr;

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

// One rank's series as a daemon reports it: heard `silent` s ago, inside
// `op` #seq for `inside` s ("" = between calls), or no collective at all.
v1::TrainingJobStatus Rank(const std::string& job, int rank, double silent,
                           const std::string& op = "", uint64_t seq = 0, double inside = 0,
                           bool instrumented = true) {
  v1::TrainingJobStatus t;
  t.set_job(job);
  t.set_rank(rank);
  *t.mutable_last_report() = ToProtoTimestamp(kNow - absl::Seconds(silent));
  if (instrumented) {
    t.mutable_collective()->set_op(op);
    t.mutable_collective()->set_seq(seq);
    t.mutable_collective()->set_group("world");
    t.mutable_collective()->set_inside_seconds(inside);
  }
  return t;
}

FetchResult Node(const std::string& name, std::vector<v1::TrainingJobStatus> ranks) {
  FetchResult f;
  f.target.name = name;
  v1::NodeStatus s;
  s.set_node(name);
  *s.mutable_now() = ToProtoTimestamp(kNow);
  for (auto& r : ranks) *s.add_training() = std::move(r);
  f.status = std::move(s);
  return f;
}

TEST(JobView, RunningJob) {
  auto v = BuildJobView({Node("a", {Rank("llm", 0, 0.1, "all_reduce", 9, 0.01),
                                    Rank("llm", 1, 0.2, "", 9), Rank("other", 0, 60)})},
                        "llm");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_FALSE(v->hung());
  EXPECT_EQ(v->ExitCode(), 0);
  ASSERT_EQ(v->ranks.size(), 2u);
  EXPECT_EQ(v->ranks[0].state, RankState::kRunning);
  EXPECT_EQ(JobToJson(*v)["verdict"], "running");
}

TEST(JobView, WaitingRanksAndTheOnesTheyWaitFor) {
  // Two hosts: ranks 0 and 3 wait in all_reduce #41 for 8 s; rank 1 is
  // heard from but still at #40 (not entered); rank 2 went silent at #39;
  // rank 4 reports only steps.
  auto v = BuildJobView(
      {Node("a", {Rank("llm", 0, 0.1, "all_reduce", 41, 8), Rank("llm", 1, 0.2, "", 40)}),
       Node("b", {Rank("llm", 3, 0.1, "all_reduce", 41, 7.5), Rank("llm", 2, 9.0, "", 39),
                  Rank("llm", 4, 0.1, "", 0, 0, false)})},
      "llm");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_TRUE(v->hung());
  EXPECT_EQ(v->ExitCode(), 2);
  EXPECT_EQ(v->waiting_op, "all_reduce");
  EXPECT_EQ(v->waiting_seq, 41u);
  EXPECT_DOUBLE_EQ(v->waiting_seconds, 8);
  ASSERT_EQ(v->ranks.size(), 5u);
  EXPECT_EQ(v->ranks[0].state, RankState::kWaiting);
  EXPECT_EQ(v->ranks[1].state, RankState::kNotEntered);
  EXPECT_EQ(v->ranks[2].state, RankState::kSilent);
  EXPECT_EQ(v->ranks[3].state, RankState::kWaiting);
  EXPECT_EQ(v->ranks[4].state, RankState::kUnknown);
  const std::string text = RenderJobText(*v);
  EXPECT_THAT(text,
              HasSubstr("HUNG: ranks 0, 3 wait in all_reduce #41 (group world) for up to 8.0 s"));
  EXPECT_THAT(text,
              HasSubstr("rank 1 (a): has not entered all_reduce #41 (its last reported call #40)"));
  EXPECT_THAT(text, HasSubstr("rank 2 (b): not heard from for 9.0 s (its last reported call #39)"));
  const nlohmann::json j = JobToJson(*v);
  EXPECT_EQ(j["waiting"]["ranks"], nlohmann::json({0, 3}));
  ASSERT_EQ(j["suspects"].size(), 2u);
  EXPECT_EQ(j["suspects"][0]["rank"], 1);
  EXPECT_EQ(j["suspects"][0]["state"], "not_entered");
  EXPECT_EQ(j["suspects"][1]["state"], "silent");
}

TEST(JobView, SilentJobWithoutWaitersIsDegradedAndUnknownJobNotFound) {
  FetchResult down;
  down.target.name = "c";
  down.error = "connection refused";
  auto v = BuildJobView({Node("a", {Rank("llm", 0, 30, "", 5)}), down}, "llm");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->ExitCode(), 1);
  EXPECT_EQ(v->unreachable, std::vector<std::string>{"c: connection refused"});
  auto missing = BuildJobView({Node("a", {Rank("llm", 0, 0.1)}), down}, "nope");
  EXPECT_TRUE(absl::IsNotFound(missing.status()));
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("'nope' (some did not answer)"));
}

}  // namespace
}  // namespace gloowatch::client
