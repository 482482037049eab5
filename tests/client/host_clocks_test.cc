// Several hosts' logs in one order (client/explain_log/host_clocks.h,
// client/sources/clock_offsets.h): each rank's log is placed on its host,
// and its times corrected by the clock offsets the daemons measured.
#include "client/explain_log/host_clocks.h"

#include <sstream>

#include "client/sources/clock_offsets.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gloowatch::client {
namespace {

using ::testing::HasSubstr;

FetchResult Node(const std::string& name) {
  FetchResult r;
  r.target = {name, {"127.0.0.1", 7601}};
  v1::NodeStatus s;
  s.set_node(name);
  r.status = s;
  return r;
}

// `from` measured `to`'s clock minus its own.
void Offset(FetchResult& from, const std::string& to, double seconds) {
  auto* p = from.status->add_peers();
  p->set_name(to);
  p->set_state(v1::PEER_STATE_UP);
  p->mutable_clock()->set_offset_seconds(seconds);
}

void Rank(FetchResult& n, const std::string& job, int rank) {
  auto* t = n.status->add_training();
  t->set_job(job);
  t->set_rank(rank);
}

LogExplanation Explain(const std::string& text, const std::string& source) {
  std::istringstream in(text);
  return ExplainLog(in, source);
}

// h2's clock runs 0.83 s ahead of h1's. Rank 1 (on h2) lost its peer at
// 12:04:21.000 by h2's clock, 12:04:20.17 by h1's; rank 0 (on h1) at
// 12:04:20.500. By the stamps rank 0 came first; on one clock rank 1 did.
std::vector<LogExplanation> TwoRanks() {
  std::vector<LogExplanation> logs;
  logs.push_back(Explain(
      "2024-05-01 12:04:20,500 [rank0]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/"
      "pair.cc:598] Connection closed by peer [10.0.0.2]:19722\n",
      "logs/rank0.log"));
  logs.push_back(Explain(
      "2024-05-01 12:04:21,000 [rank1]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/"
      "pair.cc:598] Connection closed by peer [10.0.0.1]:19723\n",
      "logs/rank1.log"));
  return logs;
}

std::vector<FetchResult> Cluster() {
  FetchResult h1 = Node("h1"), h2 = Node("h2"), h3 = Node("h3");
  Offset(h1, "h2", 0.84);
  Offset(h2, "h1", -0.82);  // each end's own estimate: the mean is taken
  Offset(h2, "h3", 0.10);
  Rank(h1, "llm", 0);
  Rank(h2, "llm", 1);
  Rank(h3, "llm", 2);
  Rank(h3, "other", 0);
  return {h1, h2, h3};
}

TEST(HostClocks, UncorrectedStampsPutTheEchoFirst) {
  JobExplanation job = ExplainJob(TwoRanks());
  EXPECT_EQ(job.root.log, 0);
}

TEST(HostClocks, CorrectedTimesPutTheFirstFailureFirst) {
  std::vector<LogExplanation> logs = TwoRanks();
  HostClocks clocks = ApplyHostClocks(Cluster(), "llm", logs);
  EXPECT_EQ(clocks.reference, "h1");
  EXPECT_TRUE(clocks.note.empty());
  EXPECT_EQ(logs[0].host, "h1");
  EXPECT_EQ(logs[1].host, "h2");
  ASSERT_TRUE(logs[1].clock_offset_seconds.has_value());
  EXPECT_NEAR(*logs[1].clock_offset_seconds, 0.83, 1e-9);
  JobExplanation job = ExplainJob(std::move(logs));
  job.clock_reference = clocks.reference;
  job.clock_source = "daemons";
  EXPECT_EQ(job.root.log, 1);
  ASSERT_EQ(job.echoes.size(), 1u);
  EXPECT_EQ(job.echoes[0].log, 0);
  const std::string text = RenderJobText(job);
  EXPECT_THAT(text, HasSubstr("times corrected by measured offsets (to h1's clock, from the "
                              "daemons): h2 +0.83 s\n"));
  EXPECT_THAT(text, HasSubstr("root cause: rank 1 (logs/rank1.log line 1, 2024-05-01 "
                              "12:04:21,000, h2): peer_connection_closed"));
  nlohmann::json j = JobToJson(job);
  EXPECT_EQ(j["clock_correction"]["reference"], "h1");
  EXPECT_NEAR(j["clock_correction"]["offsets"]["h2"].get<double>(), 0.83, 1e-9);
  EXPECT_EQ(j["root_cause"]["host"], "h2");
  EXPECT_EQ(j["logs"][1]["host"], "h2");
}

// h1 never measured h3: one hop through h2 (0.83 + 0.10).
TEST(HostClocks, OneHopThroughAThirdHost) {
  ClockOffsets o = ClockOffsetsOf(Cluster(), {"h1", "h3"});
  EXPECT_EQ(o.reference, "h1");
  ASSERT_TRUE(o.offset_seconds.count("h3"));
  EXPECT_NEAR(o.offset_seconds["h3"], 0.93, 1e-9);
  EXPECT_EQ(o.offset_seconds["h1"], 0);
  EXPECT_EQ(OffsetText(0.936), "+0.94 s");
  EXPECT_EQ(OffsetText(-0.5), "-0.50 s");
  EXPECT_EQ(OffsetText(-0.000003), "+0.00 s");
}

TEST(HostClocks, UnknownJobOrRanksCorrectNothing) {
  std::vector<LogExplanation> logs = TwoRanks();
  HostClocks clocks = ApplyHostClocks(Cluster(), "nope", logs);
  EXPECT_TRUE(clocks.reference.empty());
  EXPECT_EQ(clocks.note, "no daemon that answered reports job nope");
  EXPECT_FALSE(logs[0].clock_offset_seconds.has_value());
  std::vector<LogExplanation> unnamed;
  unnamed.push_back(Explain("2024-05-01 12:00:00,000 hello\n", "a.log"));
  clocks = ApplyHostClocks(Cluster(), "llm", unnamed);
  EXPECT_TRUE(clocks.reference.empty());
  EXPECT_THAT(clocks.note, HasSubstr("no log names one rank of job llm"));
  JobExplanation job = ExplainJob(std::move(unnamed));
  job.clock_note = clocks.note;
  EXPECT_THAT(RenderJobText(job), HasSubstr("times not corrected: no log names one rank"));
  EXPECT_EQ(JobToJson(job)["clock_correction"]["note"], clocks.note);
}

// A host with no measured path to the reference keeps its own times, and
// the text says which log.
TEST(HostClocks, AHostWithoutAnOffsetIsListed) {
  std::vector<FetchResult> nodes = Cluster();
  nodes.push_back(Node("h4"));
  Rank(nodes.back(), "llm", 3);
  std::vector<LogExplanation> logs = TwoRanks();
  logs.push_back(Explain("2024-05-01 12:00:00,000 [rank3]: hello\n", "logs/rank3.log"));
  HostClocks clocks = ApplyHostClocks(nodes, "llm", logs);
  EXPECT_EQ(logs[2].host, "h4");
  EXPECT_FALSE(logs[2].clock_offset_seconds.has_value());
  JobExplanation job = ExplainJob(std::move(logs));
  job.clock_reference = clocks.reference;
  job.clock_source = "prometheus";
  EXPECT_THAT(RenderJobText(job),
              HasSubstr("  not corrected (host or offset unknown): logs/rank3.log\n"));
}

}  // namespace
}  // namespace gloowatch::client
