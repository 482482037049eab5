// The heatmap page as text: its sections, one row per node in every matrix,
// the cell kinds (value bands, down, pending, not measured), and that hostile
// node names are escaped everywhere. Chromium's view of it is in
// tests/loopback/serve_chromium_test.cc.
#include "client/health/html_page.h"

#include <zlib.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/chromium.h"

namespace gloowatch::client {
namespace {

using ::gloowatch::testing::HeatmapRow;
using ::gloowatch::testing::Occurrences;
using ::testing::HasSubstr;
using ::testing::Not;

FetchResult Node(const std::string& name, uint16_t port) {
  FetchResult r;
  r.target = {name, {"127.0.0.1", port}};
  r.status.emplace();
  r.status->set_node(name);
  r.status->mutable_thresholds()->set_latency_seconds(0.002);
  return r;
}

v1::PeerStatus* Up(FetchResult& n, const std::string& peer, double p50) {
  v1::PeerStatus* p = n.status->add_peers();
  p->set_name(peer);
  p->set_state(v1::PEER_STATE_UP);
  p->mutable_latency()->set_p50_seconds(p50);
  return p;
}

TEST(HtmlPage, SectionsRowsAndCellKinds) {
  FetchResult a = Node("a", 1), b = Node("b", 2);
  // Well within 2 ms (the default band, no class); no bandwidth yet, due at 42 s.
  Up(a, "b", 0.0003)->mutable_next_bandwidth_probe()->set_seconds(42);
  Up(a, "c", 0.0050);                  // 2.5 x the threshold: q3
  Up(b, "a", 0.0015);                  // 0.75 x: q1
  v1::PeerStatus* bc = Up(b, "c", 0);  // down
  bc->set_state(v1::PEER_STATE_DOWN);
  bc->mutable_latency()->clear_p50_seconds();
  FetchResult c;  // c is not answering
  c.target = {"c", {"127.0.0.1", 3}};
  c.error = "connection refused";
  ClusterPicture p = BuildCluster({a, b, c});
  const std::string page = RenderHealthHtml(p);

  EXPECT_THAT(page, ::testing::StartsWith("<!DOCTYPE html>"));
  EXPECT_THAT(page, HasSubstr("<header id=\"verdict\" class=\"verdict failed\">"));
  EXPECT_THAT(page, Not(HasSubstr("http-equiv=\"refresh\"")));  // a file does not reload
  EXPECT_THAT(page, Not(HasSubstr("<script")));
  EXPECT_THAT(page, Not(HasSubstr("src=")));  // nothing external
  EXPECT_THAT(page, Not(HasSubstr("href=")));
  for (const char* id : {"latency", "link_ratio", "clock_offset", "tcp_loss"}) {
    EXPECT_THAT(page, HasSubstr(absl::StrCat("id=\"m-", id, "\""))) << id;
  }
  // Every node has a row in each of the four matrices, and one in the node table.
  for (const char* n : {"a", "b", "c"}) {
    EXPECT_EQ(Occurrences(page, absl::StrCat("data-node=\"", n, "\"")), 5u) << n;
  }
  EXPECT_THAT(page, HasSubstr("<tr class=\"unreachable\" data-node=\"c\">"));
  EXPECT_THAT(page, HasSubstr("<tr data-node=\"c\" class=\"down\">"));

  const std::string row_a = HeatmapRow(page, "latency", "a"),
                    row_b = HeatmapRow(page, "latency", "b"),
                    row_c = HeatmapRow(page, "latency", "c");
  EXPECT_THAT(row_a, HasSubstr("<td title=\"a \u2192 b: 0.300 ms\">0.300 ms"));
  EXPECT_THAT(row_a, HasSubstr("<td class=q3 title=\"a \u2192 c: 5.000 ms\">5.000 ms"));
  EXPECT_THAT(row_b, HasSubstr("<td class=q1 title=\"b \u2192 a: 1.500 ms\">1.500 ms"));
  EXPECT_THAT(row_b, HasSubstr("<td class=d title=\"b \u2192 c: down"));
  // c's own row: nothing from it, every cell down but its diagonal.
  EXPECT_EQ(Occurrences(row_c, "<td class=d"), 2u) << row_c;
  EXPECT_THAT(row_c, HasSubstr("c unreachable"));
  // No clock figure yet on an up link: pending; the legend states the threshold.
  EXPECT_THAT(HeatmapRow(page, "clock_offset", "a"),
              HasSubstr("<td class=p title=\"a \u2192 b: pending"));
  EXPECT_THAT(page, HasSubstr("<strong>threshold 2.000 ms</strong>"));
  EXPECT_THAT(page, HasSubstr("1.000 ms \u2013 2.000 ms"));
  EXPECT_THAT(page, HasSubstr("<strong>threshold 0.80</strong>"));  // link ratio, default
  EXPECT_THAT(page, HasSubstr("0.60 \u2013 0.80"));
  EXPECT_THAT(page, HasSubstr("&le; 0.60"));
  // Worst links come with their problems.
  EXPECT_THAT(page, HasSubstr("b-&gt;c: down"));
  EXPECT_THAT(page, HasSubstr("a-&gt;c: latency p50 5.000 ms &gt;= 2.000 ms"));

  // What is pending, and when: a->b has no clock offset and no bandwidth yet,
  // the latter due at the time a's daemon scheduled.
  EXPECT_THAT(page, HasSubstr("<section id=\"pending\">"));
  EXPECT_THAT(page, HasSubstr("<tr><td>a \u2192 b</td><td>clock offset</td>"));
  EXPECT_THAT(page, HasSubstr("<tr><td>a \u2192 b</td><td>bandwidth</td><td>overdue by "));  // 1970
  EXPECT_THAT(HeatmapRow(page, "link_ratio", "a"),
              HasSubstr("pending: not measured yet, bandwidth probe due 00:00:42 UTC"));

  EXPECT_THAT(RenderHealthHtml(p, {15}), HasSubstr("<meta http-equiv=\"refresh\" content=\"15\">"));

  // The suspects come right after the verdict, as in the text output.
  const size_t suspects = page.find("<section id=\"suspects\">");
  ASSERT_NE(suspects, std::string::npos);
  EXPECT_LT(page.find("id=\"verdict\""), suspects);
  EXPECT_LT(suspects, page.find("id=\"worst-links\""));
}

TEST(HtmlPage, SuspectsListKindNameConfidenceAndEvidence) {
  FetchResult a = Node("a", 1), b = Node("b", 2);
  Up(a, "b", 0.0003);
  Up(b, "a", 0.0003);
  ClusterPicture p = BuildCluster({a, b});
  EXPECT_THAT(RenderHealthHtml(p), HasSubstr("No suspects"));
  Suspect s;
  s.kind = SuspectKind::kGroupUplink;
  s.name = "rack1 <-> rack2";
  s.evidence = {"a->b: TCP loss 5.1% > 1.0%"};
  s.bad_links = 9;
  s.confidence = 0.87;
  p.suspects.push_back(s);
  const std::string page = RenderHealthHtml(p);
  EXPECT_THAT(page, HasSubstr("<td class=\"status\">group_uplink</td><td>rack1 &lt;-&gt; rack2</td>"
                              "<td>confidence 87%; 9 bad links</td><td>a-&gt;b: TCP loss 5.1% &gt; "
                              "1.0%<br>"));
  EXPECT_THAT(page, Not(HasSubstr("No suspects")));
}

TEST(HtmlPage, HostileNamesAreEscapedEverywhere) {
  const std::string evil = "<script>alert(1)</script>\"'><img src=x onerror=alert(2)>&";
  FetchResult a = Node(evil, 1), b = Node("b", 2);
  Up(a, "b", 0.0003)->mutable_last_failure()->set_message("<b>bold</b>");
  Up(b, evil, 0.0100);
  a.status->set_version("<i>1</i>");
  a.status->mutable_gloo()->set_interface("<iframe>");
  FetchResult gone;
  gone.target = {"<svg onload=alert(3)>", {"127.0.0.1", 3}};
  gone.error = "<marquee>";
  ClusterPicture p = BuildCluster({a, b, gone});
  p.source = "prometheus";
  p.source_url = "http://x/\"><script>";
  Suspect suspect;
  suspect.name = evil;
  suspect.evidence = {"<img src=y>"};
  p.suspects.push_back(suspect);
  const std::string page = RenderHealthHtml(p);
  for (const char* tag : {"<script", "<img", "<svg", "<iframe", "<marquee", "<b>", "<i>"}) {
    EXPECT_THAT(page, Not(HasSubstr(tag))) << tag;
  }
  EXPECT_THAT(page, HasSubstr("&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&gt;&lt;img"));
  // An attribute value cannot be closed by a name: every quote is escaped.
  EXPECT_THAT(page, Not(HasSubstr("\"'>")));
  EXPECT_THAT(page, HasSubstr("&lt;svg onload=alert(3)&gt;"));
  EXPECT_EQ(HtmlEscape("a&b<c>\"d'"), "a&amp;b&lt;c&gt;&quot;d&#39;");
}

// The palette indices of the heatmap image in `section` (a palette PNG,
// filter 0 on every row, as EncodePalettePng writes it), and its colours.
struct Image {
  uint32_t width = 0, height = 0;
  std::vector<std::string> palette;  // "#rrggbb"
  std::vector<uint8_t> pixels;
  std::string At(size_t row, size_t col) const { return palette[pixels[row * width + col]]; }
};

uint32_t BigEndian(absl::string_view b) {
  return static_cast<uint32_t>(static_cast<uint8_t>(b[0])) << 24 |
         static_cast<uint32_t>(static_cast<uint8_t>(b[1])) << 16 |
         static_cast<uint32_t>(static_cast<uint8_t>(b[2])) << 8 | static_cast<uint8_t>(b[3]);
}

std::optional<Image> HeatmapImage(const std::string& section) {
  const std::string prefix = "src=\"data:image/png;base64,";
  const size_t at = section.find(prefix);
  if (at == std::string::npos) return std::nullopt;
  const size_t from = at + prefix.size();
  std::string png;
  if (!absl::Base64Unescape(section.substr(from, section.find('"', from) - from), &png)) {
    return std::nullopt;
  }
  if (png.compare(0, 8, std::string("\x89PNG\r\n\x1a\n", 8)) != 0) return std::nullopt;
  Image image;
  std::string deflated;
  for (size_t pos = 8; pos + 12 <= png.size();) {
    const uint32_t length = BigEndian(absl::string_view(png).substr(pos, 4));
    const std::string type = png.substr(pos + 4, 4);
    const std::string data = png.substr(pos + 8, length);
    const uLong crc = crc32(crc32(0L, Z_NULL, 0),
                            reinterpret_cast<const Bytef*>(png.data() + pos + 4), length + 4);
    if (crc != BigEndian(absl::string_view(png).substr(pos + 8 + length, 4))) return std::nullopt;
    if (type == "IHDR") {
      image.width = BigEndian(data);
      image.height = BigEndian(absl::string_view(data).substr(4));
      if (data.substr(8, 2) != std::string("\x08\x03", 2)) return std::nullopt;
    } else if (type == "PLTE") {
      for (size_t k = 0; k + 3 <= data.size(); k += 3) {
        image.palette.push_back(absl::StrFormat("#%02x%02x%02x", static_cast<uint8_t>(data[k]),
                                                static_cast<uint8_t>(data[k + 1]),
                                                static_cast<uint8_t>(data[k + 2])));
      }
    } else if (type == "IDAT") {
      deflated += data;
    }
    pos += 12 + length;
  }
  std::string raw(static_cast<size_t>(image.height) * (image.width + 1), '\0');
  uLongf size = raw.size();
  if (uncompress(reinterpret_cast<Bytef*>(raw.data()), &size,
                 reinterpret_cast<const Bytef*>(deflated.data()), deflated.size()) != Z_OK ||
      size != raw.size()) {
    return std::nullopt;
  }
  for (uint32_t y = 0; y < image.height; ++y) {
    if (raw[y * (image.width + 1)] != 0) return std::nullopt;  // filter: none
    const char* row = raw.data() + y * (image.width + 1) + 1;
    image.pixels.insert(image.pixels.end(), row, row + image.width);
  }
  for (uint8_t p : image.pixels) {
    if (p >= image.palette.size()) return std::nullopt;
  }
  return image;
}

TEST(HtmlPage, LargeClusterHeatmapsAreImagesWithLabelsAndRowTooltips) {
  std::vector<FetchResult> nodes;
  const int n = 80;
  for (int i = 0; i < n; ++i) nodes.push_back(Node(absl::StrCat("n", 100 + i), 1 + i));
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i != j) Up(nodes[i], absl::StrCat("n", 100 + j), 0.0001);
    }
  }
  nodes[7].status->mutable_peers(0)->mutable_latency()->set_p50_seconds(0.0050);  // n107->n100: q3
  nodes[43] = FetchResult{};  // n143 does not answer
  nodes[43].target = {"n143", {"127.0.0.1", 44}};
  const std::string page = RenderHealthHtml(BuildCluster(std::move(nodes)));
  EXPECT_EQ(Occurrences(page, "<img class=\"hm-img\""), 4u);
  EXPECT_THAT(page, Not(HasSubstr("<table class=\"hm")));
  EXPECT_THAT(page, Not(HasSubstr("title=\"n100 \u2192")));  // no tooltip per cell
  EXPECT_THAT(page, Not(HasSubstr("<script")));

  // One pixel per pair, in the colours of the legend.
  const std::string latency = page.substr(page.find("id=\"m-latency\""));
  std::optional<Image> image = HeatmapImage(latency.substr(0, latency.find("</section>")));
  ASSERT_TRUE(image.has_value());
  ASSERT_EQ(image->width, 80u);
  ASSERT_EQ(image->height, 80u);
  EXPECT_EQ(image->At(0, 0), "#eeeeee");  // the diagonal
  for (int j = 1; j < n; ++j) {
    if (j != 43) {
      EXPECT_EQ(image->At(0, j), "#1a9641") << j;  // within half the threshold
    }
  }
  EXPECT_EQ(image->At(7, 0), "#d7191c");  // 2.5 x the threshold
  // n143 does not answer: its row is down (its peers still measure it).
  for (int k = 0; k < n; ++k) {
    if (k != 43) {
      EXPECT_EQ(image->At(43, k), "#222222") << k;
    }
  }
  EXPECT_EQ(image->At(42, 43), "#1a9641");
  const std::string loss = page.substr(page.find("id=\"m-tcp_loss\""));
  std::optional<Image> pending = HeatmapImage(loss.substr(0, loss.find("</section>")));
  ASSERT_TRUE(pending.has_value());
  EXPECT_EQ(pending->At(0, 1), "#dddddd");  // no loss figure yet
  // Shown 6 px a pair, unsmoothed, under its labels.
  EXPECT_THAT(latency, HasSubstr("<img class=\"hm-img\" width=\"480\" height=\"480\""));
  EXPECT_THAT(page, HasSubstr("image-rendering:pixelated"));

  // A strip per row, highlighted under the pointer, naming its worst cells.
  EXPECT_EQ(Occurrences(page, "<rect class=\"r\""), 4u * n);
  EXPECT_THAT(latency, HasSubstr("<rect class=\"r\" data-node=\"n107\""));
  EXPECT_THAT(latency, HasSubstr("<title>n107: 1 of 79 peers outside the green band: "
                                 "\u2192 n100 5.000 ms</title>"));
  EXPECT_THAT(latency, HasSubstr("<title>n143: 79 of 79 peers outside the green band: "
                                 "\u2192 n100 down; \u2192 n101 down; \u2192 n102 down; "
                                 "\u2026</title>"));
  EXPECT_THAT(latency, HasSubstr("data-node=\"n101\" x=\"120\" y=\"126\" width=\"480\" "
                                 "height=\"6\"><title>n101</title>"));
  EXPECT_THAT(page, HasSubstr("rect.r:hover"));

  // n143 is labelled as down; labels every other row (6 px cells), none
  // beside a down node's.
  EXPECT_THAT(latency, HasSubstr("<text data-node=\"n143\" class=\"down\""));
  EXPECT_THAT(latency, HasSubstr("<text data-node=\"n140\""));
  EXPECT_THAT(latency, Not(HasSubstr("<text data-node=\"n142\"")));
  EXPECT_THAT(latency, Not(HasSubstr("<text data-node=\"n141\"")));
  EXPECT_LT(page.size(), 80'000u);  // a cell each would be 25,600 of them
}

// At 1,000 nodes the page stays small: four images and a strip per row.
TEST(HtmlPage, ThousandNodesStayAFewHundredKilobytes) {
  std::vector<FetchResult> nodes;
  const int n = 1000;
  for (int i = 0; i < n; ++i) nodes.push_back(Node(absl::StrCat("node-", 1000 + i), 1));
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i != j) Up(nodes[i], absl::StrCat("node-", 1000 + j), (i + j) % 7 == 0 ? 0.003 : 0.0001);
    }
  }
  const std::string page = RenderHealthHtml(BuildCluster(std::move(nodes)));
  EXPECT_EQ(Occurrences(page, "<img class=\"hm-img\" width=\"1000\" height=\"1000\""), 4u);
  EXPECT_EQ(Occurrences(page, "<rect class=\"r\""), 4u * n);
  const std::string latency = page.substr(page.find("id=\"m-latency\""));
  std::optional<Image> image = HeatmapImage(latency.substr(0, latency.find("</section>")));
  ASSERT_TRUE(image.has_value());
  EXPECT_EQ(image->At(3, 4), "#fdae61");  // (3 + 4) % 7 == 0: 1.5 x the threshold
  EXPECT_EQ(image->At(3, 5), "#1a9641");
  EXPECT_LT(page.size(), 2'000'000u);
}

}  // namespace
}  // namespace gloowatch::client
