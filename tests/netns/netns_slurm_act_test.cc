// gloowatch node-check and act against a real Slurm (Debian's slurmctld,
// slurmd and munge) on three namespace hosts, each with a real gloowatchd.
// slurmctld runs on h1, a slurmd on every host (its own UTS namespace gives
// it its node name), munged with a key and socket of the test's own; the
// Gloo fabric of h3 is partitioned from the others while Slurm's ports still
// pass (a separate management network, as on most clusters).
//
// One bed, in order: a healthy cluster is left alone (and an operator's
// drain of h2 is never touched); h3 partitioned is named by node-check (in
// both formats, from a peer and from h3 itself) and drained by act with its
// reason, after a dry run that changes nothing; repaired, h3 stays drained
// until it has been healthy for --healthy-for, then act resumes it. Needs
// root and the Slurm packages; skips, saying why, otherwise.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/netns_cluster.h"

namespace gloowatch::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr int kHosts = 3;
constexpr int kController = 0;  // h1: slurmctld, and where act runs
constexpr int kCulprit = 2;     // h3
constexpr char kHealthyFor[] = "6s";

std::string MissingSlurm() {
  for (const char* tool :
       {"/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/sbin/munged", "/usr/bin/scontrol"}) {
    if (access(tool, X_OK) != 0) {
      return absl::StrCat(tool, " is missing (apt-get install slurmctld slurmd munge)");
    }
  }
  return "";
}

class NetnsSlurmActTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = NetnsUnavailableReason(); !why.empty()) GTEST_SKIP() << why;
    if (std::string why = MissingSlurm(); !why.empty()) GTEST_SKIP() << why;
    NetnsClusterOptions o;
    o.hosts = kHosts;
    // A veth claims 10 Gb/s, of which daemons sharing 2 cores move a few
    // percent, and a round trip waits for a CPU: judge the link ratio and
    // the latency only against a collapse (as the racks bed does), so a
    // healthy bed is healthy.
    o.extra_yaml =
        "schedule:\n  latency_interval: 500ms\n  skew_interval: 1s\n  bandwidth_interval: 5s\n"
        "  bandwidth_budget: 1\n"
        "probe:\n  bandwidth_bytes: 4MiB\n  bandwidth_message_bytes: 1MiB\n"
        "  backoff_initial: 200ms\n  backoff_max: 1s\n"
        "thresholds:\n  latency: 50ms\n  bandwidth_link_ratio: 0.002\n  cpu_steal_ratio: 1\n";
    cluster_ = std::make_unique<NetnsCluster>(o);
    absl::Status s = cluster_->Setup();
    ASSERT_TRUE(s.ok()) << s;
    dir_ = cluster_->dir().path() + "/slurm";
    state_file_ = dir_ + "/act-state.json";
    conf_ = dir_ + "/slurm.conf";
  }

  void TearDown() override {
    // slurmd, slurmctld and munged run inside the hosts' namespaces, which
    // the cluster's teardown empties (SIGKILL) and deletes; stop them
    // politely first so they leave no half-written state.
    for (auto& p : slurm_) p->Signal(SIGTERM);
    for (auto& p : slurm_) p->Wait(absl::Seconds(5));
    slurm_.clear();
    cluster_.reset();  // the temp dir with every state dir goes with it
  }

  // munged, slurmctld on h1, a slurmd per host; waits until every node is
  // IDLE.
  void StartSlurm() {
    for (const char* sub : {"", "/state", "/munge", "/log"}) {
      ASSERT_EQ(mkdir((dir_ + sub).c_str(), 0700), 0) << dir_ << sub;
    }
    for (int h = 0; h < kHosts; ++h) {
      ASSERT_EQ(mkdir(absl::StrCat(dir_, "/spool-", cluster_->name(h)).c_str(), 0700), 0);
    }
    std::string key(1024, '\0');
    std::random_device rd;
    for (char& c : key) c = static_cast<char>(rd());
    { std::ofstream(dir_ + "/munge/munge.key", std::ios::binary) << key; }
    ASSERT_EQ(chmod((dir_ + "/munge/munge.key").c_str(), 0600), 0);
    const std::string cgroup =
        std::filesystem::exists("/sys/fs/cgroup/cgroup.controllers") ? "cgroup/v2" : "cgroup/v1";
    std::ofstream(dir_ + "/cgroup.conf")
        << "CgroupPlugin=" << cgroup << "\nCgroupAutomount=no\nConstrainCores=no\n"
        << "ConstrainRAMSpace=no\n";
    std::string nodes;
    for (int h = 0; h < kHosts; ++h) {
      absl::StrAppend(&nodes, "NodeName=", cluster_->name(h), " NodeAddr=", cluster_->ip(h),
                      " CPUs=1 State=UNKNOWN\n");
    }
    std::ofstream(conf_) << "ClusterName=gwact\n"
                         << "SlurmctldHost=" << cluster_->name(kController) << "("
                         << cluster_->ip(kController) << ")\n"
                         << "SlurmctldPort=6817\nSlurmdPort=6818\n"
                         << "AuthType=auth/munge\nCredType=cred/munge\n"
                         << "AuthInfo=socket=" << dir_ << "/munge/munge.sock\n"
                         << "SlurmUser=root\nSlurmdUser=root\n"
                         << "StateSaveLocation=" << dir_ << "/state\n"
                         << "SlurmdSpoolDir=" << dir_ << "/spool-%n\n"
                         << "SlurmctldPidFile=" << dir_ << "/slurmctld.pid\n"
                         << "SlurmdPidFile=" << dir_ << "/slurmd-%n.pid\n"
                         << "SlurmctldLogFile=" << dir_ << "/log/slurmctld.log\n"
                         << "SlurmdLogFile=" << dir_ << "/log/slurmd-%n.log\n"
                         << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
                         << "JobAcctGatherType=jobacct_gather/none\nMpiDefault=none\n"
                         << "SchedulerType=sched/builtin\nSelectType=select/cons_tres\n"
                         << "ReturnToService=2\nSlurmdTimeout=300\nMailProg=/bin/true\n"
                         << nodes << "PartitionName=main Nodes=ALL Default=YES State=UP\n";
    const std::string& ns1 = cluster_->ns(kController);
    Spawn({"ip", "netns", "exec", ns1, "/usr/sbin/munged", "-F", "--force", "-S",
           dir_ + "/munge/munge.sock", "--key-file=" + dir_ + "/munge/munge.key",
           "--log-file=" + dir_ + "/log/munged.log", "--pid-file=" + dir_ + "/munge/munged.pid",
           "--seed-file=" + dir_ + "/munge/seed"},
          "munged");
    ASSERT_TRUE(WaitFor([&] { return access((dir_ + "/munge/munge.sock").c_str(), F_OK) == 0; },
                        absl::Seconds(10)))
        << Logs();
    Spawn(InHost(kController, "/usr/sbin/slurmctld -D -i"), "slurmctld");
    ASSERT_TRUE(WaitFor([&] { return Scontrol({"ping"}).ok(); }, absl::Seconds(20))) << Logs();
    for (int h = 0; h < kHosts; ++h) {
      Spawn(InHost(h, absl::StrCat("/usr/sbin/slurmd -D -N ", cluster_->name(h))),
            absl::StrCat("slurmd-", cluster_->name(h)));
    }
    ASSERT_TRUE(WaitFor(
        [&] {
          CommandResult r = Scontrol({"show", "node", "-o"});
          size_t idle = 0;
          for (int h = 0; h < kHosts; ++h) {
            idle += absl::StrContains(r.output, absl::StrCat("NodeName=", cluster_->name(h), " "))
                        ? 1
                        : 0;
          }
          return r.ok() && idle == kHosts && !absl::StrContains(r.output, "State=UNKNOWN") &&
                 !absl::StrContains(r.output, "NOT_RESPONDING");
        },
        absl::Seconds(30)))
        << Scontrol({"show", "node", "-o"}).output << Logs();
  }

  // `sh -c` in the host's namespace and a UTS namespace of its own named
  // after the host: slurmd takes its node name from it.
  std::vector<std::string> InHost(int h, const std::string& command) const {
    return {"ip",
            "netns",
            "exec",
            cluster_->ns(h),
            "env",
            "SLURM_CONF=" + conf_,
            "unshare",
            "--uts",
            "sh",
            "-c",
            absl::StrCat("hostname ", cluster_->name(h), " && exec ", command)};
  }

  void Spawn(const std::vector<std::string>& argv, const std::string& name) {
    slurm_.push_back(std::make_unique<Process>(argv, absl::StrCat(dir_, "/log/", name, ".out")));
  }

  CommandResult Scontrol(const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {"env", "SLURM_CONF=" + conf_, "scontrol"};
    argv.insert(argv.end(), args.begin(), args.end());
    return cluster_->Exec(kController, argv, absl::Seconds(15));
  }

  // Slurm's one-line view of a node: "State=... Reason=...".
  std::string SlurmNode(int h) const {
    CommandResult r = Scontrol({"show", "node", "-o", cluster_->name(h)});
    const size_t state = r.output.find("State=");
    const size_t reason = r.output.find(" Reason=");
    std::string out = r.output.substr(state, r.output.find(' ', state) - state);
    if (reason != std::string::npos) absl::StrAppend(&out, r.output.substr(reason));
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out;
  }

  std::string Daemons() const {
    std::vector<std::string> d;
    for (int h = 0; h < kHosts; ++h) d.push_back(cluster_->grpc(h));
    return absl::StrJoin(d, ",");
  }

  CommandResult Act(bool dry_run) const {
    std::vector<std::string> argv = {"env",
                                     "SLURM_CONF=" + conf_,
                                     BinaryPath("client/gloowatch"),
                                     "act",
                                     "--slurm",
                                     "--daemons",
                                     Daemons(),
                                     "--deadline",
                                     "2s",
                                     "--state-file",
                                     state_file_,
                                     "--healthy-for",
                                     kHealthyFor};
    if (dry_run) argv.push_back("--dry-run");
    CommandResult r = cluster_->Exec(kController, argv, absl::Seconds(30));
    std::cout << "act" << (dry_run ? " --dry-run" : "") << " (exit " << r.exit_code << "):\n"
              << r.output;
    return r;
  }

  CommandResult NodeCheck(int run_on, const std::vector<std::string>& flags) const {
    std::vector<std::string> argv = {BinaryPath("client/gloowatch"), "node-check", "--deadline",
                                     "2s"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    CommandResult r = cluster_->Exec(run_on, argv, absl::Seconds(30));
    std::cout << "node-check " << absl::StrJoin(flags, " ") << " on " << cluster_->name(run_on)
              << " (exit " << r.exit_code << "): " << r.output;
    return r;
  }

  // Drops the Gloo fabric between h3 and the others, both ways, on input
  // (so neither side gets an error at once); Slurm's ports still pass.
  absl::Status PartitionFabric() const {
    for (int self = 0; self < kHosts; ++self) {
      std::vector<std::string> others;
      for (int o = 0; o < kHosts; ++o) {
        if (o != self && (self == kCulprit || o == kCulprit)) others.push_back(cluster_->ip(o));
      }
      const std::string set = absl::StrCat("{ ", absl::StrJoin(others, ", "), " }");
      absl::Status s = cluster_->Nft(
          self, absl::StrCat("add table inet gwfault\n"
                             "add chain inet gwfault input { type filter hook input priority -10 "
                             "; policy accept ; }\n"
                             "add rule inet gwfault input ip saddr ",
                             set, " tcp dport { 6817, 6818 } accept\n",
                             "add rule inet gwfault input ip saddr ", set,
                             " tcp sport { 6817, 6818 } accept\n",
                             "add rule inet gwfault input ip saddr ", set, " drop\n"));
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }

  std::string Logs() const {
    std::string out;
    for (const char* f :
         {"munged.out", "slurmctld.log", "slurmctld.out", "slurmd-h1.log", "slurmd-h3.log"}) {
      std::ifstream in(absl::StrCat(dir_, "/log/", f));
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (text.size() > 3000) text = text.substr(text.size() - 3000);
      absl::StrAppend(&out, "--- ", f, "\n", text);
    }
    return out;
  }

  std::unique_ptr<NetnsCluster> cluster_;
  std::vector<std::unique_ptr<Process>> slurm_;
  std::string dir_, conf_, state_file_;
};

TEST_F(NetnsSlurmActTest, PartitionedNodeIsDrainedThenResumedAndHealthyClusterLeftAlone) {
  cluster_->StartAll();
  absl::Status up = cluster_->WaitAllUp(absl::Seconds(30), /*measured=*/false);
  ASSERT_TRUE(up.ok()) << up;
  StartSlurm();
  if (HasFatalFailure()) return;
  // An operator's drain: act must never touch it.
  ASSERT_TRUE(Scontrol({"update", "NodeName=h2", "State=DRAIN", "Reason=maintenance"}).ok());

  // Healthy: nothing to do, nothing drained, every node-check OK.
  CommandResult healthy = Act(/*dry_run=*/false);
  EXPECT_EQ(healthy.exit_code, 0);
  EXPECT_THAT(healthy.output, Not(HasSubstr("drain h")));
  EXPECT_THAT(SlurmNode(kCulprit), StartsWith("State=IDLE"));
  EXPECT_THAT(SlurmNode(kCulprit), Not(HasSubstr("DRAIN")));
  for (int h = 0; h < kHosts; ++h) {
    CommandResult npd = NodeCheck(h, {"--format", "npd", "--config",
                                      cluster_->dir().path() + "/" + cluster_->name(h) + ".yaml"});
    EXPECT_EQ(npd.exit_code, 0) << npd.output;
    EXPECT_THAT(npd.output, StartsWith(absl::StrCat("gloowatch: ", cluster_->name(h), " ok")));
  }

  // Partitioned: node-check names h3 from a peer and from h3 itself; a dry
  // run says what it would do and changes nothing; act drains h3 alone.
  ASSERT_TRUE(PartitionFabric().ok());
  const absl::Time cut = absl::Now();
  CommandResult dry;
  ASSERT_TRUE(WaitFor(
      [&] {
        dry = Act(/*dry_run=*/true);
        return absl::StrContains(dry.output, "would drain h3: gloowatch: h3:");
      },
      absl::Seconds(40)))
      << dry.output;
  std::cout << "culprit named " << absl::FormatDuration(absl::Now() - cut) << " after the cut\n";
  EXPECT_THAT(dry.output, Not(HasSubstr("would drain h1")));
  EXPECT_THAT(dry.output, Not(HasSubstr("would drain h2")));
  EXPECT_THAT(SlurmNode(kCulprit), Not(HasSubstr("DRAIN")));
  std::ifstream state(state_file_);
  const std::string state_text((std::istreambuf_iterator<char>(state)),
                               std::istreambuf_iterator<char>());
  EXPECT_THAT(state_text, Not(HasSubstr("\"h3\"")))
      << "a dry run wrote its drain into the state file";

  CommandResult slurm = NodeCheck(kController, {"--daemons", Daemons(), "--node", "h3"});
  EXPECT_EQ(slurm.exit_code, 1) << slurm.output;
  EXPECT_THAT(slurm.output, StartsWith("gloowatch: h3: "));
  CommandResult npd =
      NodeCheck(kController, {"--daemons", Daemons(), "--node", "h3", "--format", "npd"});
  EXPECT_EQ(npd.exit_code, 1) << npd.output;
  CommandResult peer =
      NodeCheck(kController, {"--daemons", Daemons(), "--node", "h1", "--format", "npd"});
  EXPECT_EQ(peer.exit_code, 0) << peer.output;
  CommandResult self =
      NodeCheck(kCulprit, {"--config", cluster_->dir().path() + "/h3.yaml", "--format", "npd"});
  EXPECT_EQ(self.exit_code, 1) << self.output;
  EXPECT_THAT(self.output, HasSubstr("h3: cut off: reaches none of its 2 peers"));

  CommandResult drained = Act(/*dry_run=*/false);
  EXPECT_EQ(drained.exit_code, 0) << drained.output;
  EXPECT_THAT(drained.output, HasSubstr("drain h3: gloowatch: h3: "));
  const std::string h3 = SlurmNode(kCulprit);
  std::cout << "h3 in Slurm: " << h3 << "\n";
  EXPECT_THAT(h3, HasSubstr("DRAIN"));
  EXPECT_THAT(h3, HasSubstr("Reason=gloowatch: h3: "));
  EXPECT_THAT(h3, HasSubstr("peers agree"));
  EXPECT_THAT(SlurmNode(0), Not(HasSubstr("DRAIN")));
  EXPECT_THAT(SlurmNode(1), HasSubstr("Reason=maintenance"));
  // Run again while it is still bad: it stays drained, nothing new.
  CommandResult again = Act(/*dry_run=*/false);
  EXPECT_THAT(again.output, HasSubstr("h3 stays drained"));
  EXPECT_THAT(again.output, Not(HasSubstr("drain h")));

  // Repaired: h3 stays drained until healthy for --healthy-for, then act
  // resumes it; h2's drain is still the operator's.
  ASSERT_TRUE(cluster_->ClearNft(kController).ok());
  ASSERT_TRUE(cluster_->ClearNft(1).ok());
  ASSERT_TRUE(cluster_->ClearNft(kCulprit).ok());
  const absl::Time healed = absl::Now();
  up = cluster_->WaitAllUp(absl::Seconds(30), /*measured=*/false);
  ASSERT_TRUE(up.ok()) << up;
  bool waited = false;
  CommandResult resumed;
  ASSERT_TRUE(WaitFor(
      [&] {
        resumed = Act(/*dry_run=*/false);
        if (absl::StrContains(resumed.output, "h3 stays drained: healthy for")) waited = true;
        absl::SleepFor(absl::Seconds(1));
        return absl::StrContains(resumed.output, "resume h3: healthy for");
      },
      absl::Seconds(60)))
      << resumed.output << "\n"
      << SlurmNode(kCulprit);
  std::cout << "h3 resumed " << absl::FormatDuration(absl::Now() - healed) << " after the repair\n";
  EXPECT_TRUE(waited) << "resumed without first staying drained while healthy";
  EXPECT_THAT(SlurmNode(kCulprit), Not(HasSubstr("DRAIN")));
  EXPECT_THAT(SlurmNode(1), HasSubstr("DRAIN"));
  EXPECT_THAT(SlurmNode(1), HasSubstr("Reason=maintenance"));
  // Healthy again: left alone.
  CommandResult after = Act(/*dry_run=*/false);
  EXPECT_EQ(after.exit_code, 0);
  EXPECT_THAT(after.output, Not(HasSubstr("drain h")));
  EXPECT_THAT(after.output, Not(HasSubstr("resume h")));
}

}  // namespace
}  // namespace gloowatch::testing
