// Hang attribution end to end: three namespace hosts, a real gloowatchd on
// each, and a real torch.distributed job on the Gloo backend with one rank
// per host (tests/client/torch/netns_job.py, instrumented by
// `gloowatch_report.py run` so each rank reports to its own host's daemon).
// Each scenario breaks the job and asks the real `gloowatch job` (inside h1's
// namespace, where the hosts' addresses exist): a SIGSTOPped rank, a
// partition between two hosts (with a real Prometheus scraping the daemons,
// and `explain-log --prometheus` on the job's own log), a SIGKILLed rank.
// Needs root and Debian's torch; skips otherwise. See docs/testing.md.
#include <signal.h>

#include <functional>
#include <iostream>
#include <memory>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/netns_cluster.h"
#include "tests/support/prometheus.h"

namespace gloowatch::testing {
namespace {

constexpr int kRanks = 3;
constexpr char kJob[] = "netjob";
constexpr char kPython[] = "/usr/bin/python3";
constexpr int kPrometheusPort = 9090;  // inside h1's namespace, on its loopback

struct CliResult {
  int exit_code = -1;
  std::string output;
  nlohmann::json json;  // discarded when the output is not JSON
};

class NetnsJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = NetnsUnavailableReason();
    if (!reason.empty()) GTEST_SKIP() << "netns harness unavailable: " << reason;
    if (!RunCommand({kPython, "-c", "import torch, grpc"}, absl::Seconds(60)).ok()) {
      GTEST_SKIP() << kPython << " cannot import torch and grpc";
    }
    NetnsClusterOptions options;
    options.hosts = kRanks;
    cluster_ = std::make_unique<NetnsCluster>(options);
    absl::Status s = cluster_->Setup();
    ASSERT_TRUE(s.ok()) << s;
    cluster_->StartAll();
  }

  void TearDown() override {
    if (cluster_ && HasFailure()) {
      std::cerr << cluster_->AllLogs();
      for (int i = 0; i < static_cast<int>(ranks_.size()); ++i) {
        std::cerr << "--- rank " << i << " ---\n" << ranks_[i]->Log();
      }
      if (prometheus_) std::cerr << "--- prometheus ---\n" << prometheus_->Log();
    }
    ranks_.clear();  // SIGKILLs what still runs (a stopped rank too)
    prometheus_.reset();
    cluster_.reset();
  }

  std::string RankLogPath(int rank) const {
    return absl::StrCat(cluster_->dir().path(), "/rank", rank, ".log");
  }

  // Rank i on host i, reporting to its host's daemon every 0.2 s.
  void StartRanks(int pg_timeout_seconds) {
    for (int i = 0; i < kRanks; ++i) {
      std::map<std::string, std::string> env = {
          {"RANK", absl::StrCat(i)},
          {"WORLD_SIZE", absl::StrCat(kRanks)},
          {"LOCAL_RANK", "0"},
          {"MASTER_ADDR", cluster_->ip(0)},
          {"MASTER_PORT", "29500"},
          {"GLOO_SOCKET_IFNAME", "eth0"},
          {"GLOOWATCH_JOB", kJob},
          {"GLOOWATCH_DAEMON", cluster_->grpc(i)},
          {"GLOOWATCH_FLUSH_INTERVAL", "0.2"},
          {"PG_TIMEOUT", absl::StrCat(pg_timeout_seconds)},
          {"DURATION", "150"},
          {"LINGER", "60"},
          {"OMP_NUM_THREADS", "1"},
          {"PYTHONUNBUFFERED", "1"},
      };
      ranks_.push_back(std::make_unique<Process>(
          std::vector<std::string>{"ip", "netns", "exec", cluster_->ns(i), kPython,
                                   SourcePath("client/reporter/gloowatch_report.py"), "run",
                                   SourcePath("tests/client/torch/netns_job.py")},
          RankLogPath(i), env));
    }
  }

  // The real CLI inside h1's namespace.
  CliResult Cli(std::vector<std::string> args) {
    std::vector<std::string> argv = {BinaryPath("client/gloowatch")};
    argv.insert(argv.end(), args.begin(), args.end());
    CommandResult r = cluster_->Exec(0, argv, absl::Seconds(30));
    EXPECT_FALSE(r.timed_out) << absl::StrJoin(argv, " ");
    CliResult out;
    out.exit_code = r.exit_code;
    out.output = r.output;
    out.json = nlohmann::json::parse(r.output, nullptr, /*allow_exceptions=*/false);
    return out;
  }

  CliResult Job(bool json) {
    std::vector<std::string> daemons;
    for (int i = 0; i < kRanks; ++i) daemons.push_back(cluster_->grpc(i));
    std::vector<std::string> args = {"job", kJob, "--daemons", absl::StrJoin(daemons, ",")};
    if (json) args.push_back("--json");
    CliResult r = Cli(args);
    if (!json) std::cout << "gloowatch job (exit " << r.exit_code << "):\n" << r.output;
    return r;
  }

  // Every rank reports and has made 20 calls, nobody waits: the job runs.
  void WaitRunning() {
    const absl::Time deadline = absl::Now() + absl::Seconds(90);
    CliResult r;
    while (absl::Now() < deadline) {
      r = Job(true);
      // (Also until every link is up: on a loaded machine a probe may time
      // out now and then.)
      if (!r.json.is_discarded() && r.json["ranks"].size() == kRanks && r.exit_code == 0) {
        int min_seq = 1 << 30;
        for (const auto& x : r.json["ranks"]) min_seq = std::min(min_seq, x["seq"].get<int>());
        if (min_seq >= 20) break;
      }
      absl::SleepFor(absl::Milliseconds(500));
    }
    ASSERT_FALSE(r.json.is_discarded()) << r.output;
    ASSERT_EQ(r.json["ranks"].size(), static_cast<size_t>(kRanks)) << r.output;
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.json["verdict"], "running") << r.output;
    EXPECT_EQ(r.json["links"].size(), 0u) << r.output;
    EXPECT_EQ(r.json["links_checked"], kRanks * (kRanks - 1)) << r.output;
    for (int i = 0; i < kRanks; ++i) {
      EXPECT_EQ(r.json["ranks"][i]["node"], cluster_->name(i)) << r.output;
    }
  }

  // A real Prometheus in h1's namespace, on its loopback, scraping every
  // daemon every second.
  void StartPrometheus() {
    std::vector<std::string> targets;
    for (int i = 0; i < kRanks; ++i) {
      targets.push_back(absl::StrCat(cluster_->ip(i), ":", NetnsCluster::kMetricsPort));
    }
    PrometheusOptions options;
    options.wrapper = {"ip", "netns", "exec", cluster_->ns(0)};
    prometheus_ = gloowatch::testing::StartPrometheus(
        cluster_->dir().Write("prometheus.yml", PrometheusYaml(targets)), cluster_->dir().path(),
        kPrometheusPort, options);
  }

  std::string PrometheusUrl() const { return absl::StrCat("http://127.0.0.1:", kPrometheusPort); }

  using JsonDone = std::function<bool(const nlohmann::json&)>;

  // `ask` every second until its JSON satisfies `done` (at most 20 s).
  static CliResult AskUntil(const std::function<CliResult()>& ask, const JsonDone& done) {
    CliResult r;
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (absl::Now() < deadline) {
      r = ask();
      if (!r.json.is_discarded() && done(r.json)) break;
      absl::SleepFor(absl::Seconds(1));
    }
    return r;
  }

  CliResult JobUntil(const JsonDone& done) {
    return AskUntil([&] { return Job(true); }, done);
  }

  CliResult JobFromPrometheus(const JsonDone& done) {
    return AskUntil(
        [&] {
          return Cli({"job", kJob, "--prometheus", PrometheusUrl(), "--json"});
        },
        done);
  }

  std::unique_ptr<NetnsCluster> cluster_;
  std::vector<std::unique_ptr<Process>> ranks_;
  std::unique_ptr<Process> prometheus_;
};

TEST_F(NetnsJobTest, StoppedRankIsNamedAsSilent) {
  StartPrometheus();
  ASSERT_TRUE(cluster_->WaitAllUp(absl::Seconds(60), /*measured=*/false).ok())
      << cluster_->AllLogs();
  StartRanks(/*pg_timeout_seconds=*/60);
  WaitRunning();
  if (HasFatalFailure()) return;

  ranks_[2]->Signal(SIGSTOP);
  const absl::Time stopped = absl::Now();
  // Past the 5 s "waiting" threshold.
  CliResult r = JobUntil([](const nlohmann::json& j) {
    return j["verdict"] == "hung" && j["suspects"].size() == 1 &&
           j["waiting"]["ranks"] == nlohmann::json({0, 1});
  });
  const double since_stop = absl::ToDoubleSeconds(absl::Now() - stopped);
  ASSERT_FALSE(r.json.is_discarded()) << r.output;
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(r.json["verdict"], "hung") << r.output;
  const auto& w = r.json["waiting"];
  EXPECT_EQ(w["op"], "all_reduce") << r.output;
  EXPECT_EQ(w["ranks"], nlohmann::json({0, 1})) << r.output;
  EXPECT_GE(w["seconds"].get<double>(), 5.0) << r.output;
  EXPECT_LE(w["seconds"].get<double>(), since_stop + 1.0) << r.output;
  ASSERT_EQ(r.json["suspects"].size(), 1u) << r.output;
  const auto& suspect = r.json["suspects"][0];
  EXPECT_EQ(suspect["rank"], 2);
  EXPECT_EQ(suspect["node"], cluster_->name(2));
  EXPECT_EQ(suspect["state"], "silent");
  EXPECT_EQ(suspect["process"], "stopped") << r.output;  // h3's daemon sees it in state T
  EXPECT_GE(suspect["silent_seconds"].get<double>(), 5.0) << r.output;
  EXPECT_LE(suspect["silent_seconds"].get<double>(), since_stop + 1.0) << r.output;
  // Its last report is at most a few calls before the one the others wait in.
  EXPECT_LE(suspect["seq"].get<int>(), w["seq"].get<int>()) << r.output;
  EXPECT_GE(suspect["seq"].get<int>(), w["seq"].get<int>() - 12) << r.output;
  // The network is fine: the daemons' links between the hosts are all up.
  EXPECT_EQ(r.json["links"].size(), 0u) << r.output;

  CliResult text = Job(false);
  EXPECT_EQ(text.exit_code, 2) << text.output;
  // Both wait in one call, or each in its own (a rank can finish a call whose
  // sends the kernel buffered and enter the next).
  EXPECT_TRUE(absl::StrContains(text.output, "HUNG: ranks 0, 1 wait in all_reduce #") ||
              (absl::StrContains(text.output, " waits in all_reduce #") &&
               absl::StrContains(text.output, " in all_reduce #")))
      << text.output;
  EXPECT_TRUE(absl::StrContains(
      text.output, absl::StrCat("rank 2 (", cluster_->name(2),
                                "): process stopped (SIGSTOP or a debugger), not heard from for ")))
      << text.output;
  EXPECT_FALSE(absl::StrContains(text.output, "likely reason")) << text.output;

  // From Prometheus: the same waiting ranks, and rank 2 silent by its report
  // age (whether its process is stopped is not in Prometheus). Each node is
  // scraped at its own moment, so the view is awaited until it holds both
  // waiting ranks.
  CliResult p = JobFromPrometheus([](const nlohmann::json& j) {
    return j["verdict"] == "hung" && j["suspects"].size() == 1 &&
           j["suspects"][0]["state"] == "silent" &&
           j["suspects"][0].value("silent_seconds", 0.0) >= 5.0 &&
           j["waiting"]["ranks"] == nlohmann::json({0, 1});
  });
  ASSERT_FALSE(p.json.is_discarded()) << p.output;
  EXPECT_EQ(p.exit_code, 2) << p.output;
  EXPECT_EQ(p.json["waiting"]["ranks"], nlohmann::json({0, 1})) << p.output;
  ASSERT_EQ(p.json["suspects"].size(), 1u) << p.output;
  EXPECT_EQ(p.json["suspects"][0]["rank"], 2) << p.output;
  EXPECT_EQ(p.json["suspects"][0]["state"], "silent") << p.output;
  EXPECT_EQ(p.json["suspects"][0]["seq"], suspect["seq"]) << p.output;
  EXPECT_GE(p.json["suspects"][0]["silent_seconds"].get<double>(), 5.0) << p.output;
  EXPECT_EQ(p.json["links"].size(), 0u) << p.output;
}

TEST_F(NetnsJobTest, KilledRankIsNamedAsGone) {
  ASSERT_TRUE(cluster_->WaitAllUp(absl::Seconds(60), /*measured=*/false).ok())
      << cluster_->AllLogs();
  StartRanks(/*pg_timeout_seconds=*/60);
  WaitRunning();
  if (HasFatalFailure()) return;

  ranks_[1]->Signal(SIGKILL);
  ASSERT_EQ(ranks_[1]->Wait(absl::Seconds(10)), std::optional<int>(-SIGKILL));
  // The survivors' next all_reduce fails at once (the kernel closed the dead
  // rank's sockets); they log it and stay up, heard from.
  for (int i : {0, 2}) {
    EXPECT_TRUE(WaitFor([&] { return absl::StrContains(ranks_[i]->Log(), "all_reduce failed"); },
                        absl::Seconds(20)))
        << "rank " << i << ": " << ranks_[i]->Log();
  }
  // Past the 3 s "silent" threshold.
  CliResult r = JobUntil([](const nlohmann::json& j) {
    return j["verdict"] == "degraded" && j["suspects"].size() == 1;
  });
  ASSERT_FALSE(r.json.is_discarded()) << r.output;
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.json["verdict"], "degraded") << r.output;
  ASSERT_EQ(r.json["suspects"].size(), 1u) << r.output;
  const auto& suspect = r.json["suspects"][0];
  EXPECT_EQ(suspect["rank"], 1);
  EXPECT_EQ(suspect["node"], cluster_->name(1));
  EXPECT_EQ(suspect["state"], "gone") << r.output;
  EXPECT_EQ(suspect["process"], "gone") << r.output;
  EXPECT_GE(suspect["silent_seconds"].get<double>(), 3.0) << r.output;
  for (int i : {0, 2}) {
    EXPECT_EQ(r.json["ranks"][i]["state"], "running") << r.output;
    EXPECT_EQ(r.json["ranks"][i]["process"], "running") << r.output;
  }
  EXPECT_EQ(r.json["links"].size(), 0u) << r.output;

  CliResult text = Job(false);
  EXPECT_TRUE(absl::StrContains(
      text.output, absl::StrCat("rank 1 (", cluster_->name(1),
                                "): process gone (exited or killed), not heard from for ")))
      << text.output;
}

TEST_F(NetnsJobTest, PartitionNamesTheLinkAndExplainLogFindsItInPrometheus) {
  StartPrometheus();

  ASSERT_TRUE(cluster_->WaitAllUp(absl::Seconds(60), /*measured=*/false).ok())
      << cluster_->AllLogs();
  StartRanks(/*pg_timeout_seconds=*/25);
  WaitRunning();
  if (HasFatalFailure()) return;
  // Prometheus has every link up before the partition.
  const std::string all_up =
      absl::StrCat("/api/v1/query?query=", UrlEncode("count(gloowatch_peer_up == 1)"));
  std::string body;
  ASSERT_TRUE(WaitFor(
      [&] {
        absl::StatusOr<std::string> b =
            HttpGetInNetns(cluster_->ns(0), "127.0.0.1", kPrometheusPort, all_up);
        body = b.ok() ? *b : std::string(b.status().message());
        return absl::StrContains(body, absl::StrCat("\"", kRanks * (kRanks - 1), "\"]"));
      },
      absl::Seconds(30)))
      << body;

  ASSERT_TRUE(cluster_->Partition(1, 2).ok());
  const std::set<std::string> cut = {cluster_->name(1), cluster_->name(2)};
  // Every rank ends up inside the same all_reduce; the daemons on h2 and h3
  // see their link time out.
  CliResult r;
  bool named = false;
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (!named && absl::Now() < deadline) {
    absl::SleepFor(absl::Seconds(1));
    r = Job(true);
    if (r.json.is_discarded() || r.json["verdict"] != "hung") continue;
    for (const auto& l : r.json["links"]) named = named || l["state"] == "down";
  }
  ASSERT_TRUE(named) << r.output;
  EXPECT_EQ(r.exit_code, 2) << r.output;
  for (const auto& l : r.json["links"]) {
    EXPECT_EQ((std::set<std::string>{l["node"].get<std::string>(), l["peer"].get<std::string>()}),
              cut)
        << r.output;
    // Input dropped both ways: the pairs time out, the OpenProbePair RPC's
    // TCP handshake never completes (gRPC calls that unreachable).
    if (l["state"] == "down") {
      EXPECT_TRUE(l["reason"] == "timeout" || l["reason"] == "unreachable") << r.output;
    }
  }
  EXPECT_EQ(r.json["suspects"].size(), 0u) << r.output;  // nobody silent or behind
  CliResult text = Job(false);
  EXPECT_EQ(text.exit_code, 2) << text.output;
  const std::string h2_h3 =
      absl::StrCat("likely reason: link ", cluster_->name(1), " -> ", cluster_->name(2), " down (");
  const std::string h3_h2 =
      absl::StrCat("likely reason: link ", cluster_->name(2), " -> ", cluster_->name(1), " down (");
  EXPECT_TRUE(absl::StrContains(text.output, h2_h3) || absl::StrContains(text.output, h3_h2))
      << text.output;

  // The same from Prometheus: the waiting ranks (their call's name is not in
  // the series) and the cut link, down with probe failures. A rank's time
  // inside its call is as old as its node's last scrape: the ranks are seen
  // waiting one scrape after another.
  CliResult from_prometheus = JobFromPrometheus([](const nlohmann::json& j) {
    return j["verdict"] == "hung" && j["links"].size() == 2 &&
           j["waiting"]["ranks"] == nlohmann::json({0, 1, 2});
  });
  const bool prometheus_named =
      !from_prometheus.json.is_discarded() && from_prometheus.json["links"].size() == 2;
  ASSERT_TRUE(prometheus_named) << from_prometheus.output;
  EXPECT_EQ(from_prometheus.exit_code, 2) << from_prometheus.output;
  EXPECT_EQ(from_prometheus.json["waiting"]["ranks"], nlohmann::json({0, 1, 2}))
      << from_prometheus.output;
  EXPECT_EQ(from_prometheus.json["waiting"]["op"], "collective") << from_prometheus.output;
  EXPECT_EQ(from_prometheus.json["links_checked"], kRanks * (kRanks - 1)) << from_prometheus.output;
  for (const auto& l : from_prometheus.json["links"]) {
    EXPECT_EQ((std::set<std::string>{l["node"].get<std::string>(), l["peer"].get<std::string>()}),
              cut)
        << from_prometheus.output;
    EXPECT_EQ(l["state"], "down") << from_prometheus.output;
  }

  // The collective times out after the process-group timeout; rank 1 (on
  // h2) logs it, and explain-log on that log asks Prometheus about the time.
  ASSERT_TRUE(WaitFor([&] { return absl::StrContains(ranks_[1]->Log(), "all_reduce failed"); },
                      absl::Seconds(60)))
      << ranks_[1]->Log();
  CliResult explained = Cli({"explain-log", "--json", "--prometheus",
                             absl::StrCat("http://127.0.0.1:", kPrometheusPort), RankLogPath(1)});
  ASSERT_FALSE(explained.json.is_discarded()) << explained.output;
  EXPECT_EQ(explained.exit_code, 2) << explained.output;
  ASSERT_FALSE(explained.json["root_cause"].is_null()) << explained.output;
  EXPECT_TRUE(absl::StrContains(explained.json["root_cause"]["id"].get<std::string>(), "timeout"))
      << explained.output;
  const auto& at = explained.json["cluster_at_failure"];
  ASSERT_TRUE(at.contains("unhealthy")) << explained.output;
  EXPECT_EQ(at["links_seen"], kRanks * (kRanks - 1)) << explained.output;
  // Both directions of the cut link were down with probe failures; no other
  // link had a failure. (A veth claims 10 Gb/s, so on a small machine other
  // links may be listed for a low bandwidth ratio alone.)
  std::set<std::string> down;
  for (const auto& l : at["unhealthy"]) {
    const std::string node = l["node"].get<std::string>(), peer = l["peer"].get<std::string>();
    if (l["down"] == true || !l["failures"].empty()) {
      EXPECT_EQ((std::set<std::string>{node, peer}), cut) << explained.output;
      if (l["down"] == true && !l["failures"].empty()) down.insert(absl::StrCat(node, "->", peer));
    }
  }
  EXPECT_EQ(down, (std::set<std::string>{absl::StrCat(cluster_->name(1), "->", cluster_->name(2)),
                                         absl::StrCat(cluster_->name(2), "->", cluster_->name(1))}))
      << explained.output;
  CliResult explained_text =
      Cli({"explain-log", "--prometheus", absl::StrCat("http://127.0.0.1:", kPrometheusPort),
           RankLogPath(1)});
  std::cout << "gloowatch explain-log (exit " << explained_text.exit_code << "):\n"
            << explained_text.output;
  EXPECT_TRUE(absl::StrContains(
      explained_text.output, absl::StrCat(cluster_->name(1), " -> ", cluster_->name(2), ": down")))
      << explained_text.output;
}

}  // namespace
}  // namespace gloowatch::testing
