// The job's links: both ends of each connection joined by their addresses,
// and what the kernel's figures say (client/job/job_links.h), on NodeStatus
// values made here.
#include "client/job/job_links.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "client/job/job_view.h"
#include "common/proto_time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gloowatch::client {
namespace {

using ::testing::HasSubstr;

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

v1::JobSocket Socket(const std::string& local, const std::string& remote,
                     const std::string& kind = "pair") {
  v1::JobSocket s;
  s.set_local(local);
  s.set_remote(remote);
  s.set_kind(kind);
  s.set_state("established");
  *s.mutable_read_at() = ToProtoTimestamp(kNow);
  return s;
}

v1::TrainingJobStatus Rank(int rank, std::vector<v1::JobSocket> sockets,
                           const std::string& process = "running") {
  v1::TrainingJobStatus t;
  t.set_job("llm");
  t.set_rank(rank);
  t.set_process(process);
  *t.mutable_last_report() = ToProtoTimestamp(kNow);
  t.mutable_collective()->set_seq(7);
  for (auto& s : sockets) *t.add_sockets() = std::move(s);
  return t;
}

FetchResult Node(const std::string& name, const std::string& address, const std::string& group,
                 std::vector<v1::TrainingJobStatus> ranks) {
  FetchResult f;
  f.target.name = name;
  v1::NodeStatus s;
  s.set_node(name);
  s.mutable_gloo()->set_address(address);
  s.mutable_topology()->set_group(group);
  *s.mutable_now() = ToProtoTimestamp(kNow);
  for (auto& r : ranks) *s.add_training() = std::move(r);
  f.status = std::move(s);
  return f;
}

// Ranks 0 (h1, 10.0.0.1) and 1 (h2, 10.0.0.2) with one Gloo pair between
// them, each end's figures given, and rank 1's store connection to h1.
std::vector<FetchResult> TwoRanks(const v1::JobSocket& zero, const v1::JobSocket& one,
                                  const std::string& process_one = "running") {
  return {Node("h1", "10.0.0.1", "", {Rank(0, {zero})}),
          Node("h2", "10.0.0.2", "",
               {Rank(1, {one, Socket("10.0.0.2:50000", "10.0.0.1:29500", "store")}, process_one)})};
}

TEST(JobLinks, BothEndsAreJoinedAndTheStoreIsCountedApart) {
  const JobLinks l = BuildJobLinks(TwoRanks(Socket("10.0.0.1:40001", "10.0.0.2:40002"),
                                            Socket("10.0.0.2:40002", "10.0.0.1:40001")),
                                   "llm");
  ASSERT_EQ(l.links.size(), 2u);
  EXPECT_EQ(l.links[0].rank, 0);
  EXPECT_EQ(l.links[0].peer_rank, 1);
  EXPECT_EQ(l.links[0].peer_node, "h2");
  ASSERT_TRUE(l.links[0].peer_socket.has_value());
  EXPECT_EQ(l.links[0].peer_socket->local(), "10.0.0.2:40002");
  EXPECT_EQ(l.links[1].rank, 1);
  EXPECT_EQ(l.links[1].peer_rank, 0);
  EXPECT_EQ(l.store_connections, 1);
  EXPECT_EQ(l.ranks_listing, 2);
  EXPECT_TRUE(l.findings.empty());
  const std::string text = RenderJobLinks(l, false);
  EXPECT_THAT(text, HasSubstr("2 ends between 1 host pairs"));
  EXPECT_THAT(text, HasSubstr("  h1 <-> h2: 2 ends\n"));
}

TEST(JobLinks, AnEndWhoseRankIsUnknownIsNamedByItsHost) {
  // Rank 1's daemon was not asked: its end is known by h2's Gloo address.
  const JobLinks l = BuildJobLinks(
      {Node("h1", "10.0.0.1", "", {Rank(0, {Socket("10.0.0.1:40001", "10.0.0.2:40002")})}),
       Node("h2", "10.0.0.2", "", {})},
      "llm");
  ASSERT_EQ(l.links.size(), 1u);
  EXPECT_EQ(l.links[0].peer_rank, -1);
  EXPECT_EQ(l.links[0].peer_node, "h2");
  EXPECT_TRUE(JobLinksToJson(l)["links"][0]["peer_rank"].is_null());
}

TEST(JobLinks, UnacknowledgedDataUnderABackingOffTimerIsTheNetwork) {
  v1::JobSocket zero = Socket("10.0.0.1:40001", "10.0.0.2:40002");
  zero.set_unacked_bytes(397'000);
  zero.set_backoff(5);
  zero.set_since_last_ack_seconds(8.2);
  const JobLinks l =
      BuildJobLinks(TwoRanks(zero, Socket("10.0.0.2:40002", "10.0.0.1:40001")), "llm");
  ASSERT_EQ(l.findings.size(), 1u);
  EXPECT_EQ(l.findings[0].kind, "network");
  EXPECT_EQ(l.findings[0].text,
            "rank 0 (h1) -> rank 1 (h2): 397 KB unacknowledged for 8 s, retransmission backoff 5 "
            "-- the network between h1 and h2 drops");
  EXPECT_THAT(RenderJobLinks(l, /*hung=*/true), HasSubstr("likely reason: rank 0 (h1) -> rank 1"));
  // One RTO, or an ACK just now, is not yet a network that drops.
  zero.set_backoff(1);
  EXPECT_TRUE(BuildJobLinks(TwoRanks(zero, Socket("10.0.0.2:40002", "10.0.0.1:40001")), "llm")
                  .findings.empty());
  zero.set_backoff(5);
  zero.set_since_last_ack_seconds(0.2);
  EXPECT_TRUE(BuildJobLinks(TwoRanks(zero, Socket("10.0.0.2:40002", "10.0.0.1:40001")), "llm")
                  .findings.empty());
}

TEST(JobLinks, DataLyingUnreadIsAProcessThatDoesNotRead) {
  v1::JobSocket one = Socket("10.0.0.2:40002", "10.0.0.1:40001");
  one.set_receive_queue_bytes(1'048'576);
  *one.mutable_unread_since() = ToProtoTimestamp(kNow - absl::Seconds(10));
  const JobLinks l =
      BuildJobLinks(TwoRanks(Socket("10.0.0.1:40001", "10.0.0.2:40002"), one, "stopped"), "llm");
  ASSERT_EQ(l.findings.size(), 1u);
  EXPECT_EQ(l.findings[0].kind, "not_reading");
  EXPECT_EQ(l.findings[0].rank, 1);
  EXPECT_EQ(l.findings[0].node, "h2");
  EXPECT_EQ(l.findings[0].text,
            "rank 1 (h2) holds 1.0 MB unread from rank 0 (h1) for 10 s: its process is not "
            "reading (stopped)");
  // Data that arrived this instant (one read) says nothing yet.
  one.clear_unread_since();
  EXPECT_TRUE(BuildJobLinks(TwoRanks(Socket("10.0.0.1:40001", "10.0.0.2:40002"), one), "llm")
                  .findings.empty());
}

TEST(JobLinks, AZeroWindowWithDataWaitingIsThePeerNotReading) {
  v1::JobSocket zero = Socket("10.0.0.1:40001", "10.0.0.2:40002");
  zero.set_zero_window(true);
  zero.set_notsent_bytes(2'000'000);
  zero.set_backoff(6);  // the persist timer backs off too: not the network
  zero.set_since_last_ack_seconds(30);
  const JobLinks l = BuildJobLinks(
      {Node("h1", "10.0.0.1", "", {Rank(0, {zero})}), Node("h2", "10.0.0.2", "", {})}, "llm");
  ASSERT_EQ(l.findings.size(), 1u);
  EXPECT_EQ(l.findings[0].kind, "not_reading");
  EXPECT_THAT(l.findings[0].text, HasSubstr("host h2 advertises a zero window to rank 0 (h1)"));
}

TEST(JobLinks, LossNeedsEnoughSegments) {
  v1::JobSocket zero = Socket("10.0.0.1:40001", "10.0.0.2:40002");
  zero.set_loss_ratio(0.05);
  zero.set_loss_window_sent_segments(400);
  zero.set_loss_window_seconds(15);
  auto fetched = TwoRanks(zero, Socket("10.0.0.2:40002", "10.0.0.1:40001"));
  EXPECT_TRUE(BuildJobLinks(fetched, "llm").findings.empty());
  zero.set_loss_window_sent_segments(2400);
  const JobLinks l =
      BuildJobLinks(TwoRanks(zero, Socket("10.0.0.2:40002", "10.0.0.1:40001")), "llm");
  ASSERT_EQ(l.findings.size(), 1u);
  EXPECT_EQ(l.findings[0].kind, "lossy");
  EXPECT_EQ(l.findings[0].text,
            "rank 0 (h1) -> rank 1 (h2): TCP loss 5.00% of 2400 segments in 15 s");
  EXPECT_THAT(RenderJobLinks(l, /*hung=*/true), ::testing::Not(HasSubstr("likely reason")));
}

// Two racks of two hosts, one rank a host, a connection between every pair;
// `lossy` names the directions (rank -> peer) that lose 10%.
std::vector<FetchResult> Racks(const std::set<std::pair<int, int>>& lossy) {
  const std::vector<std::string> names = {"h1", "h2", "h3", "h4"};
  std::vector<FetchResult> nodes;
  for (int r = 0; r < 4; ++r) {
    std::vector<v1::JobSocket> sockets;
    for (int p = 0; p < 4; ++p) {
      if (p == r) continue;
      // Rank r's end of the pair with p: port 40000 + 10 r + p.
      v1::JobSocket s = Socket(absl::StrCat("10.0.0.", r + 1, ":", 40000 + 10 * r + p),
                               absl::StrCat("10.0.0.", p + 1, ":", 40000 + 10 * p + r));
      s.set_loss_window_sent_segments(3000);
      s.set_loss_window_seconds(15);
      s.set_loss_ratio(lossy.count({r, p}) ? 0.1 : 0.001);
      sockets.push_back(s);
    }
    nodes.push_back(Node(names[r], absl::StrCat("10.0.0.", r + 1), r < 2 ? "rack1" : "rack2",
                         {Rank(r, sockets)}));
  }
  return nodes;
}

TEST(JobLinks, SomePathsBetweenTwoRacksLossyIsAPathFault) {
  // Across the racks, 0->2, 3->1 and 1->3 lose; 0->3, 1->2, 2->0, 2->1,
  // 3->0 do not: every host has both kinds.
  const JobLinks l = BuildJobLinks(Racks({{0, 2}, {3, 1}, {1, 3}}), "llm");
  std::vector<std::string> kinds;
  for (const LinkFinding& f : l.findings) kinds.push_back(f.kind);
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "lossy"), 3);
  ASSERT_EQ(std::count(kinds.begin(), kinds.end(), "path"), 1);
  const LinkFinding& path = l.findings.back();
  EXPECT_EQ(path.kind, "path");
  EXPECT_EQ(path.node, "rack1");
  EXPECT_EQ(path.peer_node, "rack2");
  EXPECT_THAT(path.text, HasSubstr("3 of 8 directions of the job's connections between rack1 and "
                                   "rack2 lose 10.0%, the other 5 under 1%"));
  EXPECT_THAT(path.text, HasSubstr("path-dependent fault"));
}

TEST(JobLinks, AHostWhoseEveryDirectionLosesIsNoPathFault) {
  // Everything h3 sends loses, to its own rack too: its NIC, not a path.
  const JobLinks l = BuildJobLinks(Racks({{2, 0}, {2, 1}, {2, 3}}), "llm");
  for (const LinkFinding& f : l.findings) EXPECT_NE(f.kind, "path") << f.text;
  // The same into h2: what it receives, from everywhere.
  const JobLinks in = BuildJobLinks(Racks({{0, 1}, {2, 1}, {3, 1}}), "llm");
  for (const LinkFinding& f : in.findings) EXPECT_NE(f.kind, "path") << f.text;
  // And with no loss at all, nothing to say.
  EXPECT_TRUE(BuildJobLinks(Racks({}), "llm").findings.empty());
}

TEST(JobLinks, OneHostsConnectionsAcrossOnTheBadPathAreAPathFault) {
  // ECMP put both of h3's connections across the racks on the lossy member
  // (both directions): its connection inside rack2 is clean, so its NIC is
  // not the reason, and h4's connections across are clean, so neither is
  // rack2's uplink.
  const JobLinks l = BuildJobLinks(Racks({{2, 0}, {0, 2}, {2, 1}, {1, 2}}), "llm");
  std::vector<std::string> kinds;
  for (const LinkFinding& f : l.findings) kinds.push_back(f.kind);
  ASSERT_EQ(std::count(kinds.begin(), kinds.end(), "path"), 1);
  EXPECT_THAT(l.findings.back().text, HasSubstr("4 of 8 directions"));
  // Every connection across on it: no clean direction across, no path.
  const JobLinks all =
      BuildJobLinks(Racks({{0, 2}, {2, 0}, {0, 3}, {3, 0}, {1, 2}, {2, 1}, {1, 3}, {3, 1}}), "llm");
  for (const LinkFinding& f : all.findings) EXPECT_NE(f.kind, "path") << f.text;
}

TEST(JobLinks, JobViewExitCodeAndJson) {
  v1::JobSocket zero = Socket("10.0.0.1:40001", "10.0.0.2:40002");
  zero.set_unacked_bytes(4000);
  zero.set_backoff(3);
  zero.set_since_last_ack_seconds(2);
  auto v = BuildJobView(TwoRanks(zero, Socket("10.0.0.2:40002", "10.0.0.1:40001")), "llm");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_FALSE(v->hung());
  EXPECT_EQ(v->ExitCode(), 1);  // a connection that drops, without a hang yet
  const nlohmann::json j = JobToJson(*v);
  EXPECT_EQ(j["verdict"], "degraded");
  ASSERT_EQ(j["job_links"]["findings"].size(), 1u);
  EXPECT_EQ(j["job_links"]["findings"][0]["kind"], "network");
  EXPECT_EQ(j["job_links"]["links"][0]["unacked_bytes"], 4000);
  EXPECT_THAT(RenderJobText(*v), HasSubstr("the network between h1 and h2 drops"));
}

}  // namespace
}  // namespace gloowatch::client
