#include "client/job/job_view.h"

#include "client/sources/job_prometheus.h"
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

// A rank can finish a call whose sends the kernel had buffered and enter the
// next: the waiting ranks may stand in different calls, each reported with
// its own, and the stopped rank they all wait for is still named.
TEST(JobView, WaitingRanksInDifferentCalls) {
  auto v = BuildJobView({Node("a", {Rank("llm", 0, 0.1, "all_reduce", 36, 8),
                                    Rank("llm", 1, 0.1, "all_reduce", 35, 8.2)}),
                         Node("b", {Rank("llm", 2, 9.0, "all_reduce", 35, 0.1)})},
                        "llm");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_TRUE(v->hung());
  EXPECT_EQ(v->ranks[0].state, RankState::kWaiting);
  EXPECT_EQ(v->ranks[1].state, RankState::kWaiting);
  EXPECT_EQ(v->ranks[2].state, RankState::kSilent);
  const std::string text = RenderJobText(*v);
  EXPECT_THAT(text, HasSubstr("HUNG: rank 0 waits in all_reduce #36, rank 1 in all_reduce #35 "
                              "(group world) for up to 8.2 s"));
  EXPECT_THAT(text, HasSubstr("rank 2 (b): not heard from for 9.0 s"));
  const nlohmann::json j = JobToJson(*v);
  EXPECT_EQ(j["waiting"]["seq"], 36);
  EXPECT_EQ(j["waiting"]["calls"], nlohmann::json::parse(R"([{"rank":0,"op":"all_reduce","seq":36},
                                      {"rank":1,"op":"all_reduce","seq":35}])"));
  ASSERT_EQ(j["suspects"].size(), 1u);
  EXPECT_EQ(j["suspects"][0]["rank"], 2);
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
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr("'nope' (1 of 2 did not answer)\n  c: connection refused"));
  // Nothing answered says nothing about the job: unavailable, not unknown.
  auto silence = BuildJobView({down, down}, "llm");
  EXPECT_TRUE(absl::IsUnavailable(silence.status())) << silence.status();
  EXPECT_THAT(std::string(silence.status().message()), HasSubstr("no daemon answered (2 asked)"));
}

TEST(JobView, TheDaemonSaysWhetherASilentRankIsStoppedOrGone) {
  // Ranks 0 and 1 wait in all_reduce #41; rank 2's process is stopped at
  // #40; rank 3's process is gone (killed) at #41.
  v1::TrainingJobStatus stopped = Rank("llm", 2, 7, "", 40);
  stopped.set_process("stopped");
  v1::TrainingJobStatus gone = Rank("llm", 3, 7, "all_reduce", 41, 7);
  gone.set_process("gone");
  v1::TrainingJobStatus waiting = Rank("llm", 0, 0.1, "all_reduce", 41, 7);
  waiting.set_process("running");
  auto v = BuildJobView(
      {Node("a", {waiting, Rank("llm", 1, 0.1, "all_reduce", 41, 7)}), Node("b", {stopped, gone})},
      "llm");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->ExitCode(), 2);
  EXPECT_EQ(v->ranks[2].state, RankState::kSilent);
  EXPECT_EQ(v->ranks[3].state, RankState::kGone);
  const std::string text = RenderJobText(*v);
  EXPECT_THAT(text, HasSubstr("rank 2 (b): process stopped (SIGSTOP or a debugger), not heard from "
                              "for 7.0 s (its last reported call #40), has not entered "
                              "all_reduce #41\n"));
  EXPECT_THAT(text, HasSubstr("rank 3 (b): process gone (exited or killed), not heard from for "
                              "7.0 s (last reported inside all_reduce #41)\n"));
  const nlohmann::json j = JobToJson(*v);
  ASSERT_EQ(j["suspects"].size(), 2u);
  EXPECT_EQ(j["suspects"][0]["process"], "stopped");
  EXPECT_EQ(j["suspects"][1]["state"], "gone");
  EXPECT_EQ(j["ranks"][0]["process"], "running");
  EXPECT_EQ(j["ranks"][1]["process"], "");

  // Gone without a hang: the job is degraded.
  auto quiet = BuildJobView({Node("a", {Rank("llm", 0, 0.1, "", 9)}), Node("b", {gone})}, "llm");
  ASSERT_TRUE(quiet.ok());
  EXPECT_EQ(quiet->ExitCode(), 1);
  EXPECT_EQ(JobToJson(*quiet)["verdict"], "degraded");
}

v1::PeerStatus Peer(const std::string& name, v1::PeerState state,
                    v1::FailureReason reason = v1::FAILURE_REASON_UNSPECIFIED,
                    double failed_ago = 0) {
  v1::PeerStatus p;
  p.set_name(name);
  p.set_state(state);
  if (reason != v1::FAILURE_REASON_UNSPECIFIED) {
    p.mutable_last_failure()->set_reason(reason);
    p.mutable_last_failure()->set_message(
        "Timed out waiting 2000ms for recv operation to complete");
    *p.mutable_last_failure()->mutable_time() = ToProtoTimestamp(kNow - absl::Seconds(failed_ago));
  }
  return p;
}

TEST(JobView, DownLinkBetweenTheJobsNodesIsTheLikelyReasonOfTheHang) {
  // Ranks 0-2 on a, b, c all wait in the same call (nobody silent); b and c
  // cannot reach each other; d holds no rank, so its down link is not named.
  FetchResult a = Node("a", {Rank("llm", 0, 0.1, "all_reduce", 7, 9)});
  FetchResult b = Node("b", {Rank("llm", 1, 0.1, "all_reduce", 7, 9)});
  FetchResult c = Node("c", {Rank("llm", 2, 0.1, "all_reduce", 7, 9)});
  *a.status->add_peers() = Peer("b", v1::PEER_STATE_UP);
  *a.status->add_peers() = Peer("c", v1::PEER_STATE_UP);
  *a.status->add_peers() = Peer("d", v1::PEER_STATE_DOWN, v1::FAILURE_REASON_REFUSED, 1);
  *b.status->add_peers() = Peer("a", v1::PEER_STATE_UP);
  *b.status->add_peers() = Peer("c", v1::PEER_STATE_DOWN, v1::FAILURE_REASON_TIMEOUT, 1.5);
  *c.status->add_peers() = Peer("a", v1::PEER_STATE_UP);
  *c.status->add_peers() = Peer("b", v1::PEER_STATE_CONNECTING);
  auto v = BuildJobView({a, b, c}, "llm");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->ExitCode(), 2);
  EXPECT_EQ(v->links_checked, 6);
  ASSERT_EQ(v->links.size(), 2u);
  EXPECT_EQ(v->links[0].node, "b");
  EXPECT_EQ(v->links[0].peer, "c");
  EXPECT_EQ(v->links[0].state, "down");
  EXPECT_EQ(v->links[0].reason, "timeout");
  EXPECT_EQ(v->links[1].state, "connecting");
  const std::string text = RenderJobText(*v);
  EXPECT_THAT(text, HasSubstr("likely reason: link b -> c down (timeout, last failure 1.5 s ago) "
                              "between rank 1 and rank 2: Timed out waiting"));
  EXPECT_THAT(text, HasSubstr("\nlink c -> b connecting between rank 2 and rank 1\n"));
  EXPECT_THAT(text, HasSubstr("links between the job's nodes: 2 of 6 not up"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("every rank that reports is inside")));
  const nlohmann::json j = JobToJson(*v);
  ASSERT_EQ(j["links"].size(), 2u);
  EXPECT_EQ(j["links"][0]["reason"], "timeout");
  EXPECT_EQ(j["links"][0]["node_ranks"], nlohmann::json({1}));
  EXPECT_DOUBLE_EQ(j["links"][0]["last_failure_seconds"].get<double>(), 1.5);
  EXPECT_TRUE(j["links"][1]["last_failure_seconds"].is_null());
  EXPECT_EQ(j["links_checked"], 6);

  // Without a hang a down link still degrades the job.
  FetchResult quiet_b = Node("b", {Rank("llm", 1, 0.1, "", 7)});
  *quiet_b.status->add_peers() = Peer("a", v1::PEER_STATE_DOWN, v1::FAILURE_REASON_REFUSED, 2);
  auto q = BuildJobView({Node("a", {Rank("llm", 0, 0.1, "", 7)}), quiet_b}, "llm");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->ExitCode(), 1);
  EXPECT_THAT(RenderJobText(*q), HasSubstr("\nlink b -> a down (refused, last failure 2.0 s ago)"));
}

nlohmann::json Series(const std::string& name, const std::string& node, int rank, double value) {
  return {{"metric",
           {{"__name__", name},
            {"node", node},
            {"training_job", "llm"},
            {"rank", std::to_string(rank)}}},
          {"value", {1.8e9, std::to_string(value)}}};
}

TEST(JobPrometheus, CollectiveSeriesMakeTheSameView) {
  PrometheusOptions o;
  o.job = "gw";
  EXPECT_EQ(CollectiveQuery(o, "l\"m"),
            "{__name__=~\"gloowatch_training_(collective_seconds|collective_seq|report_age_"
            "seconds)\",training_job=\"l\\\"m\",job=\"gw\"}");
  // Ranks 0 and 1 wait in call #12 for 8 s; rank 2 is between calls at #11;
  // rank 3 has not reported for 9 s (its report age); a node Prometheus does
  // not scrape now is skipped, other jobs are not read.
  std::vector<FetchResult> nodes = {Node("a", {}), Node("b", {})};
  const nlohmann::json result = {
      Series("gloowatch_training_collective_seconds", "a", 0, 8),
      Series("gloowatch_training_collective_seq", "a", 0, 12),
      Series("gloowatch_training_collective_seconds", "a", 1, 7.5),
      Series("gloowatch_training_collective_seq", "a", 1, 12),
      Series("gloowatch_training_collective_seconds", "b", 2, 0),
      Series("gloowatch_training_collective_seq", "b", 2, 11),
      Series("gloowatch_training_report_age_seconds", "b", 2, 0.4),
      Series("gloowatch_training_report_age_seconds", "b", 3, 9),
      Series("gloowatch_training_collective_seq", "b", 3, 10),
      Series("gloowatch_training_collective_seconds", "b", 3, 0),
      Series("gloowatch_training_collective_seq", "gone", 4, 2),
  };
  ASSERT_TRUE(AddCollectives(result, "llm", nodes).ok());
  auto v = BuildJobView(nodes, "llm");
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_EQ(v->ranks.size(), 4u);
  EXPECT_EQ(v->ExitCode(), 2);
  EXPECT_EQ(v->waiting_op, kPrometheusCallName);
  EXPECT_EQ(v->waiting_seq, 12u);
  EXPECT_EQ(v->ranks[0].state, RankState::kWaiting);
  EXPECT_EQ(v->ranks[1].state, RankState::kWaiting);
  EXPECT_EQ(v->ranks[2].state, RankState::kNotEntered);
  EXPECT_EQ(v->ranks[2].seq, 11u);
  EXPECT_DOUBLE_EQ(v->ranks[2].silent_seconds, 0.4);
  EXPECT_DOUBLE_EQ(v->ranks[0].silent_seconds, 0);  // no report age: heard from now
  EXPECT_EQ(v->ranks[3].state, RankState::kSilent);
  EXPECT_DOUBLE_EQ(v->ranks[3].silent_seconds, 9);
  EXPECT_THAT(RenderJobText(*v), HasSubstr("rank 3 (b): not heard from for 9.0 s (its last "
                                           "reported call #10): stopped, hung or gone"));
  EXPECT_TRUE(absl::IsInvalidArgument(AddCollectives(nlohmann::json::object(), "llm", nodes)));
  EXPECT_TRUE(absl::IsInvalidArgument(
      AddCollectives(nlohmann::json::array({{{"metric", 1}}}), "llm", nodes)));
}

}  // namespace
}  // namespace gloowatch::client

namespace gloowatch::client {
namespace {

// Host b's clock runs 0.84 s ahead of a's (as both daemons measured). Rank 1
// on b went silent 7.0 s ago, rank 0 on a entered all_reduce #41 6.5 s ago:
// by the daemons' own clocks rank 0's moment comes first (b stamps rank 1's
// report 0.84 s late); on one clock rank 1 stopped first, then rank 0 waited.
TEST(JobView, EventsOfSeveralHostsOnOneClock) {
  FetchResult a = Node("a", {Rank("llm", 0, 0.1, "all_reduce", 41, 6.5)});
  FetchResult b = Node("b", {});
  const absl::Time b_now = kNow + absl::Milliseconds(840);
  *b.status->mutable_now() = ToProtoTimestamp(b_now);
  v1::TrainingJobStatus silent = Rank("llm", 1, 0, "", 40);
  *silent.mutable_last_report() = ToProtoTimestamp(b_now - absl::Seconds(7));
  *b.status->add_training() = silent;
  auto peer = [](FetchResult& f, const std::string& name, double offset) {
    auto* p = f.status->add_peers();
    p->set_name(name);
    p->set_state(v1::PEER_STATE_UP);
    p->mutable_clock()->set_offset_seconds(offset);
  };
  peer(a, "b", 0.84);
  peer(b, "a", -0.84);
  auto v = BuildJobView({a, b}, "llm");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_TRUE(v->hung());
  EXPECT_EQ(v->clock_reference, "a");
  EXPECT_NEAR(v->clock_offsets.at("b"), 0.84, 1e-9);
  ASSERT_EQ(v->events.size(), 3u);
  EXPECT_EQ(v->events[0].rank, 1);
  EXPECT_EQ(v->events[0].what, "last heard (after #40)");
  EXPECT_TRUE(v->events[0].corrected);
  EXPECT_EQ(v->events[0].time, kNow - absl::Seconds(7));
  EXPECT_EQ(v->events[1].rank, 0);
  EXPECT_EQ(v->events[1].what, "entered all_reduce #41");
  EXPECT_EQ(v->events[1].time, kNow - absl::Seconds(6.5));
  EXPECT_EQ(v->events[2].what, "last heard (inside all_reduce #41)");
  const std::string text = RenderJobText(*v);
  EXPECT_THAT(text, HasSubstr("events in time order (UTC; times corrected by measured offsets "
                              "(to a's clock): b +0.84 s):\n"
                              "  07:59:53.000  rank 1 (b) last heard (after #40)\n"
                              "  07:59:53.500  rank 0 (a) entered all_reduce #41\n"));
  nlohmann::json j = JobToJson(*v);
  EXPECT_EQ(j["clock_correction"]["reference"], "a");
  EXPECT_EQ(j["events"][0]["rank"], 1);
  EXPECT_DOUBLE_EQ(j["events"][0]["time"].get<double>(), 1'800'000'000.0 - 7);
  // Without the offsets, the daemons' own clocks put rank 0 first.
  a.status->clear_peers();
  b.status->clear_peers();
  auto raw = BuildJobView({a, b}, "llm");
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(raw->events[0].rank, 0);
  EXPECT_FALSE(raw->events[1].corrected);
  EXPECT_THAT(RenderJobText(*raw), HasSubstr("not corrected (no offset measured): b"));
}

}  // namespace
}  // namespace gloowatch::client
