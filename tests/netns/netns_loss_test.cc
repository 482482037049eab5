// Random packet loss on one direction of one link, measured through the
// kernel's TCP statistics of the probe pairs (gloowatch_peer_tcp_*): the
// lossy direction's ratio tracks the drop rate, every other stays near 0.
// Needs root; skips otherwise. See docs/testing.md.
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/support/metrics_text.h"
#include "tests/support/netns_cluster.h"

namespace gloowatch::testing {
namespace {

class NetnsLossTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = NetnsUnavailableReason();
    if (!reason.empty()) GTEST_SKIP() << "netns harness unavailable: " << reason;
  }
  void TearDown() override {
    if (cluster_ && HasFailure()) std::cerr << cluster_->AllLogs();
    cluster_.reset();
  }
  std::unique_ptr<NetnsCluster> cluster_;
};

struct TcpFigures {
  double retransmitted = 0, spurious = 0, sent = 0;
  std::optional<double> loss_ratio;
};

TEST_F(NetnsLossTest, RandomDropOnOneLinkShowsAsItsTcpLossRatio) {
  constexpr int kFrom = 0, kTo = 1;  // h1 -> h2 loses packets
  constexpr int kDropPercent = 5;
  constexpr double kDrop = kDropPercent / 100.0;
  NetnsClusterOptions options;
  // Frequent bandwidth probes: they send nearly all the segments, and a ratio
  // of a few percent needs tens of thousands in the 60 s window.
  options.extra_yaml =
      "schedule:\n  latency_interval: 500ms\n  skew_interval: 1s\n  bandwidth_interval: 1s\n"
      "  bandwidth_budget: 1\n"
      "probe:\n  bandwidth_bytes: 32MiB\n  bandwidth_message_bytes: 1MiB\n"
      "  backoff_initial: 200ms\n  backoff_max: 1s\n";
  cluster_ = std::make_unique<NetnsCluster>(options);
  absl::Status s = cluster_->Setup();
  ASSERT_TRUE(s.ok()) << s;

  // Dropped on h2's input, as a lossy cable would: a drop in h1's output hook
  // fails the send with EPERM, which TCP retries at once without counting a
  // retransmission. One segment per packet out of h1 (no GSO/TSO): a veth
  // hands the whole 64 KiB GSO packet to the peer's input hook, so one drop
  // there would lose some 45 wire packets at once, which no NIC does.
  CommandResult gso = cluster_->Exec(kFrom, {"ip", "link", "set", "eth0", "gso_max_segs", "1"});
  ASSERT_TRUE(gso.ok()) << gso.output;
  s = cluster_->Nft(
      kTo, absl::StrCat("add table inet gwfault\n"
                        "add chain inet gwfault input { type filter hook input "
                        "priority -10 ; policy accept ; }\n"
                        "add rule inet gwfault input ip saddr ",
                        cluster_->ip(kFrom), " counter\n", "add rule inet gwfault input ip saddr ",
                        cluster_->ip(kFrom), " numgen random mod 100 < ", kDropPercent,
                        " counter drop\n"));
  ASSERT_TRUE(s.ok()) << s;
  cluster_->StartAll();
  s = cluster_->WaitAllUp(absl::Seconds(40), /*measured=*/false);
  ASSERT_TRUE(s.ok()) << s;
  const absl::Time up = absl::Now();

  auto figures = [&](int self, int peer) {
    TcpFigures f;
    absl::StatusOr<std::map<std::string, double>> m = cluster_->Metrics(self);
    if (!m.ok()) return f;
    const std::map<std::string, std::string> labels = {{"node", cluster_->name(self)},
                                                       {"peer", cluster_->name(peer)}};
    f.retransmitted =
        FindMetric(*m, "gloowatch_peer_tcp_retransmitted_segments_total", labels).value_or(0);
    f.spurious = FindMetric(*m, "gloowatch_peer_tcp_spurious_retransmitted_segments_total", labels)
                     .value_or(0);
    f.sent = FindMetric(*m, "gloowatch_peer_tcp_sent_segments_total", labels).value_or(0);
    f.loss_ratio = FindMetric(*m, "gloowatch_peer_tcp_loss_ratio", labels);
    return f;
  };
  // A window that saw only lossy traffic: the rule was there before the
  // daemons started, so waiting one window (60 s) plus one report (5 s)
  // after all links are up is enough.
  TcpFigures start[3][3];
  for (int self = 0; self < cluster_->size(); ++self) {
    for (int peer = 0; peer < cluster_->size(); ++peer) {
      if (peer != self) start[self][peer] = figures(self, peer);
    }
  }
  absl::SleepFor(absl::Seconds(66));
  const absl::Duration measured = absl::Now() - up;

  const CommandResult nft = cluster_->Exec(kTo, {"nft", "list", "table", "inet", "gwfault"});
  int judged = 0;
  std::cout << "nft counters in " << cluster_->name(kTo) << ":\n" << nft.output;
  for (int self = 0; self < cluster_->size(); ++self) {
    for (int peer = 0; peer < cluster_->size(); ++peer) {
      if (peer == self) continue;
      SCOPED_TRACE(absl::StrCat(cluster_->name(self), " -> ", cluster_->name(peer)));
      const TcpFigures f = figures(self, peer);
      std::cout << absl::StrFormat(
          "%s -> %s: loss ratio %s; in all %.0f segments sent, %.0f retransmitted (%.4f), %.0f "
          "of them spurious\n",
          cluster_->name(self), cluster_->name(peer),
          f.loss_ratio ? absl::StrFormat("%.4f", *f.loss_ratio) : "absent", f.sent, f.retransmitted,
          f.sent > 0 ? f.retransmitted / f.sent : 0.0, f.spurious);
      ASSERT_TRUE(f.loss_ratio.has_value());
      const double sent = f.sent - start[self][peer].sent;
      if (self == kFrom && peer == kTo) {
        // Enough segments in the window for a binomial 5% to sit well inside
        // the tolerance of 1.5 points (sd of the ratio at 20,000: 0.15 points;
        // a loaded machine has carried as few as 50,000 in the minute).
        EXPECT_GT(sent, 20000) << "too little traffic in " << measured;
        EXPECT_NEAR(*f.loss_ratio, kDrop, 0.3 * kDrop);
        const double lost = (f.retransmitted - start[self][peer].retransmitted) -
                            (f.spurious - start[self][peer].spurious);
        EXPECT_NEAR(lost / sent, kDrop, 0.3 * kDrop);
        continue;
      }
      // Latency and skew probes alone send ~1,000 segments a minute, where 10
      // retransmissions are 1%: only a link whose bandwidth probes ran is
      // judged (the bandwidth gates sometimes starve one for a minute).
      if (sent < 10000) {
        std::cout << "  not judged: " << sent << " segments sent in " << measured << "\n";
        continue;
      }
      ++judged;
      // The reverse direction's ACKs and DSACKs cross the lossy one: a
      // lost DSACK leaves a spurious retransmission counted as a loss.
      const bool reverse = self == kTo && peer == kFrom;
      EXPECT_LT(*f.loss_ratio, (reverse ? 0.2 : 0.1) * kDrop);
    }
  }
  EXPECT_GE(judged, 3) << "too few healthy links carried bandwidth probes";
}

}  // namespace
}  // namespace gloowatch::testing
