// The heatmap page in a real headless Chromium: three real daemons on
// loopback, one of them stopped; `gloowatch serve` serves the page live and
// `gloowatch health --html` writes it to a file. Chromium loads both (over
// HTTP, and from file://); the test checks the DOM Chromium built (every
// node's rows, the stopped node shown as down across its row and column) and
// saves a screenshot of each.
#include <signal.h>

#include <filesystem>
#include <iostream>
#include <regex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/chromium.h"
#include "tests/support/daemon_process.h"
#include "tests/support/free_port.h"
#include "tests/support/subprocess.h"

namespace gloowatch::testing {
namespace {

using ::testing::HasSubstr;

// What both pages must show, as Chromium parsed them: node-c stopped.
void ExpectClusterWithNodeCDown(const std::string& dom) {
  EXPECT_THAT(dom, HasSubstr("<header id=\"verdict\" class=\"verdict failed\">"));
  for (const char* node : {"node-a", "node-b", "node-c"}) {
    // A row in the node table and in each of the four matrices.
    EXPECT_EQ(Occurrences(dom, absl::StrCat("data-node=\"", node, "\"")), 5u) << node;
  }
  EXPECT_THAT(dom, HasSubstr("<tr class=\"unreachable\" data-node=\"node-c\">"));
  for (const char* id : {"latency", "link_ratio", "clock_offset", "tcp_loss"}) {
    const std::string row_c = HeatmapRow(dom, id, "node-c");
    // Its own row: down everywhere but the diagonal.
    EXPECT_THAT(row_c, HasSubstr("class=\"down\"")) << id;
    EXPECT_EQ(Occurrences(row_c, "<td class=\"d\""), 2u) << id << ": " << row_c;
    // Its column: node-a and node-b see it down.
    for (const char* node : {"node-a", "node-b"}) {
      EXPECT_THAT(HeatmapRow(dom, id, node), HasSubstr("\u2192 node-c: down")) << id << " " << node;
    }
  }
  // node-a <-> node-b stay measured: a latency value (any: the machine may be loaded).
  EXPECT_TRUE(
      std::regex_search(HeatmapRow(dom, "latency", "node-a"),
                        std::regex("title=\"node-a \u2192 node-b: [0-9]+\\.[0-9]{3} ms\">")))
      << HeatmapRow(dom, "latency", "node-a");
  EXPECT_THAT(dom, HasSubstr("node-a-&gt;node-c: down"));  // worst links
}

TEST(ServeChromium, LivePageAndFileShowEveryNodeAndTheDownOne) {
  ASSERT_TRUE(std::filesystem::exists(kChromium))
      << kChromium << " is missing: apt-get install chromium (scripts/packages.txt)";
  LoopbackCluster cluster(3, FastLoopbackYaml());
  for (int i = 0; i < 3; ++i) cluster.Start(i);
  const std::string daemons =
      absl::StrJoin({cluster.grpc(0), cluster.grpc(1), cluster.grpc(2)}, ",");
  absl::Status up = cluster.WaitAllUp(absl::Seconds(30), LatencyMeasured);
  ASSERT_TRUE(up.ok()) << up;
  cluster.Kill(2, SIGKILL);
  // Both survivors notice within the Gloo timeout (2 s) and a reconnect.
  ASSERT_TRUE(WaitFor(
      [&] {
        for (int i = 0; i < 2; ++i) {
          auto s = GetStatus(cluster.grpc(i));
          const v1::PeerStatus* c = s.ok() ? FindPeer(*s, "node-c") : nullptr;
          if (c == nullptr || c->state() != v1::PEER_STATE_DOWN) return false;
        }
        return true;
      },
      absl::Seconds(20)))
      << "node-c not seen down";

  const TempDir& dir = cluster.dir();
  const int port = FreePort();
  Process serve({CliPath(), "serve", "--listen", absl::StrCat("127.0.0.1:", port), "--daemons",
                 daemons, "--refresh", "1s", "--deadline", "2s"},
                dir.path() + "/serve.log");
  ASSERT_TRUE(WaitFor([&] { return HttpGet(port, "/").ok(); }, absl::Seconds(10))) << serve.Log();
  const std::string url = absl::StrCat("http://127.0.0.1:", port, "/");
  absl::StatusOr<std::string> dom = ChromiumDumpDom(url, dir.path() + "/chromium-live");
  ASSERT_TRUE(dom.ok()) << dom.status();
  EXPECT_THAT(*dom, HasSubstr("<meta http-equiv=\"refresh\" content=\"1\">"));
  ExpectClusterWithNodeCDown(*dom);
  const std::string live_png = dir.path() + "/serve.png";
  absl::Status shot = ChromiumScreenshot(url, live_png, dir.path() + "/chromium-live", "1280,2400");
  EXPECT_TRUE(shot.ok()) << shot;
  EXPECT_GT(std::filesystem::file_size(live_png), 20'000u);  // more than a blank page
  // The JSON beside it is the same picture.
  absl::StatusOr<std::string> json = HttpGet(port, "/health.json");
  ASSERT_TRUE(json.ok());
  EXPECT_THAT(*json, HasSubstr("\"verdict\": \"failed\""));

  // A stop signal ends it cleanly.
  serve.Signal(SIGTERM);
  EXPECT_EQ(serve.Wait(absl::Seconds(5)), 0) << serve.Log();

  // The file, opened offline.
  const std::string page = dir.path() + "/cluster.html";
  ProcessResult health = RunProcess({CliPath(), "health", "--daemons", daemons, "--html", page},
                                    std::nullopt, "", absl::Seconds(30));
  EXPECT_EQ(health.exit_code, 2) << health.err;  // failed: a node is unreachable
  dom = ChromiumDumpDom("file://" + page, dir.path() + "/chromium-file");
  ASSERT_TRUE(dom.ok()) << dom.status();
  EXPECT_THAT(*dom, ::testing::Not(HasSubstr("http-equiv=\"refresh\"")));
  ExpectClusterWithNodeCDown(*dom);
  const std::string file_png = dir.path() + "/file.png";
  shot = ChromiumScreenshot("file://" + page, file_png, dir.path() + "/chromium-file", "1280,2400");
  EXPECT_TRUE(shot.ok()) << shot;
  // Kept beside the test binary for a look (the temp dir goes with the test).
  std::error_code ignored;
  std::filesystem::copy_file(live_png, "serve_chromium_test.png",
                             std::filesystem::copy_options::overwrite_existing, ignored);
  std::cout << "screenshots: " << live_png << ", " << file_png
            << " (copy: serve_chromium_test.png)\n";
}

}  // namespace
}  // namespace gloowatch::testing
