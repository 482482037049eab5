// Fault scenarios on simulated hosts (one network namespace each, one
// gloowatchd each, a bridge between them): crash and restart, partition,
// slow link, clock skew, wrong / down interface, interface flap. Every
// scenario asserts the values the daemons report. Needs root; skips
// otherwise. See docs/testing.md.
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/metrics_text.h"
#include "tests/support/netns_cluster.h"
#include "tests/support/paths.h"

namespace gloowatch::testing {
namespace {

constexpr char kFakeTime[] = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";
constexpr absl::Duration kGlooTimeout = absl::Seconds(2);  // NetnsClusterOptions default

bool IsDown(const v1::PeerStatus* p) { return p != nullptr && p->state() != v1::PEER_STATE_UP; }

std::string Elapsed(absl::Time since) { return absl::FormatDuration(absl::Now() - since); }

class NetnsFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = NetnsUnavailableReason();
    if (!reason.empty()) GTEST_SKIP() << "netns harness unavailable: " << reason;
  }
  // Creates the cluster (no daemons yet).
  void Make(NetnsClusterOptions options = {}) {
    cluster_ = std::make_unique<NetnsCluster>(std::move(options));
    absl::Status s = cluster_->Setup();
    ASSERT_TRUE(s.ok()) << s;
  }
  void TearDown() override {
    if (cluster_ && HasFailure()) std::cerr << cluster_->AllLogs();
    cluster_.reset();
  }
  // host's view of peer (by index); nullopt if the daemon does not answer.
  std::optional<v1::PeerStatus> View(int host, int peer) {
    absl::StatusOr<v1::NodeStatus> s = cluster_->Status(host);
    if (!s.ok()) return std::nullopt;
    const v1::PeerStatus* p = FindPeer(*s, cluster_->name(peer));
    if (p == nullptr) return std::nullopt;
    return *p;
  }
  uint64_t ProbesOk(int host, int peer) {
    auto p = View(host, peer);
    return p ? p->probes_ok() : 0;
  }
  // host -> peer stays UP and probes_ok grows by more than 2 over `span`.
  void ExpectKeepsProbing(int host, int peer, absl::Duration span = absl::Seconds(2)) {
    SCOPED_TRACE(absl::StrCat(cluster_->name(host), " -> ", cluster_->name(peer)));
    const uint64_t before = ProbesOk(host, peer);
    absl::SleepFor(span);
    auto after = View(host, peer);
    ASSERT_TRUE(after.has_value());
    EXPECT_EQ(after->state(), v1::PEER_STATE_UP) << after->ShortDebugString();
    EXPECT_GT(after->probes_ok(), before + 2);
  }
  std::unique_ptr<NetnsCluster> cluster_;
};

// --- crash and restart ----------------------------------------------------------

TEST_F(NetnsFaultTest, PeerCrashMidTransferAndRestart) {
  NetnsClusterOptions options;
  // Frequent, large transfers so one is running when we kill.
  options.extra_yaml =
      "schedule:\n  latency_interval: 500ms\n  skew_interval: 1s\n  bandwidth_interval: 3s\n"
      "  bandwidth_budget: 1\n"
      "probe:\n  bandwidth_bytes: 128MiB\n  bandwidth_message_bytes: 1MiB\n"
      "  backoff_initial: 200ms\n  backoff_max: 1s\n";
  Make(options);
  cluster_->StartAll();
  absl::Status up = cluster_->WaitAllUp(absl::Seconds(40), /*measured=*/true);
  ASSERT_TRUE(up.ok()) << up;

  // Kill h3 the moment its eth0 carries bulk traffic (> 200 MB/s; pings and
  // keepalives are a few KB/s).
  constexpr int kVictim = 2;
  const absl::Time wait_start = absl::Now();
  double rate = 0;
  bool in_transfer = false;
  auto last = ReadInterfaceCounters(cluster_->ns(kVictim), "eth0");
  ASSERT_TRUE(last.ok()) << last.status();
  absl::Time last_at = absl::Now();
  while (absl::Now() - wait_start < absl::Seconds(30)) {
    absl::SleepFor(absl::Milliseconds(2));
    auto now = ReadInterfaceCounters(cluster_->ns(kVictim), "eth0");
    ASSERT_TRUE(now.ok()) << now.status();
    const absl::Time at = absl::Now();
    const double seconds = absl::ToDoubleSeconds(at - last_at);
    if (seconds < 0.005) continue;
    const double bytes =
        static_cast<double>((now->rx_bytes - last->rx_bytes) + (now->tx_bytes - last->tx_bytes));
    rate = bytes / seconds;
    last = now;
    last_at = at;
    if (rate > 200e6 && bytes > 1e6) {
      in_transfer = true;
      break;
    }
  }
  ASSERT_TRUE(in_transfer) << "no bulk transfer through " << cluster_->name(kVictim)
                           << " within 30 s";
  cluster_->Kill(kVictim, SIGKILL);
  const absl::Time killed = absl::Now();
  std::cout << "killed " << cluster_->name(kVictim) << " while its eth0 moved " << rate / 1e6
            << " MB/s\n";

  // Down within the Gloo timeout plus slack (a probe interval, a backoff).
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE(cluster_->name(i));
    ASSERT_TRUE(WaitFor(
        [&] {
          auto p = View(i, kVictim);
          return p && p->state() != v1::PEER_STATE_UP && p->probes_failed() > 0;
        },
        kGlooTimeout + absl::Seconds(3) - (absl::Now() - killed)))
        << "h3 not reported down " << Elapsed(killed) << " after the kill";
    auto p = View(i, kVictim);
    ASSERT_TRUE(p.has_value());
    const v1::FailureReason reason = p->last_failure().reason();
    EXPECT_TRUE(reason == v1::FAILURE_REASON_RESET || reason == v1::FAILURE_REASON_REFUSED ||
                reason == v1::FAILURE_REASON_TIMEOUT)
        << p->last_failure().ShortDebugString();
    EXPECT_GT(p->failures_in_window(), 0u);
    std::cout << cluster_->name(i) << " -> h3: " << p->last_failure().ShortDebugString() << "\n";
    auto metrics = cluster_->Metrics(i);
    ASSERT_TRUE(metrics.ok()) << metrics.status();
    EXPECT_EQ(FindMetric(*metrics, "gloowatch_peer_up",
                         {{"node", cluster_->name(i)}, {"peer", cluster_->name(kVictim)}}),
              0);
  }
  const absl::Duration detect = absl::Now() - killed;
  std::cout << "both survivors report h3 down " << detect << " after the kill\n";
  EXPECT_LT(detect, kGlooTimeout + absl::Seconds(3));

  // The survivors keep probing each other, and keep running.
  ExpectKeepsProbing(0, 1);
  ExpectKeepsProbing(1, 0);
  EXPECT_TRUE(cluster_->daemon(0)->running());
  EXPECT_TRUE(cluster_->daemon(1)->running());
  // Nothing listens at h3's address any more: refused (the namespace lives).
  EXPECT_TRUE(WaitFor(
      [&] {
        auto p = View(0, kVictim);
        return p && p->last_failure().reason() == v1::FAILURE_REASON_REFUSED;
      },
      absl::Seconds(10)));

  const absl::Time restarted = absl::Now();
  cluster_->Start(kVictim);
  up = cluster_->WaitAllUp(absl::Seconds(30), /*measured=*/false);
  ASSERT_TRUE(up.ok()) << up;
  std::cout << "everyone up again " << Elapsed(restarted) << " after the restart\n";
  ExpectKeepsProbing(0, kVictim);
  ExpectKeepsProbing(kVictim, 1);
}

// --- partition -----------------------------------------------------------------

TEST_F(NetnsFaultTest, PartitionBetweenTwoHostsAndRecovery) {
  Make();
  cluster_->StartAll();
  absl::Status up = cluster_->WaitAllUp(absl::Seconds(30), /*measured=*/false);
  ASSERT_TRUE(up.ok()) << up;
  const v1::PeerStatus before[2] = {*View(0, 1), *View(1, 0)};
  const uint64_t failed_before[2] = {before[0].probes_failed(), before[1].probes_failed()};
  const pid_t pids[3] = {cluster_->daemon(0)->pid(), cluster_->daemon(1)->pid(),
                         cluster_->daemon(2)->pid()};

  ASSERT_TRUE(cluster_->Partition(0, 1).ok());
  const absl::Time cut = absl::Now();
  for (auto [self, other] : {std::pair{0, 1}, std::pair{1, 0}}) {
    SCOPED_TRACE(absl::StrCat(cluster_->name(self), " -> ", cluster_->name(other)));
    ASSERT_TRUE(WaitFor(
        [&] {
          auto p = View(self, other);
          return p && p->state() != v1::PEER_STATE_UP && p->probes_failed() > failed_before[self];
        },
        kGlooTimeout + absl::Seconds(4) - (absl::Now() - cut)))
        << "not reported down " << Elapsed(cut) << " after the cut";
  }
  std::cout << "h1<->h2 reported down " << Elapsed(cut) << " after the cut\n";
  // A reconnect (OpenProbePair, Gloo connect) fails as well: wait for the
  // second failure since the cut on both sides, rather than sleep and hope
  // it came.
  auto failures_since_cut = [&](int self) -> uint64_t {
    auto p = View(self, 1 - self);
    if (!p) return 0;
    const auto& old_counts = before[self].failures_by_reason();
    uint64_t n = 0;
    for (const auto& [name, count] : p->failures_by_reason()) {
      n += count - (old_counts.count(name) ? old_counts.at(name) : 0);
    }
    return n;
  };
  EXPECT_TRUE(WaitFor([&] { return failures_since_cut(0) >= 2 && failures_since_cut(1) >= 2; },
                      absl::Seconds(20)))
      << "no reconnect failed on both sides " << Elapsed(cut) << " after the cut";
  for (auto [self, other] : {std::pair{0, 1}, std::pair{1, 0}}) {
    SCOPED_TRACE(absl::StrCat(cluster_->name(self), " -> ", cluster_->name(other)));
    auto p = View(self, other);
    ASSERT_TRUE(p.has_value());
    EXPECT_NE(p->state(), v1::PEER_STATE_UP);
    const v1::FailureReason reason = p->last_failure().reason();
    EXPECT_TRUE(reason == v1::FAILURE_REASON_TIMEOUT || reason == v1::FAILURE_REASON_UNREACHABLE)
        << p->last_failure().ShortDebugString();
    // Every failure since the cut is a timeout or unreachable (the counts
    // before it hold start-up refusals).
    const auto& old_counts = before[self].failures_by_reason();
    uint64_t new_failures = 0;
    for (const auto& [name, count] : p->failures_by_reason()) {
      const uint64_t delta = count - (old_counts.count(name) ? old_counts.at(name) : 0);
      new_failures += delta;
      if (delta > 0 && name != "timeout" && name != "unreachable") {
        ADD_FAILURE() << "unexpected failure reason " << name << " x" << delta << ": "
                      << p->ShortDebugString();
      }
    }
    EXPECT_GE(new_failures, 2u) << "the pair and then a reconnect should have failed";
    std::cout << cluster_->name(self) << " -> " << cluster_->name(other) << ": " << new_failures
              << " failures during the partition, last: " << p->last_failure().message() << "\n";
  }
  // Links not cut stay up and keep probing.
  ExpectKeepsProbing(0, 2);
  ExpectKeepsProbing(2, 0);
  ExpectKeepsProbing(1, 2);
  ExpectKeepsProbing(2, 1);

  // (ClearFaults: what a bed shared between scenarios resets with.)
  const absl::Status cleared = cluster_->ClearFaults();
  ASSERT_TRUE(cleared.ok()) << cleared;
  const absl::Time healed = absl::Now();
  up = cluster_->WaitAllUp(absl::Seconds(20), /*measured=*/false);
  ASSERT_TRUE(up.ok()) << up;
  std::cout << "h1<->h2 up again " << Elapsed(healed) << " after the rules were removed\n";
  ExpectKeepsProbing(0, 1);
  ExpectKeepsProbing(1, 0);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(cluster_->daemon(i)->running());
    EXPECT_EQ(cluster_->daemon(i)->pid(), pids[i]) << "no restart";
  }
}

// --- slow link -----------------------------------------------------------------

TEST_F(NetnsFaultTest, SlowLinkShapedByTbf) {
  constexpr double kCap = 200e6 / 8;      // 200mbit in bytes/s
  constexpr double kLinkSpeed = 1e9 / 8;  // link_speed: 1Gbps
  NetnsClusterOptions options;
  options.gloo_yaml = "gloo:\n  interface: eth0\n  timeout: 2s\n  link_speed: 1Gbps\n";
  Make(options);
  // h1's link, both directions: eth0 egress (h1 sends) and the switch port's
  // egress (h1 receives).
  absl::Status shaped = cluster_->Shape(0, "200mbit", ShapeSide::kBoth);
  ASSERT_TRUE(shaped.ok()) << shaped;
  cluster_->StartAll();
  absl::Status up = cluster_->WaitAllUp(absl::Seconds(60), /*measured=*/true);
  ASSERT_TRUE(up.ok()) << up;

  for (int self = 0; self < 3; ++self) {
    absl::StatusOr<v1::NodeStatus> status = cluster_->Status(self);
    ASSERT_TRUE(status.ok()) << status.status();
    EXPECT_EQ(status->gloo().interface(), "eth0");
    EXPECT_EQ(status->gloo().address(), cluster_->ip(self));
    EXPECT_DOUBLE_EQ(status->gloo().link_speed_bytes_per_second(), kLinkSpeed);
    for (int other = 0; other < 3; ++other) {
      if (other == self) continue;
      SCOPED_TRACE(absl::StrCat(cluster_->name(self), " -> ", cluster_->name(other)));
      const v1::PeerStatus& p = *FindPeer(*status, cluster_->name(other));
      const v1::BandwidthFigures& bw = p.bandwidth();
      std::cout << cluster_->name(self) << " -> " << cluster_->name(other) << ": tx "
                << bw.tx_bytes_per_second() / 1e6 << " MB/s, rx " << bw.rx_bytes_per_second() / 1e6
                << " MB/s, link_ratio " << bw.link_ratio() << "\n";
      if (self == 0 || other == 0) {
        EXPECT_NEAR(bw.tx_bytes_per_second(), kCap, 0.15 * kCap);
        EXPECT_NEAR(bw.rx_bytes_per_second(), kCap, 0.15 * kCap);
        ASSERT_TRUE(bw.has_link_ratio());
        EXPECT_LT(bw.link_ratio(), 0.8);
        EXPECT_NEAR(bw.link_ratio(), kCap / kLinkSpeed, 0.15 * kCap / kLinkSpeed);
      } else {
        EXPECT_GT(bw.tx_bytes_per_second(), 2 * kCap);
        EXPECT_GT(bw.rx_bytes_per_second(), 2 * kCap);
      }
    }
  }
  auto metrics = cluster_->Metrics(1);
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_EQ(FindMetric(*metrics, "gloowatch_link_speed_bytes_per_second", {{"interface", "eth0"}}),
            kLinkSpeed);
  auto ratio = FindMetric(*metrics, "gloowatch_peer_bandwidth_link_ratio",
                          {{"peer", "h1"}, {"direction", "tx"}});
  ASSERT_TRUE(ratio.has_value());
  EXPECT_LT(*ratio, 0.8);
}

// --- clock skew ----------------------------------------------------------------

TEST_F(NetnsFaultTest, ClockSkewUnderLibfaketime) {
  if (access(kFakeTime, R_OK) != 0) GTEST_SKIP() << "libfaketime not installed: " << kFakeTime;
  constexpr double kShift = 0.5;
  Make();
  // A relative offset in seconds ("+0.5"; "+500ms" would mean 500 minutes).
  // Monotonic time stays real so timeouts and Gloo are unaffected.
  DaemonOptions skewed;
  skewed.env = {{"LD_PRELOAD", kFakeTime},
                {"FAKETIME", "+0.5"},
                {"FAKETIME_DONT_FAKE_MONOTONIC", "1"},
                {"FAKETIME_NO_CACHE", "1"}};
  cluster_->Start(0, skewed);
  cluster_->Start(1);
  cluster_->Start(2);
  absl::Status up = cluster_->WaitAllUp(absl::Seconds(40), /*measured=*/true);
  ASSERT_TRUE(up.ok()) << up;
  absl::SleepFor(absl::Seconds(2));  // a few more skew rounds

  // The faked daemon's own idea of "now".
  absl::StatusOr<v1::NodeStatus> h1 = cluster_->Status(0);
  ASSERT_TRUE(h1.ok()) << h1.status();
  const double h1_now = static_cast<double>(h1->now().seconds()) + h1->now().nanos() * 1e-9;
  EXPECT_NEAR(h1_now - absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()), kShift, 0.1)
      << "libfaketime not in effect";

  auto expect_offset = [&](int self, int other, double expected) {
    SCOPED_TRACE(absl::StrCat(cluster_->name(self), " -> ", cluster_->name(other)));
    auto p = View(self, other);
    ASSERT_TRUE(p.has_value());
    ASSERT_TRUE(p->clock().has_offset_seconds());
    std::cout << cluster_->name(self) << " -> " << cluster_->name(other) << ": offset "
              << p->clock().offset_seconds() * 1e3 << " ms +- " << p->clock().error_seconds() * 1e3
              << " ms\n";
    EXPECT_NEAR(p->clock().offset_seconds(), expected, 0.002);
    EXPECT_LT(p->clock().error_seconds(), 0.002);
  };
  expect_offset(1, 0, kShift);
  expect_offset(2, 0, kShift);
  expect_offset(0, 1, -kShift);
  expect_offset(0, 2, -kShift);
  expect_offset(1, 2, 0);
  expect_offset(2, 1, 0);

  auto metrics = cluster_->Metrics(1);
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  auto offset = FindMetric(*metrics, "gloowatch_peer_clock_offset_seconds", {{"peer", "h1"}});
  ASSERT_TRUE(offset.has_value());
  EXPECT_NEAR(*offset, kShift, 0.002);

  // Logs of two hosts in one order. Rank 0 runs on h1 (its clock 0.5 s
  // ahead, as its daemon's), rank 1 on h2; each host stamps its rank's log
  // line with its own clock, rank 0's 0.2 s before rank 1's. By the stamps
  // rank 1 failed first; `explain-log --job` corrects each host's times by
  // the offsets the daemons measured and puts rank 0 first.
  const std::string gloowatch = BinaryPath("client/gloowatch");
  for (int rank : {0, 1}) {
    CommandResult r =
        cluster_->Exec(rank, {gloowatch, "report-step", "--daemon", cluster_->grpc(rank), "--job",
                              "skewjob", "--rank", absl::StrCat(rank), "--step", "1",
                              "--step-seconds", "1", "--comm-seconds", "0.1"});
    ASSERT_TRUE(r.ok()) << r.output;
  }
  auto stamp = [&](int host, bool faked) {
    std::vector<std::string> argv = {"env"};
    if (faked) {
      argv.insert(argv.end(),
                  {absl::StrCat("LD_PRELOAD=", kFakeTime), "FAKETIME=+0.5", "FAKETIME_NO_CACHE=1"});
    }
    argv.insert(argv.end(), {"date", "+%Y-%m-%d %H:%M:%S,%3N"});
    CommandResult r = cluster_->Exec(host, argv);
    EXPECT_TRUE(r.ok()) << r.output;
    return std::string(absl::StripAsciiWhitespace(r.output));
  };
  const std::string rank0_time = stamp(0, /*faked=*/true);
  absl::SleepFor(absl::Milliseconds(200));
  const std::string rank1_time = stamp(1, /*faked=*/false);
  std::cout << "rank 0 (h1) stamped " << rank0_time << ", rank 1 (h2) " << rank1_time << "\n";
  ASSERT_GT(rank0_time, rank1_time) << "the skew must invert the stamps";
  auto log = [&](int rank, const std::string& time, int peer) {
    return cluster_->dir().Write(
        absl::StrCat("rank", rank, ".log"),
        absl::StrCat(time, " [rank", rank,
                     "]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] "
                     "Connection closed by peer [",
                     cluster_->ip(peer), "]:19722\n"));
  };
  const std::string rank0_log = log(0, rank0_time, 1), rank1_log = log(1, rank1_time, 0);
  const std::string daemons =
      absl::StrCat(cluster_->grpc(0), ",", cluster_->grpc(1), ",", cluster_->grpc(2));
  auto explain = [&](std::vector<std::string> extra) {
    std::vector<std::string> argv = {gloowatch, "explain-log", "--json"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.insert(argv.end(), {rank0_log, rank1_log});
    CommandResult r = cluster_->Exec(0, argv, absl::Seconds(30));
    nlohmann::json j = nlohmann::json::parse(r.output, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(j.is_discarded()) << r.output;
    return j;
  };
  nlohmann::json raw = explain({});
  ASSERT_FALSE(raw.is_discarded());
  EXPECT_EQ(raw["root_cause"]["rank"], "rank 1") << raw.dump(1);
  nlohmann::json corrected = explain({"--job", "skewjob", "--daemons", daemons});
  ASSERT_FALSE(corrected.is_discarded());
  EXPECT_EQ(corrected["root_cause"]["rank"], "rank 0") << corrected.dump(1);
  EXPECT_EQ(corrected["root_cause"]["host"], "h1") << corrected.dump(1);
  ASSERT_EQ(corrected["echoes"].size(), 1u) << corrected.dump(1);
  EXPECT_EQ(corrected["echoes"][0]["rank"], "rank 1") << corrected.dump(1);
  EXPECT_EQ(corrected["clock_correction"]["reference"], "h1") << corrected.dump(1);
  EXPECT_EQ(corrected["clock_correction"]["source"], "daemons") << corrected.dump(1);
  // h2's clock minus h1's: -0.5 s, as measured within 10 ms.
  EXPECT_NEAR(corrected["clock_correction"]["offsets"]["h2"].get<double>(), -kShift, 0.01)
      << corrected.dump(1);
  CommandResult text = cluster_->Exec(0, {gloowatch, "explain-log", "--job", "skewjob", "--daemons",
                                          daemons, rank0_log, rank1_log});
  std::cout << text.output;
  EXPECT_TRUE(absl::StrContains(
      text.output,
      "times corrected by measured offsets (to h1's clock, from the daemons): h2 -0.5"))
      << text.output;
}

// --- interface problems at start -------------------------------------------------

TEST_F(NetnsFaultTest, MissingGlooSocketIfnameExitsNamingIt) {
  NetnsClusterOptions options;
  options.hosts = 2;
  Make(options);
  DaemonOptions wrong;
  wrong.env = {{"GLOO_SOCKET_IFNAME", "eth7"}};
  wrong.gloo_yaml = "gloo:\n  timeout: 2s\n";  // neither address nor interface: env decides
  const absl::Time start = absl::Now();
  cluster_->Start(0, wrong);
  const std::optional<int> exit = cluster_->daemon(0)->Wait(absl::Seconds(10));
  ASSERT_TRUE(exit.has_value()) << "still running " << Elapsed(start) << " after start";
  std::cout << "exit " << *exit << " after " << Elapsed(start) << "\n";
  EXPECT_EQ(*exit, 69);
  const std::string log = cluster_->DaemonLog(0);
  std::cout << log;
  EXPECT_TRUE(absl::StrContains(log, "eth7")) << log;
  EXPECT_TRUE(absl::StrContains(log, "GLOO_SOCKET_IFNAME")) << log;
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST_F(NetnsFaultTest, Eth0DownBeforeStartExitsWithClearError) {
  NetnsClusterOptions options;
  options.hosts = 2;
  Make(options);
  ASSERT_TRUE(cluster_->SetLink(0, false).ok());
  const absl::Time start = absl::Now();
  cluster_->Start(0);
  const std::optional<int> exit = cluster_->daemon(0)->Wait(absl::Seconds(10));
  ASSERT_TRUE(exit.has_value()) << "still running " << Elapsed(start) << " after start";
  std::cout << "exit " << *exit << " after " << Elapsed(start) << "\n";
  EXPECT_EQ(*exit, 69);
  const std::string log = cluster_->DaemonLog(0);
  std::cout << log;
  EXPECT_TRUE(absl::StrContains(log, "interface eth0 is down")) << log;
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

// --- interface flap ------------------------------------------------------------

TEST_F(NetnsFaultTest, InterfaceFlapRecoversWithoutRestart) {
  Make();
  cluster_->StartAll();
  absl::Status up = cluster_->WaitAllUp(absl::Seconds(30), /*measured=*/false);
  ASSERT_TRUE(up.ok()) << up;
  const pid_t pid = cluster_->daemon(0)->pid();
  const uint64_t failed_before[3] = {0, View(1, 0)->probes_failed(), View(2, 0)->probes_failed()};

  ASSERT_TRUE(cluster_->SetLink(0, false).ok());
  const absl::Time down = absl::Now();
  // Held down for 3 s, longer only until both peers noticed (bounded).
  bool seen[3] = {true, false, false};
  while (absl::Now() - down < absl::Seconds(10) &&
         (absl::Now() - down < absl::Seconds(3) || !seen[1] || !seen[2])) {
    for (int i = 1; i < 3; ++i) {
      if (seen[i]) continue;
      auto p = View(i, 0);
      if (IsDown(p ? &*p : nullptr) && p->probes_failed() > failed_before[i]) {
        seen[i] = true;
        std::cout << cluster_->name(i) << " sees h1 down after " << Elapsed(down) << " ("
                  << p->last_failure().ShortDebugString() << ")\n";
        const v1::FailureReason reason = p->last_failure().reason();
        EXPECT_TRUE(reason == v1::FAILURE_REASON_TIMEOUT ||
                    reason == v1::FAILURE_REASON_UNREACHABLE || reason == v1::FAILURE_REASON_RESET)
            << p->last_failure().ShortDebugString();
      }
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  const absl::Duration held = absl::Now() - down;
  ASSERT_TRUE(cluster_->SetLink(0, true).ok());
  const absl::Time back = absl::Now();
  std::cout << "eth0 of h1 was down for " << held << "\n";
  EXPECT_TRUE(seen[1] && seen[2]) << "h2 saw it: " << seen[1] << ", h3 saw it: " << seen[2];
  EXPECT_LT(held, absl::Seconds(5)) << "detection took longer than the Gloo timeout + slack";

  up = cluster_->WaitAllUp(absl::Seconds(20), /*measured=*/false);
  ASSERT_TRUE(up.ok()) << up;
  std::cout << "all links up " << Elapsed(back) << " after eth0 came back\n";
  EXPECT_TRUE(cluster_->daemon(0)->running());
  EXPECT_EQ(cluster_->daemon(0)->pid(), pid);
  ExpectKeepsProbing(1, 0);
  ExpectKeepsProbing(0, 2);
  // h1 noticed too (its probes failed while eth0 was down).
  auto p = View(0, 1);
  ASSERT_TRUE(p.has_value());
  EXPECT_GT(p->probes_failed(), 0u) << p->ShortDebugString();
}

}  // namespace
}  // namespace gloowatch::testing
