// The fault catalogue (issue 27): one test a row, on two shared beds kept
// by netns_fault_bed (tests/support/fault_bed_keeper.h): the two-rack bed
// (6 hosts) and the job bed (3 hosts, a real torch.distributed Gloo job).
// Each row injects its fault, asks the real `gloowatch health --json` (and
// `gloowatch job --json`) inside h1's namespace every second or so until the
// right first suspect is named, repairs, and asks until the cluster is
// healthy with no suspect. Asserted: the right first suspect, nothing else
// blamed at any answer in between, the all-clear, and what each fault must
// show (the measured loss, the firewall's refusals, the host's load). Waits
// are bounded; nothing is timed here (bench/fault_catalogue_bench times the
// rows at the default schedule). ctest runs each row against the bed its
// fixture started (GLOOWATCH_FAULT_BED_DIR); run alone, a row starts a bed
// of its own. Needs root (and torch for the job rows); skips otherwise. See
// docs/testing.md, "The fault catalogue".
#include <cstdlib>
#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/fault_bed_keeper.h"
#include "tests/support/fault_catalogue.h"
#include "tests/support/netns_cluster.h"

namespace gloowatch::testing {
namespace {

using ::testing::IsEmpty;

// Bounds of one row, generous multiples of what the rows take (RowOptions):
// a clean bed, the culprit, the evidence, the all-clear.
constexpr absl::Duration kRowTimeout = absl::Minutes(7);

class NetnsCatalogueTest : public ::testing::Test {
 protected:
  // The row's result, from the shared bed when ctest started one, else from
  // a bed of this test's own.
  RowResult Run(CatalogueBed bed, const std::string& row) {
    const std::string reason = NetnsUnavailableReason();
    if (!reason.empty()) {
      skipped_ = true;
      return {};
    }
    const char* env = std::getenv("GLOOWATCH_FAULT_BED_DIR");
    std::string dir = env != nullptr ? env : "";
    if (dir.empty() || !KeeperAlive(dir, bed)) {
      own_dir_ = std::make_unique<TempDir>();
      dir = own_dir_->path();
      CommandResult up = RunCommand({BinaryPath("tests/netns/netns_fault_bed"), "up", "--bed",
                                     CatalogueBedName(bed), "--dir", dir},
                                    absl::Minutes(5));
      std::cout << up.output;
      if (absl::StrContains(up.output, "[  SKIPPED ]")) {
        skipped_ = true;
        return {};
      }
      EXPECT_TRUE(up.ok()) << up.output;
      own_bed_ = bed;
    }
    const char* healthy = std::getenv("GLOOWATCH_RACKS_HEALTHY_SECONDS");
    absl::StatusOr<RowResult> r = RunRowOnKeeper(
        dir, bed, row, absl::Seconds(healthy ? std::min(3600, std::atoi(healthy)) : 150),
        kRowTimeout, [](const std::string& line) { std::cout << line << std::endl; });
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return {};
    std::cout << absl::StrFormat(
        "[figures] %s: culprit %s, all-clear %s, first suspect %s, false blame %d\n", r->row,
        r->culprit_seconds ? absl::StrFormat("%.1f s", *r->culprit_seconds) : "never",
        r->all_clear_seconds ? absl::StrFormat("%.1f s", *r->all_clear_seconds) : "never",
        r->first_suspect.empty() ? "none" : r->first_suspect, r->false_blame.size());
    return *std::move(r);
  }

  void TearDown() override {
    if (own_dir_) {
      CommandResult down = RunCommand({BinaryPath("tests/netns/netns_fault_bed"), "down", "--bed",
                                       CatalogueBedName(*own_bed_), "--dir", own_dir_->path()},
                                      absl::Minutes(2));
      if (HasFailure()) {
        std::cerr << ReadKeeperLog();
      }
      std::cout << down.output;
    }
  }

  std::string ReadKeeperLog() const {
    CommandResult log =
        RunCommand({"cat", KeeperPathsOf(own_dir_->path(), *own_bed_).log}, absl::Seconds(5));
    return log.output;
  }

  // The right first suspect, nobody else blamed at any answer from the fault
  // to the all-clear, and the all-clear.
  static void ExpectNamedAndCleared(const RowResult& r) {
    ASSERT_EQ(r.error, "");
    EXPECT_TRUE(r.culprit_seconds.has_value())
        << r.row << ": " << r.expected << " never named; first suspect "
        << (r.first_suspect.empty() ? "none" : r.first_suspect) << "; last answer "
        << r.held.dump();
    EXPECT_EQ(r.first_suspect, r.expected) << r.row;
    EXPECT_THAT(r.false_blame, IsEmpty())
        << r.row << "; the first answer to blame another: " << r.blamed.dump();
    EXPECT_THAT(r.baseline_blame, IsEmpty()) << r.row << ": a suspect on the clean bed";
    EXPECT_TRUE(r.all_clear_seconds.has_value())
        << r.row << ": no all-clear; last answer " << r.clear.dump();
  }

  using Direction = std::function<bool(const std::string&, const std::string&)>;

  // The directions `lossy` selects, over the recent part of their loss
  // window (the last 30 s: the fault's segments alone once it is older, see
  // kRecentLossWindow): the loss over all of them within 30% of `injected`
  // (over at least 5,000 segments); every other direction that carried
  // 1,000 segments below 1%. A healthy bed (`injected` 0): every direction.
  static void ExpectLoss(const nlohmann::json& j, double injected, const Direction& lossy) {
    double lost = 0, sent = 0;
    int lossy_views = 0, views = 0;
    ForEachRecentLossView(
        j, [&](const std::string& from, const std::string& to, double ratio, double segments) {
          std::cout << absl::StrFormat("%s -> %s: recent loss %.4f over %.0f segments%s\n", from,
                                       to, ratio, segments, lossy(from, to) ? " (lossy)" : "");
          ++views;
          if (lossy(from, to)) {
            lost += ratio * segments;
            sent += segments;
            ++lossy_views;
          } else if (segments >= 1000) {
            EXPECT_LT(ratio, 0.01) << from << " -> " << to;
          }
        });
    EXPECT_GT(views, 0) << "no direction with recent loss figures";
    if (injected == 0) {
      EXPECT_EQ(lossy_views, 0);
      return;
    }
    ASSERT_GT(lossy_views, 0);
    ASSERT_GT(sent, 5000) << "too little traffic on the lossy directions";
    std::cout << absl::StrFormat("lossy directions: %.4f over %.0f segments, injected %.4f\n",
                                 lost / sent, sent, injected);
    EXPECT_NEAR(lost / sent, injected, 0.3 * injected);
  }

  static std::string VictimOf(const RowResult& r) {
    return r.expected.substr(r.expected.find(':') + 1);
  }

  bool skipped_ = false;
  std::unique_ptr<TempDir> own_dir_;
  std::optional<CatalogueBed> own_bed_;
};

#define RUN_ROW(bed, row)                                     \
  const RowResult r = Run(bed, row);                          \
  if (skipped_) GTEST_SKIP() << "netns bed unavailable here"; \
  if (HasFailure()) return

// --- the racks bed ---------------------------------------------------------------
// In the order the rows run on the one bed (tests/netns/CMakeLists.txt). The
// rows that were the racks tests' scenarios keep those tests' names
// (NetnsRacksTest, ctest netns_racks_*) and what they asserted.

class NetnsRacksTest : public NetnsCatalogueTest {};

// SIGKILL of a node's daemon and transport: named as the node at once, with
// confidence near 1, from the control plane (its daemon does not answer and
// its peers see it down). After the restart the peers that wait out their
// reconnect backoff blame nobody.
TEST_F(NetnsCatalogueTest, NodeKilled) {
  RUN_ROW(CatalogueBed::kRacks, "node_killed");
  ExpectNamedAndCleared(r);
  ASSERT_FALSE(r.culprit.is_null());
  EXPECT_GE(r.culprit["suspects"][0]["confidence"].get<double>(), 0.9) << r.culprit["suspects"];
}

// SIGSTOP of a daemon alone: its transport keeps answering pings and tells
// the peers the daemon is silent: a stuck daemon, not a network fault.
TEST_F(NetnsCatalogueTest, DaemonFrozen) {
  RUN_ROW(CatalogueBed::kRacks, "daemon_frozen");
  ExpectNamedAndCleared(r);
  ASSERT_FALSE(r.culprit.is_null());
  EXPECT_THAT(r.culprit["suspects"][0]["evidence"].dump(), ::testing::HasSubstr("transport"));
}

// SIGKILL of a transport: its daemon restarts it; meanwhile its links break.
// The node from the first answer (its daemon says no transport runs, or the
// peers' pairs are older than the new one), never the links of the peers
// that noticed first or that reconnect last.
TEST_F(NetnsCatalogueTest, TransportKilled) {
  RUN_ROW(CatalogueBed::kRacks, "transport_killed");
  ExpectNamedAndCleared(r);
  ASSERT_FALSE(r.culprit.is_null());
  EXPECT_THAT(r.culprit["suspects"][0]["evidence"].dump(),
              ::testing::HasSubstr("its transport process died"));
}

// Two hosts cut off from each other (everything dropped both ways): that
// link, and nothing else.
TEST_F(NetnsCatalogueTest, Partition) {
  RUN_ROW(CatalogueBed::kRacks, "partition");
  ExpectNamedAndCleared(r);
}

// A host firewall that drops its Gloo pairs' ports (its daemon's ports
// open): the node, with its daemon answering.
TEST_F(NetnsCatalogueTest, FirewallDropsGlooPorts) {
  RUN_ROW(CatalogueBed::kRacks, "firewall_drop");
  ExpectNamedAndCleared(r);
  ASSERT_FALSE(r.held.is_null());
  EXPECT_GE(r.held["suspects"][0]["bad_links"].get<int>(), 4) << r.held["suspects"][0];
  EXPECT_EQ(r.held["suspects"][0]["fine_links"], 0) << r.held["suspects"][0];
}

// The host with the lowest address rejects (TCP reset) every port from 1024
// up but its daemon's: of a Gloo pair the lower address listens
// (gloo/transport/tcp/pair.cc), so every pair of it breaks although its
// gRPC answers. The node; the peers' evidence says `refused`; after the
// repair the peers still waiting to reconnect blame nobody.
TEST_F(NetnsRacksTest, FirewallOnOneHostsEphemeralPortsNamesThatNode) {
  RUN_ROW(CatalogueBed::kRacks, "firewall_reject");
  ExpectNamedAndCleared(r);
  ASSERT_FALSE(r.held.is_null());
  EXPECT_GE(r.held["suspects"][0]["bad_links"].get<int>(), 4) << r.held["suspects"][0];
  EXPECT_EQ(r.held["suspects"][0]["fine_links"], 0) << r.held["suspects"][0];
  EXPECT_THAT(r.held["suspects"][0]["evidence"].dump(), ::testing::HasSubstr("(last: refused)"));
}

// A saturated host (its daemon and transport under a 5% CPU quota with
// three busy loops): the host, not its NIC; its scheduling delay is above
// the threshold, every other host's below.
TEST_F(NetnsRacksTest, CpuHogOnOneHostNamesTheOverloadedHost) {
  RUN_ROW(CatalogueBed::kRacks, "cpu_hog");
  ExpectNamedAndCleared(r);
  ASSERT_FALSE(r.culprit.is_null());
  const std::string victim = VictimOf(r);
  for (const auto& n : r.culprit["nodes"]) {
    const nlohmann::json& delay = n["host_load"]["scheduling_delay_seconds"];
    std::cout << n["name"] << ": scheduling delay " << delay << ", recent "
              << n["host_load"]["recent_scheduling_delay_seconds"] << "\n";
    ASSERT_TRUE(delay.is_number()) << n;
    if (n["name"] == victim) {
      EXPECT_GE(delay.get<double>(), 0.01);  // thresholds.scheduling_delay's default
    } else {
      EXPECT_LT(delay.get<double>(), 0.01) << n["name"];
    }
  }
}

// What h3 receives from h4 (another rack) loses 5%: that link alone, the
// measured loss over h4 -> h3 near 5%.
TEST_F(NetnsRacksTest, LossOnOneLinkNamesThatLink) {
  RUN_ROW(CatalogueBed::kRacks, "link_loss");
  ExpectNamedAndCleared(r);
  ExpectLoss(r.held, 0.05,
             [](const std::string& a, const std::string& b) { return a == "h4" && b == "h3"; });
}

// 5% random loss both ways on h2's bridge port (a bad NIC or cable): the node.
TEST_F(NetnsRacksTest, FivePercentLossOnOneNicNamesThatNode) {
  RUN_ROW(CatalogueBed::kRacks, "nic_loss_5");
  ExpectNamedAndCleared(r);
  ExpectLoss(r.held, 0.05,
             [](const std::string& a, const std::string& b) { return a == "h2" || b == "h2"; });
}

// The same at 2% on h5.
TEST_F(NetnsRacksTest, TwoPercentLossOnOneNicNamesThatNode) {
  RUN_ROW(CatalogueBed::kRacks, "nic_loss_2");
  ExpectNamedAndCleared(r);
  ExpectLoss(r.held, 0.02,
             [](const std::string& a, const std::string& b) { return a == "h5" || b == "h5"; });
}

// 5% each way on the router's port towards rack1: every link between the
// racks loses, none inside them. With two racks the uplink of either (or
// the path between them) explains it: the suspect names both.
TEST_F(NetnsRacksTest, LossOnOneRackUplinkNamesTheUplink) {
  RUN_ROW(CatalogueBed::kRacks, "uplink_loss");
  ExpectNamedAndCleared(r);
  ASSERT_FALSE(r.held.is_null());
  const nlohmann::json& s = r.held["suspects"][0];
  EXPECT_EQ(s["groups"], nlohmann::json({"rack1", "rack2"}));
  // All 9 links between the racks are bad; one whose window holds too few
  // segments yet is no evidence either way, so at least most of them.
  EXPECT_GE(s["bad_links"].get<int>(), 5) << s;
  EXPECT_LE(s["bad_links"].get<int>(), 9) << s;
  EXPECT_EQ(s["fine_links"], 0) << s;
  ExpectLoss(r.held, 0.05, [](const std::string& a, const std::string& b) {
    return (a < "h4") != (b < "h4");  // h1-h3 are rack1
  });
}

// Last on the bed: minutes of asking after every fault above was repaired.
// Their history (recovered failures, restarted daemons) blames nobody: no
// suspect and verdict healthy at every answer, no direction lossy.
// GLOOWATCH_RACKS_HEALTHY_SECONDS asks longer (up to an hour).
TEST_F(NetnsRacksTest, HealthyRacksBlameNobody) {
  RUN_ROW(CatalogueBed::kRacks, "healthy");
  ASSERT_EQ(r.error, "");
  EXPECT_THAT(r.false_blame, IsEmpty()) << "the first answer to blame: " << r.blamed.dump();
  EXPECT_THAT(r.baseline_blame, IsEmpty());
  EXPECT_EQ(r.first_suspect, "");
  EXPECT_GE(r.answers, 20);
  ExpectLoss(r.held, 0, [](const std::string&, const std::string&) { return false; });
}

// --- the job bed -----------------------------------------------------------------

// A rank SIGSTOPped: `gloowatch job` names it (silent, its process stopped)
// and says the others hang; the cluster blames nobody.
TEST_F(NetnsCatalogueTest, RankStopped) {
  RUN_ROW(CatalogueBed::kJob, "rank_stopped");
  ExpectNamedAndCleared(r);
  ASSERT_FALSE(r.job_culprit.is_null());
  EXPECT_EQ(r.job_culprit["verdict"], "hung") << r.job_culprit;
  EXPECT_EQ(r.job_culprit["suspects"][0]["process"], "stopped") << r.job_culprit;
  EXPECT_EQ(r.job_culprit["links"].size(), 0u) << r.job_culprit;
}

// A rank SIGKILLed: named gone; the job is never reported hung (a dead job
// never pages); the cluster blames nobody. Repaired by restarting the job.
TEST_F(NetnsCatalogueTest, RankKilled) {
  RUN_ROW(CatalogueBed::kJob, "rank_killed");
  ExpectNamedAndCleared(r);
  ASSERT_FALSE(r.job_culprit.is_null());
  EXPECT_EQ(r.job_culprit["suspects"][0]["process"], "gone") << r.job_culprit;
  EXPECT_THAT(r.job_verdicts, ::testing::Not(::testing::Contains("hung")));
}

}  // namespace
}  // namespace gloowatch::testing
