// "Pending figures explained" against real daemons: under a small bandwidth
// budget a fresh cluster has links without a bandwidth figure for a while;
// every daemon reports when its next bandwidth probe to each peer is due
// (PeerStatus.next_bandwidth_probe), `gloowatch health` lists each pending
// figure with that time, and the figure does arrive by then.
#include <cmath>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/daemon_process.h"
#include "tests/support/subprocess.h"

namespace gloowatch::testing {
namespace {

using ::testing::HasSubstr;

// 8 MiB transfers under a 0.2% budget: a node's gate stays closed ~500x a
// transfer's few milliseconds, so the six links get their figures one after
// another over tens of seconds.
std::string SlowBandwidthYaml() {
  return "gloo:\n  address: 127.0.0.1\n  timeout: 2s\n"
         "schedule:\n  latency_interval: 500ms\n  skew_interval: 1s\n"
         "  bandwidth_interval: 30s\n  bandwidth_budget: 0.002\n"
         "probe:\n  bandwidth_bytes: 8MiB\n  bandwidth_message_bytes: 1MiB\n"
         "  backoff_initial: 200ms\n  backoff_max: 1s\n";
}

TEST(PendingFigures, BandwidthDueTimesAreReportedAndKept) {
  LoopbackCluster cluster(3, SlowBandwidthYaml());
  for (int i = 0; i < 3; ++i) cluster.Start(i);
  const std::string daemons =
      absl::StrJoin({cluster.grpc(0), cluster.grpc(1), cluster.grpc(2)}, ",");
  absl::Status up = cluster.WaitAllUp(absl::Seconds(30), LatencyMeasured);
  ASSERT_TRUE(up.ok()) << up;
  ProcessResult r = RunProcess({CliPath(), "health", "--daemons", daemons, "--json"}, std::nullopt,
                               "", absl::Seconds(30));
  const absl::Time asked = absl::Now();
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out << r.err;
  ASSERT_TRUE(j["pending"].is_array());
  EXPECT_THAT(j["pending"].dump(), HasSubstr("\"figure\":\"bandwidth\""))
      << "every link measured already: the budget did not slow them";
  // The text says the same.
  ProcessResult text =
      RunProcess({CliPath(), "health", "--daemons", daemons}, std::nullopt, "", absl::Seconds(30));
  EXPECT_THAT(text.out, HasSubstr("pending figures (link up, not measured yet)"));
  EXPECT_THAT(text.out, ::testing::ContainsRegex("bandwidth +(due in|overdue by) [0-9]+ s"));
  // Until every link has its figure, each pending one has a time that is
  // not long past: a probe the gate or a busy peer deferred reports its new
  // time at once. 10 s of slack for a loaded machine.
  int polls = 0;
  double most_overdue = -1e9, latest_due = -1e9;
  const absl::Time start = absl::Now();
  while (true) {
    ++polls;
    bool any = false;
    for (const auto& p : j["pending"]) {
      if (p["figure"] != "bandwidth") continue;
      any = true;
      ASSERT_TRUE(p["due_in_seconds"].is_number()) << p.dump();
      const double in = p["due_in_seconds"].get<double>();
      EXPECT_GT(in, -10) << p.dump();
      EXPECT_LT(in, 120) << p.dump();
      most_overdue = std::max(most_overdue, -in);
      latest_due = std::max(latest_due, in);
    }
    if (!any) break;
    ASSERT_LT(absl::Now() - start, absl::Seconds(120))
        << "bandwidth still pending: " << j["pending"].dump();
    absl::SleepFor(absl::Seconds(1));
    r = RunProcess({CliPath(), "health", "--daemons", daemons, "--json"}, std::nullopt, "",
                   absl::Seconds(30));
    j = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_TRUE(j.is_object()) << r.out << r.err;
  }
  std::cout << "every link had bandwidth after " << absl::ToDoubleSeconds(absl::Now() - asked)
            << " s, " << polls << " polls; most overdue " << most_overdue << " s, latest due in "
            << latest_due << " s\n";
}

}  // namespace
}  // namespace gloowatch::testing
