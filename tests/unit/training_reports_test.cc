#include "daemon/training/training_reports.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <limits>
#include <optional>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/simulated_clock.h"
#include "daemon/system/proc_fs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gloowatch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

v1::ReportStepRequest Req(const std::string& job, int rank, double step, double comm,
                          uint64_t n = 1) {
  v1::ReportStepRequest r;
  r.set_job(job);
  r.set_rank(rank);
  r.set_step(n);
  r.set_step_seconds(step);
  r.set_communication_seconds(comm);
  return r;
}

class TrainingReportsTest : public ::testing::Test {
 protected:
  SimulatedClock clock_;
  TrainingReports reports_{&clock_, absl::Minutes(10), 3, absl::Minutes(1)};
};

TEST_F(TrainingReportsTest, TotalsAndShare) {
  ASSERT_TRUE(reports_.Report(Req("llm", 0, 2.0, 0.5)).ok());
  ASSERT_TRUE(reports_.Report(Req("llm", 0, 2.0, 1.5)).ok());
  ASSERT_TRUE(reports_.Report(Req("llm", 1, 1.0, 0.1)).ok());
  auto s = reports_.Snapshot();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].job(), "llm");
  EXPECT_EQ(s[0].rank(), 0);
  EXPECT_EQ(s[0].steps(), 2u);
  EXPECT_DOUBLE_EQ(s[0].step_seconds_total(), 4.0);
  EXPECT_DOUBLE_EQ(s[0].communication_seconds_total(), 2.0);
  ASSERT_TRUE(s[0].has_communication_share());
  EXPECT_DOUBLE_EQ(s[0].communication_share(), 0.5);
  EXPECT_DOUBLE_EQ(s[1].communication_share(), 0.1);
  EXPECT_EQ(s[0].last_report().seconds(), absl::ToUnixSeconds(clock_.Now()));
}

TEST_F(TrainingReportsTest, ShareCoversRecentWindowOnly) {
  ASSERT_TRUE(reports_.Report(Req("j", 0, 1.0, 0.9)).ok());
  clock_.Advance(absl::Seconds(90));  // outside the 1 min window
  ASSERT_TRUE(reports_.Report(Req("j", 0, 1.0, 0.1)).ok());
  auto s = reports_.Snapshot();
  EXPECT_DOUBLE_EQ(s[0].communication_share(), 0.1);
  EXPECT_DOUBLE_EQ(s[0].communication_seconds_total(), 1.0);  // totals keep everything
  clock_.Advance(absl::Seconds(61));
  EXPECT_FALSE(reports_.Snapshot()[0].has_communication_share());  // no data in window
}

TEST_F(TrainingReportsTest, RejectsBadRequests) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  struct Case {
    v1::ReportStepRequest r;
    const char* message;
  };
  const std::vector<Case> cases = {
      {Req("", 0, 1, 0), "job: must not be empty"},
      {Req(std::string(65, 'a'), 0, 1, 0), "65 characters"},
      {Req("bad job", 0, 1, 0), "0x20 not allowed"},
      {Req("bad\njob", 0, 1, 0), "0x0a"},
      {Req("j", -1, 1, 0), "rank: -1"},
      {Req("j", 0, -1, 0), "step_seconds"},
      {Req("j", 0, 0, 0), "step_seconds"},
      {Req("j", 0, nan, 0), "step_seconds"},
      {Req("j", 0, inf, 0), "step_seconds"},
      {Req("j", 0, 86401, 0), "step_seconds"},
      {Req("j", 0, 1, -0.1), "communication_seconds"},
      {Req("j", 0, 1, nan), "communication_seconds"},
      {Req("j", 0, 1, 1.5), "> step_seconds"},
  };
  for (const auto& c : cases) {
    absl::Status s = reports_.Report(c.r);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << c.message << ": " << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.message));
  }
  EXPECT_TRUE(reports_.Snapshot().empty());
  EXPECT_TRUE(reports_.Report(Req(std::string(64, 'a'), 0, 86400, 86400)).ok());
  EXPECT_TRUE(reports_.Report(Req("A-z_0.9:x", 0, 1, 0)).ok());
}

TEST_F(TrainingReportsTest, TorchrunFieldsMustBeConsistent) {
  auto with = [](int rank, std::optional<int> local_rank, std::optional<int> world_size) {
    v1::ReportStepRequest r = Req("j", rank, 1, 0);
    if (local_rank) r.set_local_rank(*local_rank);
    if (world_size) r.set_world_size(*world_size);
    return r;
  };
  EXPECT_EQ(reports_.Report(with(0, -1, std::nullopt)).message(), "local_rank: -1 < 0");
  EXPECT_EQ(reports_.Report(with(0, std::nullopt, 0)).message(), "world_size: 0 < 1");
  EXPECT_EQ(reports_.Report(with(2, std::nullopt, 2)).message(), "rank: 2 >= world_size 2");
  EXPECT_EQ(reports_.Report(with(1, 4, 4)).message(), "local_rank: 4 >= world_size 4");
  EXPECT_TRUE(reports_.Report(with(1, 3, 4)).ok());
  EXPECT_EQ(reports_.Report(with(1, 4, 2)).message(), "local_rank: 4 >= world_size 2");
  EXPECT_TRUE(reports_.Report(with(1, 1, 2)).ok());
  EXPECT_TRUE(reports_.Report(with(7, 3, std::nullopt)).ok());  // world size unknown
}

TEST_F(TrainingReportsTest, MaxSeries) {
  for (int r = 0; r < 3; ++r) ASSERT_TRUE(reports_.Report(Req("j", r, 1, 0)).ok());
  absl::Status s = reports_.Report(Req("j", 3, 1, 0));
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  EXPECT_TRUE(reports_.Report(Req("j", 2, 1, 0)).ok());  // existing series still fine
}

TEST_F(TrainingReportsTest, FullCapEvictsTheLongestSilentSeries) {
  // A flood of one-off series fills the cap (3 here) ...
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(reports_.Report(Req("flood", r, 1, 0)).ok());
    clock_.Advance(absl::Seconds(1));
  }
  std::optional<TrainingReports::Key> evicted;
  absl::Status s = reports_.Report(Req("real", 0, 1, 0), &evicted);
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("one silent for 1m gives its place up"));
  EXPECT_FALSE(evicted.has_value());
  // ... but a real job gets in once they have been silent a minute, taking
  // the slot of the series silent longest, and keeps reporting.
  clock_.Advance(absl::Seconds(58));  // flood 0 silent 61 s, flood 2 59 s
  ASSERT_TRUE(reports_.Report(Req("real", 0, 1, 0.5), &evicted).ok());
  EXPECT_THAT(evicted, ::testing::Optional(Pair("flood", 0)));
  evicted.reset();
  ASSERT_TRUE(reports_.Report(Req("real", 1, 1, 0.5), &evicted).ok());
  EXPECT_THAT(evicted, ::testing::Optional(Pair("flood", 1)));
  // flood 2 was silent 59 s: not evictable yet.
  EXPECT_TRUE(absl::IsResourceExhausted(reports_.Report(Req("real", 2, 1, 0.5))));
  EXPECT_TRUE(reports_.Report(Req("real", 0, 1, 0.5)).ok());  // existing series unaffected
  auto snap = reports_.Snapshot();
  ASSERT_EQ(snap.size(), 3u);
  EXPECT_EQ(snap[0].job(), "flood");
  EXPECT_EQ(snap[1].job(), "real");
  EXPECT_EQ(snap[1].steps(), 2u);
}

TEST(TrainingReportsShare, RemoteClientHoldsAQuarterThisHostTheWholeCap) {
  SimulatedClock clock;
  TrainingReports reports(&clock, absl::Minutes(10), 8);  // share: 2
  ASSERT_TRUE(reports.Report(Req("a", 0, 1, 0), nullptr, "10.0.0.2").ok());
  ASSERT_TRUE(reports.Report(Req("a", 1, 1, 0), nullptr, "10.0.0.2").ok());
  absl::Status s = reports.Report(Req("a", 2, 1, 0), nullptr, "10.0.0.2");
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  EXPECT_EQ(s.message(), "client 10.0.0.2 already has 2 of the 8 (job, rank) series, its share");
  EXPECT_TRUE(reports.Report(Req("a", 1, 1, 0), nullptr, "10.0.0.2").ok());  // its own: fine
  EXPECT_TRUE(reports.Report(Req("b", 0, 1, 0), nullptr, "10.0.0.3").ok());  // another client
  for (int r = 0; r < 5; ++r) ASSERT_TRUE(reports.Report(Req("local", r, 1, 0)).ok());
  EXPECT_EQ(reports.Snapshot().size(), 8u);
}

TEST_F(TrainingReportsTest, ExpiryReturnsKeysAndFreesSlots) {
  ASSERT_TRUE(reports_.Report(Req("a", 0, 1, 0)).ok());
  clock_.Advance(absl::Minutes(5));
  ASSERT_TRUE(reports_.Report(Req("b", 1, 1, 0)).ok());
  EXPECT_TRUE(reports_.Expire().empty());
  clock_.Advance(absl::Minutes(5));
  EXPECT_THAT(reports_.Expire(), ElementsAre(Pair("a", 0)));
  ASSERT_EQ(reports_.Snapshot().size(), 1u);
  clock_.Advance(absl::Minutes(5));
  EXPECT_THAT(reports_.Expire(), ElementsAre(Pair("b", 1)));
  EXPECT_TRUE(reports_.Snapshot().empty());
}

v1::CollectiveReport Coll(const std::string& job, int rank, const std::string& op, uint64_t seq,
                          double inside) {
  v1::CollectiveReport r;
  r.set_job(job);
  r.set_rank(rank);
  r.mutable_state()->set_op(op);
  r.mutable_state()->set_seq(seq);
  r.mutable_state()->set_group("world");
  r.mutable_state()->set_bytes(1024);
  r.mutable_state()->set_inside_seconds(inside);
  return r;
}

TEST_F(TrainingReportsTest, CollectiveStateAndTimeInsideGrowWithoutReports) {
  ASSERT_TRUE(reports_.Report(Req("j", 0, 1, 0.5)).ok());
  ASSERT_TRUE(reports_.ReportCollective(Coll("j", 0, "all_reduce", 41, 1.5)).ok());
  ASSERT_TRUE(reports_.ReportCollective(Coll("j", 1, "", 40, 0)).ok());  // a heartbeat series
  clock_.Advance(absl::Seconds(10));  // rank 0 stays inside, says nothing
  auto s = reports_.Snapshot();
  ASSERT_EQ(s.size(), 2u);
  ASSERT_TRUE(s[0].has_collective());
  EXPECT_EQ(s[0].collective().op(), "all_reduce");
  EXPECT_EQ(s[0].collective().seq(), 41u);
  EXPECT_EQ(s[0].collective().bytes(), 1024u);
  EXPECT_DOUBLE_EQ(s[0].collective().inside_seconds(), 11.5);
  EXPECT_EQ(s[0].steps(), 1u);
  EXPECT_EQ(s[1].steps(), 0u);
  EXPECT_EQ(s[1].collective().seq(), 40u);
  EXPECT_DOUBLE_EQ(s[1].collective().inside_seconds(), 0);
  EXPECT_EQ(s[1].last_report().seconds(), absl::ToUnixSeconds(clock_.Now() - absl::Seconds(10)));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(reports_.ReportCollective(Coll("j", 0, "all reduce", 1, 0)).message(),
            "op: character 0x20 not allowed (use [A-Za-z0-9_.:-])");
  EXPECT_EQ(reports_.ReportCollective(Coll("j", 0, "", 1, 2)).message(),
            "inside_seconds: > 0 but no op (not inside a collective)");
  EXPECT_TRUE(absl::IsInvalidArgument(reports_.ReportCollective(Coll("j", 0, "x", 1, nan))));
  EXPECT_TRUE(absl::IsInvalidArgument(reports_.ReportCollective(Coll("j", -1, "x", 1, 0))));
  EXPECT_TRUE(absl::IsInvalidArgument(reports_.ReportCollective(Coll("", 0, "x", 1, 0))));
  v1::CollectiveReport long_group = Coll("j", 0, "x", 1, 0);
  long_group.mutable_state()->set_group(std::string(65, 'g'));
  EXPECT_EQ(reports_.ReportCollective(long_group).message(), "group: 65 characters, at most 64");
}

TEST(TrainingReportsConcurrency, ParallelReporters) {
  const Clock* clock = RealClock::Get();
  TrainingReports reports(clock, absl::Minutes(10), 100);
  std::vector<std::thread> threads;
  for (int r = 0; r < 4; ++r) {
    threads.emplace_back([&, r] {
      for (int i = 0; i < 1000; ++i) ASSERT_TRUE(reports.Report(Req("j", r, 1.0, 0.25, i)).ok());
    });
  }
  for (auto& t : threads) t.join();
  auto s = reports.Snapshot();
  ASSERT_EQ(s.size(), 4u);
  for (const auto& j : s) {
    EXPECT_EQ(j.steps(), 1000u);
    EXPECT_DOUBLE_EQ(j.communication_share(), 0.25);
  }
}

// The start time (field 22) of /proc/PID/stat.
uint64_t StartTicks(pid_t pid) {
  auto stat = ReadProcFile(absl::StrCat("/proc/", pid, "/stat"));
  if (!stat.ok()) return 0;
  std::vector<std::string> f =
      absl::StrSplit(stat->substr(stat->rfind(')') + 1), ' ', absl::SkipEmpty());
  uint64_t ticks = 0;
  return f.size() > 19 && absl::SimpleAtoi(f[19], &ticks) ? ticks : 0;
}

// The process a rank reports is judged from /proc at each snapshot: running,
// stopped (SIGSTOP), gone (killed and reaped); a pid from a remote reporter,
// one this daemon cannot see, or with another start time is not kept.
TEST_F(TrainingReportsTest, ProcessOfTheRankRunningStoppedGone) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pause();
    _exit(0);
  }
  auto report = [&](int rank, pid_t pid, uint64_t start, const std::string& client = "") {
    v1::CollectiveReport r = Coll("j", rank, "", 3, 0);
    r.set_pid(static_cast<uint32_t>(pid));
    r.set_start_time_ticks(start);
    return reports_.ReportCollective(r, nullptr, client);
  };
  const uint64_t start = StartTicks(child);
  ASSERT_GT(start, 0u);
  ASSERT_TRUE(report(0, child, start).ok());
  ASSERT_TRUE(report(1, child, start + 1).ok());                 // another process now
  ASSERT_TRUE(report(2, child, start, "ipv4:10.0.0.9:1").ok());  // remote: its pid means nothing
  auto process = [&](int rank) {
    for (const auto& t : reports_.Snapshot()) {
      if (t.rank() == rank) return t.process();
    }
    return std::string("(no series)");
  };
  EXPECT_EQ(process(0), "running");
  EXPECT_EQ(process(1), "");
  EXPECT_EQ(process(2), "");
  ASSERT_EQ(kill(child, SIGSTOP), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, WUNTRACED), child);
  EXPECT_EQ(process(0), "stopped");
  ASSERT_EQ(kill(child, SIGKILL), 0);
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_EQ(process(0), "gone");
  // A report without a pid forgets it.
  ASSERT_TRUE(reports_.ReportCollective(Coll("j", 0, "", 4, 0)).ok());
  EXPECT_EQ(process(0), "");
}

// A child process that waits until killed.
pid_t Child() {
  const pid_t child = fork();
  if (child == 0) {
    pause();
    _exit(0);
  }
  return child;
}

void KillAndReap(pid_t pid) {
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
}

// A rank whose process is gone is in no call any more: its collective ends
// (op cleared, nothing inside, the seq kept) and what it was inside is kept
// apart; a job whose every rank is gone has ended, and says how.
TEST(TrainingReportsGone, AGoneRankIsInNoCallAndAJobOfGoneRanksHasEnded) {
  SimulatedClock clock;
  TrainingReports reports(&clock, absl::Minutes(10), 16);
  std::vector<pid_t> children;
  for (int i = 0; i < 4; ++i) {
    children.push_back(Child());
    ASSERT_GT(children.back(), 0);
  }
  auto report = [&](const std::string& job, int rank, const std::string& op, double inside,
                    pid_t pid) {
    v1::CollectiveReport r = Coll(job, rank, op, 9, inside);
    r.set_pid(static_cast<uint32_t>(pid));
    r.set_start_time_ticks(StartTicks(pid));
    return reports.ReportCollective(r);
  };
  // Job j: two ranks inside all_reduce #9; job k: one rank between calls;
  // job s: a stopped rank; job u: a rank whose process is unknown.
  ASSERT_TRUE(report("j", 0, "all_reduce", 2, children[0]).ok());
  ASSERT_TRUE(report("j", 1, "all_reduce", 2, children[1]).ok());
  ASSERT_TRUE(report("k", 0, "", 0, children[2]).ok());
  ASSERT_TRUE(report("s", 0, "barrier", 1, children[3]).ok());
  ASSERT_TRUE(reports.ReportCollective(Coll("u", 0, "all_reduce", 3, 1)).ok());
  ASSERT_EQ(kill(children[3], SIGSTOP), 0);
  int status = 0;
  ASSERT_EQ(waitpid(children[3], &status, WUNTRACED), children[3]);
  clock.Advance(absl::Seconds(30));  // nobody reports any more
  auto find = [](const std::vector<v1::TrainingJobStatus>& all, const std::string& job, int rank) {
    for (const v1::TrainingJobStatus& t : all) {
      if (t.job() == job && t.rank() == rank) return t;
    }
    return v1::TrainingJobStatus();
  };
  auto state = [](const std::vector<v1::TrainingJobSummary>& jobs, const std::string& job) {
    for (const v1::TrainingJobSummary& j : jobs) {
      if (j.job() == job) return std::make_pair(j.state(), j.ended_how());
    }
    return std::make_pair(std::string("(none)"), std::string());
  };

  std::vector<v1::TrainingJobStatus> all = reports.Snapshot();
  std::vector<v1::TrainingJobSummary> jobs = SummarizeTrainingJobs(all);
  ASSERT_EQ(jobs.size(), 4u);
  EXPECT_EQ(jobs[0].job(), "j");
  EXPECT_THAT(jobs[0].ranks(), ElementsAre(0, 1));
  EXPECT_EQ(state(jobs, "j"), std::make_pair(std::string("running"), std::string()));
  EXPECT_EQ(state(jobs, "k"), std::make_pair(std::string("running"), std::string()));
  EXPECT_EQ(state(jobs, "s"), std::make_pair(std::string("stopped"), std::string()));
  EXPECT_EQ(state(jobs, "u"), std::make_pair(std::string(""), std::string()));
  // Stopped, unknown and running ranks stay inside their call, time growing.
  EXPECT_EQ(find(all, "j", 0).collective().op(), "all_reduce");
  EXPECT_DOUBLE_EQ(find(all, "j", 0).collective().inside_seconds(), 32);
  EXPECT_DOUBLE_EQ(find(all, "s", 0).collective().inside_seconds(), 31);
  EXPECT_DOUBLE_EQ(find(all, "u", 0).collective().inside_seconds(), 31);
  EXPECT_FALSE(find(all, "j", 0).has_died_inside());

  // Rank 0 of j killed inside all_reduce: in no call now; j runs on (rank 1).
  KillAndReap(children[0]);
  all = reports.Snapshot();
  const v1::TrainingJobStatus gone = find(all, "j", 0);
  EXPECT_EQ(gone.process(), "gone");
  EXPECT_EQ(gone.collective().op(), "");
  EXPECT_EQ(gone.collective().inside_seconds(), 0);
  EXPECT_EQ(gone.collective().seq(), 9u);
  ASSERT_TRUE(gone.has_died_inside());
  EXPECT_EQ(gone.died_inside().op(), "all_reduce");
  EXPECT_EQ(gone.died_inside().seq(), 9u);
  EXPECT_EQ(gone.died_inside().bytes(), 1024u);
  EXPECT_DOUBLE_EQ(gone.died_inside().inside_seconds(), 2);  // as of its last report
  EXPECT_EQ(state(SummarizeTrainingJobs(all), "j"),
            std::make_pair(std::string("running"), std::string()));

  // Every rank of j gone: ended, having died inside a collective. k's rank
  // went between calls: exited.
  KillAndReap(children[1]);
  KillAndReap(children[2]);
  all = reports.Snapshot();
  jobs = SummarizeTrainingJobs(all);
  EXPECT_EQ(state(jobs, "j"),
            std::make_pair(std::string("ended"), std::string("died_in_collective")));
  EXPECT_EQ(state(jobs, "k"), std::make_pair(std::string("ended"), std::string("exited")));
  EXPECT_FALSE(find(all, "k", 0).has_died_inside());
  EXPECT_EQ(find(all, "j", 1).collective().op(), "");

  // The job restarted under the same name: the new process's report makes
  // the rank live and inside again, and the job running.
  const pid_t again = Child();
  ASSERT_GT(again, 0);
  ASSERT_TRUE(report("j", 0, "all_reduce", 0.5, again).ok());
  all = reports.Snapshot();
  EXPECT_EQ(find(all, "j", 0).process(), "running");
  EXPECT_EQ(find(all, "j", 0).collective().op(), "all_reduce");
  EXPECT_FALSE(find(all, "j", 0).has_died_inside());
  EXPECT_EQ(state(SummarizeTrainingJobs(all), "j"),
            std::make_pair(std::string("running"), std::string()));

  KillAndReap(again);
  kill(children[3], SIGCONT);
  KillAndReap(children[3]);
}

}  // namespace
}  // namespace gloowatch
