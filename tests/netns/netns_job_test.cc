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

#include <algorithm>
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

constexpr int kRanks = 3;  // the three-host bed
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
    const NetnsClusterOptions options = Options();
    world_ = options.hosts;
    cluster_ = std::make_unique<NetnsCluster>(options);
    absl::Status s = cluster_->Setup();
    ASSERT_TRUE(s.ok()) << s;
    cluster_->StartAll();
  }

  // One rank a host. As on the racks bed (netns_racks_test.cc): latency
  // thresholds far above what the job and the daemons on 2 cores cost a
  // round trip, and a veth claims 10 Gb/s of which a loaded machine moves a
  // fraction, so `health` judges the link ratio only against a collapse.
  // The hypervisor's steal is the one VM's, shared by every host.
  virtual NetnsClusterOptions Options() const {
    NetnsClusterOptions options;
    options.hosts = kRanks;
    options.extra_yaml +=
        "thresholds:\n  latency: 50ms\n  bandwidth_link_ratio: 0.002\n  cpu_steal_ratio: 1\n";
    return options;
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
  void StartRanks(int pg_timeout_seconds, const std::map<std::string, std::string>& extra = {}) {
    for (int i = 0; i < world_; ++i) {
      std::map<std::string, std::string> env = {
          {"RANK", absl::StrCat(i)},
          {"WORLD_SIZE", absl::StrCat(world_)},
          {"LOCAL_RANK", "0"},
          {"MASTER_ADDR", cluster_->ip(0)},
          {"MASTER_PORT", absl::StrCat(master_port_)},
          {"GLOO_SOCKET_IFNAME", "eth0"},
          {"GLOOWATCH_JOB", job_},
          {"GLOOWATCH_DAEMON", cluster_->grpc(i)},
          {"GLOOWATCH_FLUSH_INTERVAL", "0.2"},
          {"PG_TIMEOUT", absl::StrCat(pg_timeout_seconds)},
          {"DURATION", "150"},
          {"LINGER", "60"},
          {"OMP_NUM_THREADS", "1"},
          {"PYTHONUNBUFFERED", "1"},
      };
      for (const auto& [k, v] : extra) env[k] = v;
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
    for (int i = 0; i < world_; ++i) daemons.push_back(cluster_->grpc(i));
    std::vector<std::string> args = {"job", job_, "--daemons", absl::StrJoin(daemons, ",")};
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
      if (!r.json.is_discarded() && r.json["ranks"].size() == static_cast<size_t>(world_) &&
          r.exit_code == 0) {
        int min_seq = 1 << 30;
        for (const auto& x : r.json["ranks"]) min_seq = std::min(min_seq, x["seq"].get<int>());
        if (min_seq >= 20) break;
      }
      absl::SleepFor(absl::Milliseconds(500));
    }
    ASSERT_FALSE(r.json.is_discarded()) << r.output;
    ASSERT_EQ(r.json["ranks"].size(), static_cast<size_t>(world_)) << r.output;
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.json["verdict"], "running") << r.output;
    EXPECT_EQ(r.json["links"].size(), 0u) << r.output;
    EXPECT_EQ(r.json["links_checked"], world_ * (world_ - 1)) << r.output;
    for (int i = 0; i < world_; ++i) {
      EXPECT_EQ(r.json["ranks"][i]["node"], cluster_->name(i)) << r.output;
    }
  }

  // A real Prometheus in h1's namespace, on its loopback, scraping every
  // daemon every second.
  void StartPrometheus() {
    std::vector<std::string> targets;
    for (int i = 0; i < world_; ++i) {
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

  // `ask` every second until its JSON satisfies `done` (at most `seconds`).
  static CliResult AskUntil(const std::function<CliResult()>& ask, const JsonDone& done,
                            int seconds = 20) {
    CliResult r;
    const absl::Time deadline = absl::Now() + absl::Seconds(seconds);
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
          return Cli({"job", job_, "--prometheus", PrometheusUrl(), "--json"});
        },
        done);
  }

  // The job-link findings of `kind` in a `job --json` answer.
  static std::vector<nlohmann::json> Findings(const nlohmann::json& j, const std::string& kind) {
    std::vector<nlohmann::json> out;
    if (!j.contains("job_links")) return out;
    for (const auto& f : j["job_links"]["findings"]) {
      if (f["kind"] == kind) out.push_back(f);
    }
    return out;
  }

  // Every rank's daemon reads its Gloo pairs with every other rank (read
  // every 5 s), both ends joined: the job's links, healthy, with no finding.
  void WaitJobLinks() {
    CliResult r = AskUntil([&] { return Job(true); },
                           [this](const nlohmann::json& j) {
                             std::set<std::pair<int, int>> pairs;
                             for (const auto& l : j["job_links"]["links"]) {
                               if (!l["peer_rank"].is_null())
                                 pairs.emplace(l["rank"], l["peer_rank"]);
                             }
                             return pairs.size() == static_cast<size_t>(world_ * (world_ - 1));
                           });
    ASSERT_FALSE(r.json.is_discarded()) << r.output;
    std::set<std::pair<int, int>> pairs;
    for (const auto& l : r.json["job_links"]["links"]) {
      if (l["peer_rank"].is_null()) continue;
      pairs.emplace(l["rank"], l["peer_rank"]);
      EXPECT_EQ(l["node"], cluster_->name(l["rank"].get<int>())) << r.output;
      EXPECT_EQ(l["peer_node"], cluster_->name(l["peer_rank"].get<int>())) << r.output;
      EXPECT_EQ(l["state"], "established") << r.output;
    }
    ASSERT_EQ(pairs.size(), static_cast<size_t>(world_ * (world_ - 1))) << r.output;
    EXPECT_GE(r.json["job_links"]["store_connections"].get<int>(), world_) << r.output;
    EXPECT_EQ(r.json["job_links"]["findings"].size(), 0u) << r.output;  // a healthy job
    EXPECT_EQ(r.exit_code, 0) << r.output;
  }

  int world_ = kRanks;
  std::string job_ = kJob;  // a job started again is another job
  int master_port_ = 29500;
  std::unique_ptr<NetnsCluster> cluster_;
  std::vector<std::unique_ptr<Process>> ranks_;
  std::unique_ptr<Process> prometheus_;
};

TEST_F(NetnsJobTest, StoppedRankIsNamedAsSilent) {
  StartPrometheus();
  ASSERT_TRUE(cluster_->WaitAllUp(absl::Seconds(60), /*measured=*/false).ok())
      << cluster_->AllLogs();
  // A gradient's size (4 MiB) with little compute between the calls: data
  // is in flight between the ranks most of the time, as in training.
  StartRanks(/*pg_timeout_seconds=*/60,
             {{"TENSOR_FLOATS", "1048576"}, {"COMPUTE_SECONDS", "0.005"}});
  WaitRunning();
  if (HasFatalFailure()) return;
  WaitJobLinks();
  if (HasFatalFailure()) return;

  // Stopped while data flows to it, rank 2 leaves what its peers sent in
  // its sockets, unread (its kernel acknowledged it): two reads of h3's
  // daemon, 5 s apart, see it not drained. Gloo's pairs move a buffer once
  // its receiver posted the receive, so a stop between transfers leaves
  // nothing in flight (every connection idle, nothing unacknowledged): then
  // the rank is let go and stopped again, at most 4 times.
  absl::Time stopped;
  CliResult links;
  for (int attempt = 0; attempt < 4; ++attempt) {
    if (attempt > 0) {
      ranks_[2]->Signal(SIGCONT);
      absl::SleepFor(absl::Seconds(3));
    }
    ranks_[2]->Signal(SIGSTOP);
    stopped = absl::Now();
    links = AskUntil([&] { return Job(true); },
                     [](const nlohmann::json& j) {
                       for (const auto& f : Findings(j, "not_reading")) {
                         if (f["rank"] == 2) return true;
                       }
                       return false;
                     },
                     14);
    ASSERT_FALSE(links.json.is_discarded()) << links.output;
    EXPECT_TRUE(Findings(links.json, "network").empty()) << links.output;
    if (!Findings(links.json, "not_reading").empty()) break;
    std::cout << "stop " << attempt + 1 << " came between transfers: nothing in flight to rank 2\n";
  }
  std::vector<nlohmann::json> not_reading = Findings(links.json, "not_reading");
  ASSERT_FALSE(not_reading.empty()) << links.output;
  for (const auto& f : not_reading) {
    EXPECT_EQ(f["rank"], 2) << links.output;
    EXPECT_EQ(f["node"], cluster_->name(2)) << links.output;
    EXPECT_TRUE(f["peer_rank"] == 0 || f["peer_rank"] == 1) << links.output;
    EXPECT_TRUE(absl::StrContains(f["text"].get<std::string>(),
                                  absl::StrCat("rank 2 (", cluster_->name(2), ") holds ")))
        << links.output;
    EXPECT_TRUE(
        absl::StrContains(f["text"].get<std::string>(), "its process is not reading (stopped)"))
        << links.output;
  }
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
  // Its last report is at most the calls of two flushes before the one the
  // others wait in: the reporter sends every 0.5 s, one call per 20 ms step
  // (a batch on its way when the rank stopped is lost with it).
  EXPECT_LE(suspect["seq"].get<int>(), w["seq"].get<int>()) << r.output;
  EXPECT_GE(suspect["seq"].get<int>(), w["seq"].get<int>() - 50) << r.output;
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
  // No link of the daemons' probes is the reason; the job's own links say
  // rank 2 does not read.
  EXPECT_FALSE(absl::StrContains(text.output, "likely reason: link")) << text.output;
  EXPECT_TRUE(absl::StrContains(
      text.output, absl::StrCat("likely reason: rank 2 (", cluster_->name(2), ") holds ")))
      << text.output;

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
  WaitJobLinks();
  if (HasFatalFailure()) return;

  // First, on the same bed: 5% of what h2 receives on eth0 is dropped. The
  // job's connections into h2 lose 5% of their segments, seen by the
  // senders' kernels (retransmissions less DSACKed ones): within 30 s the
  // loss window (15 s) holds only lossy traffic, and the ratio is 5% +-30%.
  for (int i : {0, 2}) {  // one segment a packet, as on a wire (netns_loss_test.cc)
    ASSERT_TRUE(cluster_->Exec(i, {"ip", "link", "set", "eth0", "gso_max_segs", "1"}).ok());
  }
  const double injected_at = absl::ToUnixMillis(absl::Now()) / 1e3;
  ASSERT_TRUE(cluster_
                  ->Nft(1,
                        "add table inet gwfault\n"
                        "add chain inet gwfault input { type filter hook input "
                        "priority -10 ; policy accept ; }\n"
                        "add rule inet gwfault input iifname \"eth0\" "
                        "numgen random mod 100 < 5 counter drop\n")
                  .ok());
  // `gloowatch health` takes the job's connections as evidence: h2 is the
  // suspect within 30 s, its evidence the job's links into it (the
  // senders' kernels retransmitted), and nobody else is blamed.
  std::vector<std::string> daemons;
  for (int i = 0; i < world_; ++i) daemons.push_back(cluster_->grpc(i));
  auto job_evidence = [&](const nlohmann::json& j) {
    if (!j.contains("suspects") || j["suspects"].empty()) return false;
    const auto& first = j["suspects"][0];
    if (first["kind"] != "node" || first["name"] != cluster_->name(1)) return false;
    for (const auto& e : first["evidence"]) {
      if (absl::StartsWith(e.get<std::string>(), "job links: ") &&
          absl::EndsWith(e.get<std::string>(),
                         absl::StrCat("->", cluster_->name(1), " retransmitted"))) {
        return true;
      }
    }
    return false;
  };
  CliResult health = AskUntil(
      [&] {
        return Cli({"health", "--daemons", absl::StrJoin(daemons, ","), "--json"});
      },
      job_evidence, 30);
  std::cout << "health named " << cluster_->name(1) << " "
            << absl::ToUnixMillis(absl::Now()) / 1e3 - injected_at << " s after the drop\n";
  ASSERT_FALSE(health.json.is_discarded()) << health.output;
  EXPECT_TRUE(job_evidence(health.json)) << health.output;
  EXPECT_EQ(health.exit_code, 1) << health.output;
  EXPECT_EQ(health.json["verdict"], "degraded") << health.output;
  for (const auto& suspect : health.json["suspects"]) {
    EXPECT_EQ(suspect["name"], cluster_->name(1)) << health.output;
  }
  ASSERT_FALSE(health.json["suspects"].empty()) << health.output;
  const auto& job_loss = health.json["suspects"][0]["job_loss"];
  ASSERT_TRUE(job_loss.is_object()) << health.output;
  EXPECT_GT(job_loss["sent"].get<double>(), 0) << health.output;

  struct Loss {
    double sent = 0, lost = 0;
    double ratio() const { return sent > 0 ? lost / sent : 0; }
  };
  // Sender-side loss of the links into h2 (and out of it), over windows
  // that began after the drop did.
  auto loss = [&](const nlohmann::json& j, bool into) {
    Loss l;
    for (const auto& x : j["job_links"]["links"]) {
      if (x["loss_ratio"].is_null() || x["peer_rank"].is_null()) continue;
      if ((into ? x["peer_node"] : x["node"]) != cluster_->name(1)) continue;
      if (x["read_at"].get<double>() - x["loss_window_seconds"].get<double>() < injected_at) {
        return Loss{};  // a window that began before the drop
      }
      l.sent += x["loss_window_sent_segments"].get<double>();
      l.lost += x["loss_ratio"].get<double>() * x["loss_window_sent_segments"].get<double>();
    }
    return l;
  };
  CliResult lossy =
      AskUntil([&] { return Job(true); },
               [&](const nlohmann::json& j) { return loss(j, /*into=*/true).sent >= 1500; }, 30);
  ASSERT_TRUE(cluster_->ClearNft(1).ok());
  ASSERT_FALSE(lossy.json.is_discarded()) << lossy.output;
  const Loss into = loss(lossy.json, true), out_of = loss(lossy.json, false);
  std::cout << "job links into h2: " << into.lost << " of " << into.sent
            << " segments lost; out of h2: " << out_of.lost << " of " << out_of.sent << "\n";
  ASSERT_GE(into.sent, 1500) << lossy.output;
  EXPECT_GE(into.ratio(), 0.05 * 0.7) << lossy.output;
  EXPECT_LE(into.ratio(), 0.05 * 1.3) << lossy.output;
  EXPECT_LT(out_of.ratio(), 0.01) << lossy.output;
  bool named = false;
  for (const auto& f : Findings(lossy.json, "lossy")) {
    named = named || f["peer_node"] == cluster_->name(1);
    EXPECT_TRUE(f["peer_node"] == cluster_->name(1)) << lossy.output;
  }
  EXPECT_TRUE(named) << lossy.output;

  ranks_[1]->Signal(SIGKILL);
  ASSERT_EQ(ranks_[1]->Wait(absl::Seconds(10)), std::optional<int>(-SIGKILL));
  // A survivor that uses a pair with the dead rank fails at once (the kernel
  // closed its sockets); it logs it and stays up, heard from. One that waits
  // only on the other survivor, which failed and left the call, stays inside
  // it until the process-group timeout (60 s): Gloo's ring allows both.
  auto failed = [&](int i) { return absl::StrContains(ranks_[i]->Log(), "all_reduce failed"); };
  EXPECT_TRUE(WaitFor([&] { return failed(0) || failed(2); }, absl::Seconds(20)))
      << "rank 0: " << ranks_[0]->Log() << "rank 2: " << ranks_[2]->Log();
  // Past the 3 s "silent" threshold: rank 1 is gone.
  auto gone = [](const nlohmann::json& j) {
    for (const auto& s : j["suspects"]) {
      if (s["rank"] == 1 && s["state"] == "gone") return true;
    }
    return false;
  };
  absl::SleepFor(absl::Seconds(2));  // the other survivor fails too, when it does
  // Settled: both survivors left the call (degraded, rank 1 the one
  // suspect), or one waits in it for 5 s (hung). Asked again 3 s on: between
  // two calls a survivor is in neither, and may still enter the next one.
  auto settled = [&](const nlohmann::json& j) {
    return gone(j) &&
           ((j["verdict"] == "degraded" && j["suspects"].size() == 1) || j["verdict"] == "hung");
  };
  CliResult r = JobUntil(settled);
  absl::SleepFor(absl::Seconds(3));
  r = JobUntil(settled);
  ASSERT_FALSE(r.json.is_discarded()) << r.output;
  // Which it was, the job view says; the ranks' logs say so too, once
  // their lines have been read (the view can be first).
  const bool both_failed = r.json["verdict"] == "degraded";
  std::cout << (both_failed ? "both survivors failed at once\n"
                            : "one survivor still waits in its call (for the other)\n");
  if (both_failed) {
    EXPECT_TRUE(WaitFor([&] { return failed(0) && failed(2); }, absl::Seconds(10)))
        << "rank 0: " << ranks_[0]->Log() << "rank 2: " << ranks_[2]->Log();
  }
  ASSERT_TRUE(gone(r.json)) << r.output;
  const auto& suspect = *std::find_if(r.json["suspects"].begin(), r.json["suspects"].end(),
                                      [](const nlohmann::json& s) { return s["rank"] == 1; });
  EXPECT_EQ(suspect["node"], cluster_->name(1));
  EXPECT_EQ(suspect["process"], "gone") << r.output;
  EXPECT_GE(suspect["silent_seconds"].get<double>(), 3.0) << r.output;
  for (int i : {0, 2}) EXPECT_EQ(r.json["ranks"][i]["process"], "running") << r.output;
  if (both_failed) {
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_EQ(r.json["verdict"], "degraded") << r.output;
    EXPECT_EQ(r.json["suspects"].size(), 1u) << r.output;
    for (int i : {0, 2}) EXPECT_EQ(r.json["ranks"][i]["state"], "running") << r.output;
  } else {
    // The survivor inside its call waits; the one that left it has not
    // entered it, and rank 1 is gone: never a waiting rank.
    const int waiting = r.json["ranks"][0]["state"] == "waiting" ? 0 : 2, left = 2 - waiting;
    EXPECT_TRUE(WaitFor([&] { return failed(left); }, absl::Seconds(10)))
        << "rank " << left << ": " << ranks_[left]->Log();
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_EQ(r.json["ranks"][waiting]["state"], "waiting") << r.output;
    EXPECT_EQ(r.json["ranks"][left]["state"], "not_entered") << r.output;
    EXPECT_EQ(r.json["suspects"].size(), 2u) << r.output;
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
  WaitJobLinks();
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
  // The job's own connection between h2 and h3 holds data nobody
  // acknowledges, its retransmission timer backing off: named within 20 s.
  CliResult drops = JobUntil([](const nlohmann::json& j) {
    return j["verdict"] == "hung" && !Findings(j, "network").empty();
  });
  ASSERT_FALSE(drops.json.is_discarded()) << drops.output;
  ASSERT_FALSE(Findings(drops.json, "network").empty()) << drops.output;
  for (const auto& f : Findings(drops.json, "network")) {
    EXPECT_EQ(
        (std::set<std::string>{f["node"].get<std::string>(), f["peer_node"].get<std::string>()}),
        cut)
        << drops.output;
    EXPECT_TRUE((std::set<int>{f["rank"].get<int>(), f["peer_rank"].get<int>()}) ==
                (std::set<int>{1, 2}))
        << drops.output;
    EXPECT_TRUE(absl::StrContains(f["text"].get<std::string>(), "unacknowledged for "))
        << drops.output;
    EXPECT_TRUE(
        absl::StrContains(f["text"].get<std::string>(),
                          absl::StrCat("the network between ", f["node"].get<std::string>(),
                                       " and ", f["peer_node"].get<std::string>(), " drops")))
        << drops.output;
  }
  EXPECT_TRUE(Findings(drops.json, "not_reading").empty()) << drops.output;
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

// The job's own connections across a fabric with two paths: two racks of
// two hosts joined by two routers, each host's route off its rack a
// multipath route over both, hashed on the 4-tuple (netns_cluster.h,
// `ecmp`). One router drops 10% of what it forwards and records which
// connections it carried; the ranks exchange data between every pair
// (all_to_all), so each direction of each connection across the racks is
// on one path or the other.
class NetnsJobEcmpTest : public NetnsJobTest {
 protected:
  NetnsClusterOptions Options() const override {
    NetnsClusterOptions options;
    options.hosts = 4;
    options.racks = 2;
    options.ecmp = true;
    return options;
  }

  // `gloowatch health --json` over the four daemons, inside h1's namespace.
  CliResult Health() {
    std::vector<std::string> daemons;
    for (int i = 0; i < world_; ++i) daemons.push_back(cluster_->grpc(i));
    return Cli({"health", "--daemons", absl::StrJoin(daemons, ","), "--json", "--deadline", "5s"});
  }

  static std::vector<nlohmann::json> Suspects(const nlohmann::json& j, const std::string& kind) {
    std::vector<nlohmann::json> out;
    if (!j.contains("suspects")) return out;
    for (const auto& s : j["suspects"]) {
      if (s["kind"] == kind) out.push_back(s);
    }
    return out;
  }

  // Calls `f(from, to, direction)` for every measured direction of `j`.
  static void ForEachDirection(
      const nlohmann::json& j,
      const std::function<void(const std::string&, const std::string&, const nlohmann::json&)>& f) {
    if (!j.contains("links")) return;
    for (const auto& l : j["links"]) {
      const std::string a = l["a"], b = l["b"];
      if (!l["a_to_b"].is_null()) f(a, b, l["a_to_b"]);
      if (!l["b_to_a"].is_null()) f(b, a, l["b_to_a"]);
    }
  }

  bool AcrossRacks(const std::string& a, const std::string& b) const {
    int ia = -1, ib = -1;
    for (int i = 0; i < world_; ++i) {
      if (cluster_->name(i) == a) ia = i;
      if (cluster_->name(i) == b) ib = i;
    }
    return ia >= 0 && ib >= 0 && cluster_->rack_of(ia) != cluster_->rack_of(ib);
  }
};

// "10.1.2.3:4567" -> "10.1.2.3 . 4567", as nft prints a concatenation.
std::string NftEndpoint(const std::string& endpoint) {
  const size_t colon = endpoint.rfind(':');
  return absl::StrCat(endpoint.substr(0, colon), " . ", endpoint.substr(colon + 1));
}

TEST_F(NetnsJobEcmpTest, LossyPathIsNamedByTheJobsOwnConnections) {
  ASSERT_TRUE(cluster_->WaitAllUp(absl::Seconds(60), /*measured=*/false).ok())
      << cluster_->AllLogs();
  for (int i = 0; i < world_; ++i) {  // one segment a packet, as on a wire
    ASSERT_TRUE(cluster_->Exec(i, {"ip", "link", "set", "eth0", "gso_max_segs", "1"}).ok());
  }
  // The second router records which directions of which connections it
  // carries (nothing dropped yet).
  ASSERT_TRUE(cluster_
                  ->SecondRouterNft(
                      "add table inet gwfault\n"
                      "add set inet gwfault flows { type ipv4_addr . inet_service . ipv4_addr . "
                      "inet_service ; flags dynamic ; size 4096 ; }\n"
                      "add chain inet gwfault forward { type filter hook forward priority -10 ; "
                      "policy accept ; }\n"
                      "add rule inet gwfault forward meta l4proto tcp add @flows { ip saddr . "
                      "tcp sport . ip daddr . tcp dport }\n")
                  .ok());
  auto across = [&](const nlohmann::json& l) {
    return cluster_->rack_of(l["rank"].get<int>()) != cluster_->rack_of(l["peer_rank"].get<int>());
  };
  auto carried_by_second_router = [&](const std::string& set, const nlohmann::json& l) {
    return absl::StrContains(
        set, absl::StrCat(NftEndpoint(l["local"]), " . ", NftEndpoint(l["remote"])));
  };
  auto list_set = [&] {
    return RunCommand({"ip", "netns", "exec", cluster_->second_router_ns(), "nft", "list", "set",
                       "inet", "gwfault", "flows"});
  };
  // The hash puts each connection on one path; when it put every one
  // across on the same path (1 job in 8 with four connections across),
  // there is no path fault to tell from a link's: the job is started again
  // (new ports, another hash), at most twice.
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (attempt > 0) {
      ranks_.clear();  // SIGKILLs them
      job_ = absl::StrCat(kJob, attempt + 1);
      ++master_port_;
    }
    // 16 KiB to each rank a step: thousands of segments a direction in a
    // loss window, even on a loaded machine.
    StartRanks(/*pg_timeout_seconds=*/60, {{"ALL_TO_ALL", "1"}, {"TENSOR_FLOATS", "4096"}});
    WaitRunning();
    if (HasFatalFailure()) return;
    WaitJobLinks();
    if (HasFatalFailure()) return;
    const CliResult j = Job(true);
    const CommandResult set = list_set();
    ASSERT_TRUE(set.ok()) << set.output;
    int via_second = 0, directions = 0;
    for (const auto& l : j.json["job_links"]["links"]) {
      if (l["peer_rank"].is_null() || !across(l)) continue;
      ++directions;
      via_second += carried_by_second_router(set.output, l) ? 1 : 0;
    }
    std::cout << "job " << job_ << ": " << via_second << " of " << directions
              << " directions across the racks via the second router\n";
    if (via_second > 0 && via_second < directions) break;
  }

  // The daemons' probe flows on the healthy bed: every direction probed
  // over probe.flows (4) flows, each with figures, and no path suspect.
  CliResult healthy = AskUntil(
      [&] { return Health(); },
      [&](const nlohmann::json& j) {
        int directions = 0;
        bool complete = true;
        ForEachDirection(j, [&](const std::string&, const std::string&, const nlohmann::json& d) {
          ++directions;
          complete &= d["state"] == "up" && d["flows"].size() == 4;
        });
        return directions == world_ * (world_ - 1) && complete;
      },
      40);
  ASSERT_FALSE(healthy.json.is_discarded()) << healthy.output;
  ForEachDirection(healthy.json,
                   [&](const std::string& from, const std::string& to, const nlohmann::json& d) {
                     EXPECT_EQ(d["flows"].size(), 4u) << from << "->" << to << ": " << d.dump();
                   });
  EXPECT_TRUE(Suspects(healthy.json, "path").empty()) << healthy.output;

  ASSERT_TRUE(cluster_
                  ->SecondRouterNft("add rule inet gwfault forward numgen random mod 100 < 10 "
                                    "drop\n")
                  .ok());
  const double injected_at = absl::ToUnixMillis(absl::Now()) / 1e3;
  // Every direction across the racks measured over a window that began
  // after the drop did.
  CliResult r = AskUntil(
      [&] { return Job(true); },
      [&](const nlohmann::json& j) {
        int measured = 0;
        for (const auto& l : j["job_links"]["links"]) {
          if (l["peer_rank"].is_null() || !across(l)) continue;
          if (l["loss_ratio"].is_null() || l["loss_window_sent_segments"].get<double>() < 500 ||
              l["read_at"].get<double>() - l["loss_window_seconds"].get<double>() < injected_at) {
            return false;
          }
          ++measured;
        }
        return measured == 8;
      },
      40);
  ASSERT_FALSE(r.json.is_discarded()) << r.output;
  // Which directions the lossy router carried.
  const CommandResult set = list_set();
  ASSERT_TRUE(set.ok()) << set.output;
  int lossy = 0, clean = 0;
  for (const auto& l : r.json["job_links"]["links"]) {
    if (l["peer_rank"].is_null()) continue;
    const double loss = l["loss_ratio"].is_null() ? 0 : l["loss_ratio"].get<double>();
    if (!across(l)) {
      EXPECT_LT(loss, 0.01) << "inside a rack: " << l.dump();
      continue;
    }
    const bool via_lossy = carried_by_second_router(set.output, l);
    std::cout << l["node"].get<std::string>() << " -> " << l["peer_node"].get<std::string>()
              << (via_lossy ? " via the lossy router: " : " via the other: ") << loss << " of "
              << l["loss_window_sent_segments"] << " segments\n";
    EXPECT_GE(l["loss_window_sent_segments"].get<double>(), 500) << l.dump();
    if (via_lossy) {
      ++lossy;
      EXPECT_GE(loss, 0.05) << l.dump();
      EXPECT_LE(loss, 0.2) << l.dump();
    } else {
      ++clean;
      EXPECT_LT(loss, 0.01) << l.dump();
    }
  }
  EXPECT_EQ(lossy + clean, 8) << r.output;
  std::vector<nlohmann::json> path = Findings(r.json, "path");
  if (lossy > 0 && clean > 0) {
    // Every host's connection inside its rack is clean (its link is fine)
    // and some directions across are clean (so is each rack's uplink): one
    // of the two paths is the reason.
    ASSERT_EQ(path.size(), 1u) << r.output;
    EXPECT_EQ(path[0]["node"], cluster_->group_of(0)) << r.output;
    EXPECT_EQ(path[0]["peer_node"], cluster_->group_of(2)) << r.output;
    EXPECT_TRUE(absl::StrContains(path[0]["text"].get<std::string>(),
                                  absl::StrCat(lossy, " of 8 directions")))
        << r.output;
    EXPECT_TRUE(absl::StrContains(path[0]["text"].get<std::string>(), "path-dependent fault"))
        << r.output;
  } else {
    // The hash put every direction on one path in all three starts of the
    // job (about 1 run in 500): then it is no path of several, and nothing
    // may say so.
    std::cout << "every direction took one path: " << lossy << " lossy, " << clean << " clean\n";
    EXPECT_TRUE(path.empty()) << r.output;
  }
  CliResult text = Job(false);
  if (lossy > 0 && clean > 0) {
    EXPECT_TRUE(absl::StrContains(text.output, "path-dependent fault")) << text.output;
  }

  // The daemons' own probe flows (probe.flows, 4 a peer), whatever the
  // hash did to the job's connections: 32 flows across the racks, so some
  // take each router. `gloowatch health` names the path between the racks,
  // and no node, uplink or link.
  const std::string path_name =
      absl::StrCat(std::min(cluster_->group_of(0), cluster_->group_of(2)), " <-> ",
                   std::max(cluster_->group_of(0), cluster_->group_of(2)));
  CliResult health = AskUntil([&] { return Health(); },
                              [&](const nlohmann::json& j) {
                                const std::vector<nlohmann::json> path = Suspects(j, "path");
                                return path.size() == 1 && path[0]["name"] == path_name;
                              },
                              60);
  ASSERT_FALSE(health.json.is_discarded()) << health.output;
  const std::vector<nlohmann::json> path_suspects = Suspects(health.json, "path");
  ASSERT_EQ(path_suspects.size(), 1u) << health.output;
  EXPECT_EQ(path_suspects[0]["name"], path_name) << health.output;
  EXPECT_EQ(path_suspects[0]["groups"],
            nlohmann::json({std::min(cluster_->group_of(0), cluster_->group_of(2)),
                            std::max(cluster_->group_of(0), cluster_->group_of(2))}))
      << health.output;
  EXPECT_TRUE(
      absl::StrContains(path_suspects[0]["evidence"][0].get<std::string>(), "probe flows between"))
      << health.output;
  ASSERT_FALSE(path_suspects[0]["pooled_loss_ratio"].is_null()) << health.output;
  // The lossy flows' pooled loss: the 10% of the flows whose data takes the
  // lossy router, diluted by flows whose replies take it (about 1%).
  EXPECT_GE(path_suspects[0]["pooled_loss_ratio"].get<double>(), 0.02) << health.output;
  EXPECT_LE(path_suspects[0]["pooled_loss_ratio"].get<double>(), 0.2) << health.output;
  for (const auto& e : path_suspects[0]["evidence"]) std::cout << "path: " << e << "\n";
  // The flows' loss is the path's alone: no other suspect (node, uplink,
  // link) is named on pooled loss. (A veth claims 10 Gb/s, so on a loaded
  // machine a link, a node or the uplink may be named for a low bandwidth
  // ratio; its evidence may then quote a direction's TCP loss, which counts
  // the bulk pair's connection too: a fifth connection, on either path.)
  for (const auto& x : health.json["suspects"]) {
    if (x["kind"] == "path") continue;
    EXPECT_TRUE(x["pooled_loss_ratio"].is_null()) << x.dump();
    std::cout << "also named: " << x["kind"] << " " << x["name"] << "\n";
  }
  // Each flow is one connection on one path. A flow across whose data takes
  // the lossy router loses about the 10%; one whose data takes the other
  // loses little, up to about 1% when its replies take the lossy one (a
  // reply lost makes us retransmit, and the peer's DSACK for it may be
  // lost too). Inside a rack nothing loses. Flow 0 is what one flow per
  // peer would have measured.
  int lossy_flows = 0, clean_flows = 0, missed_by_flow_zero = 0;
  ForEachDirection(
      health.json, [&](const std::string& from, const std::string& to, const nlohmann::json& d) {
        const bool across = AcrossRacks(from, to);
        bool flow_zero_lossy = false, other_lossy = false;
        for (const auto& f : d["flows"]) {
          // As many segments as the path suspect needs of a flow (100): the
          // suspect may come before the flows have many more.
          const uint64_t sent = f["window_sent_segments"].get<uint64_t>();
          if (sent < 100 || f["loss_ratio"].is_null()) continue;
          const double loss = f["loss_ratio"].get<double>();
          std::cout << from << " -> " << to << " flow " << f["flow"] << ": " << loss << " of "
                    << sent << " segments\n";
          if (!across) {
            if (sent >= 300) {
              EXPECT_LT(loss, 0.01) << from << "->" << to << " inside a rack: " << f.dump();
            }
            continue;
          }
          // No band between the two: a session that reconnected within the
          // window (new ports, maybe the other path) mixes both in a flow's
          // figure.
          EXPECT_LE(loss, 0.25) << from << "->" << to << ": " << f.dump();
          if (loss >= 0.03) {  // 10% over 100 segments or more: under 3% about 1 in 300
            ++lossy_flows;
            (f["flow"] == 0 ? flow_zero_lossy : other_lossy) = true;
          } else if (loss < 0.02) {
            ++clean_flows;
          }
        }
        if (across && other_lossy && !flow_zero_lossy) ++missed_by_flow_zero;
      });
  EXPECT_GT(lossy_flows, 0) << health.output;
  EXPECT_GT(clean_flows, 0) << health.output;
  std::cout << "probe flows across the racks: " << lossy_flows << " lossy, " << clean_flows
            << " clean; one flow per peer (flow 0) would have missed the lossy path on "
            << missed_by_flow_zero << " of 8 directions that have a lossy flow\n";
}

}  // namespace
}  // namespace gloowatch::testing
