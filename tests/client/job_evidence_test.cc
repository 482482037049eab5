// The training jobs' own connections as evidence for health's suspects
// (client/health/job_evidence.h): synthetic NodeStatus with job sockets
// through BuildCluster, as `gloowatch health` reads the daemons.
#include "client/health/job_evidence.h"

#include "client/health/cluster.h"
#include "client/health/suspects_render.h"
#include "common/proto_time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gloowatch::client {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

std::string Ip(int host) { return absl::StrCat("10.0.0.", host + 1); }
std::string Name(int host) { return absl::StrCat("h", host + 1); }

// Three hosts, every probe up and clean, one rank of job "llm" on each.
struct Bed {
  std::vector<FetchResult> nodes;
  Bed() {
    for (int i = 0; i < 3; ++i) {
      FetchResult r;
      r.target = {Name(i), {"127.0.0.1", static_cast<uint16_t>(7601 + i)}};
      v1::NodeStatus s;
      s.set_node(Name(i));
      *s.mutable_now() = ToProtoTimestamp(kNow);
      s.mutable_gloo()->set_address(Ip(i));
      for (int j = 0; j < 3; ++j) {
        if (j == i) continue;
        auto* p = s.add_peers();
        p->set_name(Name(j));
        p->set_state(v1::PEER_STATE_UP);
        p->mutable_latency()->set_p50_seconds(0.0003);
        p->mutable_tcp()->set_loss_ratio(0);
        p->mutable_tcp()->set_window_sent_segments(84);
      }
      auto* t = s.add_training();
      t->set_job("llm");
      t->set_rank(i);
      t->set_process("running");
      r.status = s;
      nodes.push_back(std::move(r));
    }
  }
  v1::TrainingJobStatus& Rank(int host) { return *nodes[host].status->mutable_training(0); }
  // Host `from`'s end of its connection to `to` (port 4000 + from*10 + to).
  v1::JobSocket& Connect(int from, int to, uint64_t segments, double loss) {
    auto* s = Rank(from).add_sockets();
    s->set_local(absl::StrCat(Ip(from), ":", 4000 + from * 10 + to));
    s->set_remote(absl::StrCat(Ip(to), ":", 4000 + to * 10 + from));
    s->set_kind("pair");
    s->set_state("established");
    *s->mutable_read_at() = ToProtoTimestamp(kNow - absl::Seconds(2));
    s->set_loss_ratio(loss);
    s->set_loss_window_seconds(15);
    s->set_loss_window_sent_segments(segments);
    return *s;
  }
  // Every direction of the full mesh; into `lossy` 5%.
  void Mesh(int lossy) {
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) {
        if (i != j) Connect(i, j, 31000, j == lossy ? 0.05 : 0);
      }
    }
  }
  std::vector<const v1::NodeStatus*> Statuses() const {
    std::vector<const v1::NodeStatus*> out;
    for (const auto& n : nodes) out.push_back(n.status ? &*n.status : nullptr);
    return out;
  }
};

TEST(JobEvidence, LossPerDirectionFromTheSendersSockets) {
  Bed bed;
  bed.Mesh(/*lossy=*/1);
  bed.Connect(0, 2, 1000, 0.5).set_kind("store");  // the store's: not the job's pairs
  std::vector<JobLinkLoss> loss = JobLinkLossOf(bed.Statuses(), {"h1", "h2", "h3"});
  ASSERT_EQ(loss.size(), 6u);
  for (const JobLinkLoss& l : loss) {
    EXPECT_EQ(l.loss.sent, 31000u);
    EXPECT_EQ(l.loss.lost, l.to == 1 ? 1550u : 0u) << l.from << "->" << l.to;
  }
}

// 5% of what h2 receives is lost, seen only by the job's connections (the
// probes' minute is clean): health names h2, citing the job's links.
TEST(JobEvidence, HealthNamesTheNodeOnTheJobsLinks) {
  Bed bed;
  bed.Mesh(/*lossy=*/1);
  ClusterPicture c = BuildCluster(bed.nodes);
  ASSERT_FALSE(c.suspects.empty());
  EXPECT_EQ(c.suspects[0].kind, SuspectKind::kNode);
  EXPECT_EQ(c.suspects[0].name, "h2");
  EXPECT_EQ(c.suspects.size(), 1u);
  EXPECT_THAT(c.suspects[0].evidence_peers,
              Contains("job links: 5.0% of 31,000 segments h1->h2 retransmitted"));
  EXPECT_EQ(c.verdict, Health::kDegraded);
  nlohmann::json j = SuspectsToJson(c.suspects);
  EXPECT_EQ(j[0]["job_loss"]["lost"], 3100);
  EXPECT_EQ(j[0]["job_loss"]["sent"], 124000);
}

// A stopped rank: what was sent to it lies unread, its peers' retransmission
// figures are no network's fault. Nobody is blamed however the sockets read.
TEST(JobEvidence, StoppedRankBlamesNobody) {
  Bed bed;
  bed.Mesh(/*lossy=*/1);
  bed.Rank(1).set_process("stopped");
  EXPECT_THAT(JobLinkLossOf(bed.Statuses(), {"h1", "h2", "h3"}),
              ::testing::Each(::testing::Field(&JobLinkLoss::to, ::testing::Ne(1u))));
  ClusterPicture c = BuildCluster(bed.nodes);
  EXPECT_THAT(c.suspects, IsEmpty());
  EXPECT_EQ(c.verdict, Health::kHealthy);
}

// A process that does not read (its process state unknown, as from an older
// reporter): its end holds data unread, or its peers see a zero window.
TEST(JobEvidence, ConnectionsIntoARankThatDoesNotReadAreLeftOut) {
  Bed bed;
  bed.Mesh(/*lossy=*/1);
  bed.Rank(1).set_process("");
  for (auto& s : *bed.Rank(1).mutable_sockets()) {
    s.set_receive_queue_bytes(1'000'000);
    *s.mutable_unread_since() = ToProtoTimestamp(kNow - absl::Seconds(10));
  }
  EXPECT_THAT(BuildCluster(bed.nodes).suspects, IsEmpty());

  Bed zero;
  zero.Mesh(/*lossy=*/1);
  for (int from : {0, 2}) {
    for (auto& s : *zero.Rank(from).mutable_sockets()) {
      if (s.remote().rfind(Ip(1), 0) == 0) s.set_zero_window(true);
    }
  }
  EXPECT_THAT(BuildCluster(zero.nodes).suspects, IsEmpty());
}

// A connection last read long ago has closed: no evidence of now.
TEST(JobEvidence, StaleSocketsAreNoEvidence) {
  Bed bed;
  bed.Mesh(/*lossy=*/1);
  for (int i = 0; i < 3; ++i) {
    for (auto& s : *bed.Rank(i).mutable_sockets()) {
      *s.mutable_read_at() = ToProtoTimestamp(kNow - absl::Seconds(60));
    }
  }
  EXPECT_THAT(JobLinkLossOf(bed.Statuses(), {"h1", "h2", "h3"}), IsEmpty());
  EXPECT_THAT(BuildCluster(bed.nodes).suspects, IsEmpty());
}

// A healthy job: no suspect, and an unknown remote (a host no daemon of
// which answered) is no direction.
TEST(JobEvidence, HealthyJobAndUnknownRemotes) {
  Bed bed;
  bed.Mesh(/*lossy=*/-1);
  bed.Connect(0, 7, 50000, 0.2);  // 10.0.0.8: nobody's
  std::vector<JobLinkLoss> loss = JobLinkLossOf(bed.Statuses(), {"h1", "h2", "h3"});
  EXPECT_EQ(loss.size(), 6u);
  EXPECT_THAT(BuildCluster(bed.nodes).suspects, IsEmpty());
}

}  // namespace
}  // namespace gloowatch::client
