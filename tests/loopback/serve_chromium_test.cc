// The heatmap page in a real headless Chromium: three real daemons on
// loopback, one of them stopped; `gloowatch serve` serves the page live and
// `gloowatch health --html` writes it to a file. Chromium loads both (over
// HTTP, and from file://); the test checks the DOM Chromium built (every
// node's rows, the stopped node shown as down across its row and column) and
// saves a screenshot of each.
#include <signal.h>
#include <unistd.h>
#include <zlib.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <regex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/health/cluster.h"
#include "client/health/html_page.h"
#include "client/health/page_server.h"
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
      << kChromium << " is missing: apt-get install chromium (scripts/packages-test.txt)";
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

// --- above 64 nodes: the heatmaps are data: images ---------------------------

// The pixels of a PNG Chromium wrote (8-bit RGB or RGBA, any row filter):
// width * height * channels bytes.
struct Screenshot {
  uint32_t width = 0, height = 0, channels = 0;
  std::vector<uint8_t> rgb;
};

uint32_t BigEndian(const std::string& b, size_t at) {
  return static_cast<uint32_t>(static_cast<uint8_t>(b[at])) << 24 |
         static_cast<uint32_t>(static_cast<uint8_t>(b[at + 1])) << 16 |
         static_cast<uint32_t>(static_cast<uint8_t>(b[at + 2])) << 8 |
         static_cast<uint8_t>(b[at + 3]);
}

std::optional<Screenshot> ReadScreenshot(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string png((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (png.size() < 8 || png.compare(0, 8, std::string("\x89PNG\r\n\x1a\n", 8)) != 0) {
    return std::nullopt;
  }
  Screenshot s;
  std::string deflated;
  for (size_t at = 8; at + 12 <= png.size();) {
    const uint32_t length = BigEndian(png, at);
    const std::string type = png.substr(at + 4, 4);
    if (type == "IHDR") {
      s.width = BigEndian(png, at + 8);
      s.height = BigEndian(png, at + 12);
      const int depth = png[at + 16], colour = png[at + 17], interlace = png[at + 20];
      if (depth != 8 || interlace != 0 || (colour != 2 && colour != 6)) return std::nullopt;
      s.channels = colour == 6 ? 4 : 3;
    } else if (type == "IDAT") {
      deflated += png.substr(at + 8, length);
    }
    at += 12 + length;
  }
  const size_t stride = static_cast<size_t>(s.width) * s.channels;
  std::vector<uint8_t> raw(s.height * (stride + 1));
  uLongf size = raw.size();
  if (s.channels == 0 ||
      uncompress(raw.data(), &size, reinterpret_cast<const Bytef*>(deflated.data()),
                 deflated.size()) != Z_OK ||
      size != raw.size()) {
    return std::nullopt;
  }
  s.rgb.resize(s.height * stride);
  for (size_t y = 0; y < s.height; ++y) {
    const uint8_t filter = raw[y * (stride + 1)];
    const uint8_t* in_row = &raw[y * (stride + 1) + 1];
    uint8_t* row = &s.rgb[y * stride];
    const uint8_t* up = y > 0 ? &s.rgb[(y - 1) * stride] : nullptr;
    for (size_t x = 0; x < stride; ++x) {
      const int a = x >= s.channels ? row[x - s.channels] : 0;
      const int b = up ? up[x] : 0;
      const int c = up && x >= s.channels ? up[x - s.channels] : 0;
      int predicted = 0;
      switch (filter) {
        case 0:
          break;
        case 1:
          predicted = a;
          break;
        case 2:
          predicted = b;
          break;
        case 3:
          predicted = (a + b) / 2;
          break;
        case 4: {
          const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
          predicted = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
          break;
        }
        default:
          return std::nullopt;
      }
      row[x] = static_cast<uint8_t>(in_row[x] + predicted);
    }
  }
  return s;
}

// Pixels within 3 of `colour` in every channel.
size_t PixelsOf(const Screenshot& s, std::array<int, 3> colour) {
  size_t n = 0;
  for (size_t i = 0; i + 2 < s.rgb.size(); i += s.channels) {
    n += std::abs(s.rgb[i] - colour[0]) <= 3 && std::abs(s.rgb[i + 1] - colour[1]) <= 3 &&
         std::abs(s.rgb[i + 2] - colour[2]) <= 3;
  }
  return n;
}

// 80 nodes, every link within half the latency threshold, one node not
// answering: four 480-pixel heatmaps, mostly green, with one black row each.
TEST(HeatmapImage, ChromiumDrawsItUnderThePageServersPolicy) {
  ASSERT_TRUE(std::filesystem::exists(kChromium))
      << kChromium << " is not installed (apt-get install chromium)";
  const int n = 80;
  std::vector<client::FetchResult> fetched(n);
  for (int i = 0; i < n; ++i) {
    const std::string name = absl::StrCat("n", 100 + i);
    fetched[i].target = {name, {"127.0.0.1", static_cast<uint16_t>(1 + i)}};
    if (i == 43) {
      fetched[i].error = "UNAVAILABLE: Connection refused";
      continue;
    }
    v1::NodeStatus& s = fetched[i].status.emplace();
    s.set_node(name);
    for (int j = 0; j < n; ++j) {
      if (j == i) continue;
      v1::PeerStatus* p = s.add_peers();
      p->set_name(absl::StrCat("n", 100 + j));
      p->set_state(v1::PEER_STATE_UP);
      p->mutable_latency()->set_p50_seconds(0.0001);
      p->mutable_bandwidth()->set_link_ratio(0.95);
      p->mutable_clock()->set_offset_seconds(0.0001);
      p->mutable_tcp()->set_loss_ratio(0);
    }
  }
  const std::string page = client::RenderHealthHtml(client::BuildCluster(std::move(fetched)));
  ASSERT_EQ(Occurrences(page, "<img class=\"hm-img\""), 4u);
  absl::StatusOr<std::unique_ptr<client::PageServer>> server =
      client::PageServer::Listen({"127.0.0.1", 0}, {});
  ASSERT_TRUE(server.ok()) << server.status();
  (*server)->Publish({page, "{}"});
  int stop[2];
  ASSERT_EQ(pipe(stop), 0);
  std::thread serving([&] { (void)(*server)->Serve(stop[0]); });
  TempDir dir;
  const std::string png = dir.path() + "/big.png";
  absl::Status shot = ChromiumScreenshot(absl::StrCat("http://127.0.0.1:", (*server)->port(), "/"),
                                         png, dir.path() + "/chromium", "1280,4200");
  (void)!write(stop[1], "x", 1);
  serving.join();
  close(stop[0]);
  close(stop[1]);
  ASSERT_TRUE(shot.ok()) << shot;
  std::optional<Screenshot> s = ReadScreenshot(png);
  ASSERT_TRUE(s.has_value()) << png;
  // A blocked or undecoded image would leave only the legends' swatches.
  const size_t green = PixelsOf(*s, {0x1a, 0x96, 0x41});
  const size_t black = PixelsOf(*s, {0x22, 0x22, 0x22});
  EXPECT_GT(green, 4u * 6 * 6 * 79 * 70) << "green pixels: " << green;
  EXPECT_GE(black, 4u * 6 * 6 * 79) << "down-row pixels: " << black;
  std::error_code ignored;
  std::filesystem::copy_file(png, "serve_chromium_test_80.png",
                             std::filesystem::copy_options::overwrite_existing, ignored);
}

}  // namespace
}  // namespace gloowatch::testing
