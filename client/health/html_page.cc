#include "client/health/html_page.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "client/health/pending.h"

namespace gloowatch::client {
namespace {

// The daemons have no loss threshold; the alert GloowatchPacketLoss fires
// above 1% (docs/operations.md), so the colours follow it.
constexpr double kLossThreshold = 0.01;
// Up to this many nodes a cell shows its value; up to kMaxTitledNodes it has
// a tooltip. Above, a heatmap is an SVG of colour runs (RenderSvgHeatmap).
constexpr size_t kMaxTextNodes = 24;
constexpr size_t kMaxTitledNodes = 64;
constexpr size_t kMaxListedLinks = 25;

// One heatmap. badness(value) < 1 is within the threshold; the colour bands
// are badness [0, .5), [.5, 1), [1, 2), [2, inf).
struct Matrix {
  const char* id;
  const char* title;
  const char* what;  // one sentence under the title
  std::optional<double> (*value)(const v1::PeerStatus&);
  double (*threshold)(const EffectiveThresholds&);
  bool lower_is_worse;  // link ratio: smaller is worse
  const char* format;   // of a value
  double scale;         // value * scale is shown
  const char* unit;
};

const std::vector<Matrix>& Matrices() {
  static const auto* m = new std::vector<Matrix>{
      {"latency", "Latency p50", "Small-message round trip over the Gloo command pair.",
       [](const v1::PeerStatus& p) -> std::optional<double> {
         if (!p.latency().has_p50_seconds()) return std::nullopt;
         return p.latency().p50_seconds();
       },
       [](const EffectiveThresholds& t) { return t.latency_seconds; }, false, "%.3f", 1e3, "ms"},
      {"link_ratio", "Bandwidth / link speed",
       "Timed bulk transfer (tx) as a share of the NIC's link speed.",
       [](const v1::PeerStatus& p) -> std::optional<double> {
         if (!p.bandwidth().has_link_ratio()) return std::nullopt;
         return p.bandwidth().link_ratio();
       },
       [](const EffectiveThresholds& t) { return t.link_ratio; }, true, "%.2f", 1, ""},
      {"clock_offset", "Clock offset (peer - row)",
       "NTP-style four-timestamp offset; the colour follows its magnitude |offset|.",
       [](const v1::PeerStatus& p) -> std::optional<double> {
         if (!p.clock().has_offset_seconds()) return std::nullopt;
         return p.clock().offset_seconds();
       },
       [](const EffectiveThresholds& t) { return t.clock_offset_seconds; }, false, "%+.3f", 1e3,
       "ms"},
      {"tcp_loss", "TCP loss ratio",
       "Retransmitted (less spurious) / sent segments of the pair sockets, once measured.",
       [](const v1::PeerStatus& p) -> std::optional<double> {
         if (!p.tcp().has_loss_ratio()) return std::nullopt;
         return p.tcp().loss_ratio();
       },
       [](const EffectiveThresholds&) { return kLossThreshold; }, false, "%.4f", 1, ""},
  };
  return *m;
}

double Badness(const Matrix& m, double v, double threshold) {
  if (m.lower_is_worse) return threshold >= 1 ? (v < threshold ? 2 : 0) : (1 - v) / (1 - threshold);
  if (threshold <= 0) return 0;
  return std::abs(v) / threshold;
}

// The value at badness b (the legend's band edges).
double ValueAt(const Matrix& m, double b, double threshold) {
  return m.lower_is_worse ? 1 - b * (1 - threshold) : b * threshold;
}

std::string Shown(const Matrix& m, double v) {
  return absl::StrCat(absl::StrFormat(m.format, v * m.scale), m.unit[0] ? " " : "", m.unit);
}

const char* Band(double badness) {
  // q0 is the table's default colour: its cells carry no class (page size).
  return badness < 0.5 ? "" : badness < 1 ? "q1" : badness < 2 ? "q2" : "q3";
}

const char* kStyle = R"css(
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;background:#fff}
h1{margin:.2em 0}h2{margin:1.4em 0 .3em;font-size:1.2em}p.note{color:#555;margin:.2em 0}
.verdict{padding:.6em 1em;border-radius:6px;border-left:8px solid}
.verdict.healthy{background:#e8f5e9;border-color:#1a9641}
.verdict.degraded{background:#fff8e1;border-color:#f0a202}
.verdict.failed{background:#fdecea;border-color:#d7191c}
table{border-collapse:collapse}
table.list td,table.list th{border:1px solid #ddd;padding:2px 8px;text-align:left;vertical-align:top}
tr.unreachable td,tr.failed td.status{color:#b00}tr.degraded td.status{color:#a66b00}
table.hm{table-layout:fixed}
table.hm th{font-weight:normal;font-size:12px;white-space:nowrap;text-align:right;padding:0 4px}
table.hm td{background:#1a9641;border:1px solid #fff;padding:0;text-align:center;font-size:11px}
table.hm.t td{width:64px;height:22px}table.hm.m td{width:12px;height:12px}
svg.hm-svg text{font-size:9px;text-anchor:end;dominant-baseline:middle;fill:#333}
svg.hm-svg text[text-anchor]{text-anchor:start}
svg.hm-svg text.down{fill:#b00;font-weight:bold}
.hm-svg .q0{fill:#1a9641}.hm-svg .q1{fill:#a6d96a}.hm-svg .q2{fill:#fdae61}.hm-svg .q3{fill:#d7191c}
.hm-svg .s{fill:#eee}.hm-svg .d{fill:#222}.hm-svg .c{fill:#777}.hm-svg .p{fill:#ddd}
.hm-svg .n{fill:#fff}.hm-svg .u{fill:#cfd8dc}
table.hm thead th{writing-mode:vertical-rl;transform:rotate(180deg);text-align:left}
.hm td.q1{background:#a6d96a}.hm td.q2{background:#fdae61}.hm td.q3{background:#d7191c;color:#fff}
.hm td.s{background:#eee}.hm td.d{background:#222;color:#fff}.hm td.c{background:#777;color:#fff}
.hm td.p{background:repeating-linear-gradient(45deg,#ddd 0 3px,#fff 3px 6px)}
.hm td.n{background:#fff;color:#999;outline:1px solid #eee}.hm td.u{background:#cfd8dc}
.legend span{display:inline-block;margin-right:1em}
.legend i{display:inline-block;width:1em;height:1em;vertical-align:middle;margin-right:.3em;border:1px solid #ccc}
)css";

std::string Attr(const char* name, absl::string_view value) {
  return absl::StrCat(" ", name, "=\"", HtmlEscape(value), "\"");
}

// ---- sections: each writes one part of the page -------------------------

void RenderVerdict(const ClusterPicture& c, std::string& out) {
  const std::string asked = c.source == "prometheus"
                                ? absl::StrCat("from Prometheus ", HtmlEscape(c.source_url))
                                : absl::StrCat(c.node_reports.size(), " daemons asked");
  absl::StrAppend(
      &out, "<header id=\"verdict\" class=\"verdict ", HealthName(c.verdict), "\"><h1>cluster ",
      HealthName(c.verdict),
      c.reasons.empty() ? "" : absl::StrCat(": ", HtmlEscape(absl::StrJoin(c.reasons, "; "))),
      "</h1><p>", asked, ", ", c.nodes.size(), " nodes, ", c.links.size(), " links; ",
      c.coverage.measured_pairs, " of ", c.coverage.node_pairs, " node pairs measured directly",
      c.coverage.sampled ? " (sampled mesh: pairs neither node probes are not shown)" : "",
      ". Generated ", absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", absl::Now(), absl::UTCTimeZone()),
      ".</p></header>\n");
}

void RenderNodes(const ClusterPicture& c, std::string& out) {
  absl::StrAppend(&out,
                  "<section id=\"nodes\"><h2>Nodes</h2><table class=\"list\"><thead><tr>"
                  "<th>node</th><th>status</th><th>address</th><th>detail</th></tr></thead>"
                  "<tbody>\n");
  for (const NodeReport& n : c.node_reports) {
    const std::string status = n.reachable ? HealthName(n.health) : "unreachable";
    std::string detail =
        n.reachable ? absl::StrCat("version ", n.status->version(), ", gloo ",
                                   n.status->gloo().interface(), " ", n.status->gloo().address())
                    : n.error;
    absl::StrAppend(&out, "<tr", Attr("class", status), Attr("data-node", n.name), "><td>",
                    HtmlEscape(n.name), "</td><td class=\"status\">", status, "</td><td>",
                    HtmlEscape(n.address), "</td><td>", HtmlEscape(detail), "</td></tr>\n");
  }
  absl::StrAppend(&out, "</tbody></table></section>\n");
}

struct CellView {
  const char* cls;
  std::string text;   // shown when the matrix is small
  std::string title;  // tooltip
};

CellView Cell(const ClusterPicture& c, const Matrix& m, size_t i, size_t j,
              const std::vector<const NodeReport*>& report_of) {
  const std::string who = absl::StrCat(c.nodes[i], " \u2192 ", c.nodes[j], ": ");
  if (i == j) return {"s", "", ""};
  const v1::PeerStatus* p = c.View(i, j);
  if (p == nullptr) {
    const NodeReport* row = report_of[i];
    const NodeReport* col = report_of[j];
    if (row != nullptr && !row->reachable) {
      return {"d", "down", absl::StrCat(who, c.nodes[i], " unreachable")};
    }
    if (col != nullptr && !col->reachable) {
      return {"d", "down", absl::StrCat(who, c.nodes[j], " unreachable")};
    }
    if (c.coverage.sampled && !c.Measured(i, j)) {
      return {"n", "~", absl::StrCat(who, "not probed (sampled mesh)")};
    }
    return {"n", "", absl::StrCat(who, "not measured")};
  }
  if (p->state() == v1::PEER_STATE_DOWN) {
    return {"d", "down", absl::StrCat(who, "down ", p->last_failure().message())};
  }
  if (p->state() != v1::PEER_STATE_UP) return {"c", "\u2026", absl::StrCat(who, "connecting")};
  const std::optional<double> v = m.value(*p);
  if (!v) {
    if (std::string(m.id) == "link_ratio" && p->bandwidth().has_tx_bytes_per_second()) {
      return {"u", "n/a",
              absl::StrFormat("%slink speed unknown (tx %.1f MB/s)", who,
                              p->bandwidth().tx_bytes_per_second() / 1e6)};
    }
    std::string due;
    if (std::string(m.id) == "link_ratio" && p->has_next_bandwidth_probe()) {
      due =
          absl::StrCat(", bandwidth probe due ",
                       absl::FormatTime("%H:%M:%S UTC",
                                        absl::FromUnixSeconds(p->next_bandwidth_probe().seconds()),
                                        absl::UTCTimeZone()));
    }
    return {"p", "?", absl::StrCat(who, "pending: not measured yet", due)};
  }
  const EffectiveThresholds t = report_of[i] != nullptr && report_of[i]->status != nullptr
                                    ? ThresholdsOf(*report_of[i]->status)
                                    : EffectiveThresholds{};
  return {Band(Badness(m, *v, m.threshold(t))), Shown(m, *v), absl::StrCat(who, Shown(m, *v))};
}

void RenderLegend(const Matrix& m, double threshold, bool mixed, std::string& out) {
  const char* lt = m.lower_is_worse ? "&gt;" : "&lt;";
  const char* ge = m.lower_is_worse ? "&le;" : "&ge;";
  // Band edges are magnitudes: no sign even where values have one.
  auto edge = [&](double b) {
    std::string v = Shown(m, ValueAt(m, b, threshold));
    if (!v.empty() && v[0] == '+') v.erase(0, 1);
    return HtmlEscape(v);
  };
  // Low to high, whichever end is worse.
  auto range = [&](double b0, double b1) {
    return m.lower_is_worse ? absl::StrCat(edge(b1), " \u2013 ", edge(b0))
                            : absl::StrCat(edge(b0), " \u2013 ", edge(b1));
  };
  absl::StrAppend(&out, "<p class=\"legend\"><span><strong>threshold ", edge(1),
                  "</strong></span><span><i style=\"background:#1a9641\"></i>", lt, " ", edge(0.5),
                  "</span><span><i style=\"background:#a6d96a\"></i>", range(0.5, 1),
                  "</span><span><i style=\"background:#fdae61\"></i>", range(1, 2),
                  "</span><span><i style=\"background:#d7191c\"></i>", ge, " ", edge(2),
                  "</span><span><i style=\"background:#222\"></i>down</span>"
                  "<span><i style=\"background:#777\"></i>connecting</span>"
                  "<span><i style=\"background:repeating-linear-gradient(45deg,#ddd 0 3px,#fff 3px "
                  "6px)\"></i>pending</span><span><i style=\"background:#fff\"></i>not "
                  "measured</span>",
                  std::string(m.id) == "link_ratio"
                      ? "<span><i style=\"background:#cfd8dc\"></i>link speed unknown</span>"
                      : "",
                  mixed ? "<span>(thresholds differ between nodes: each row is coloured by its "
                          "own)</span>"
                        : "",
                  "</p>\n");
}

// Up to kMaxTitledNodes: a table, a cell per pair with its tooltip (and its
// value up to kMaxTextNodes).
void RenderTableHeatmap(const ClusterPicture& c, const Matrix& m,
                        const std::vector<const NodeReport*>& report_of, bool text,
                        std::string& out) {
  const size_t n = c.nodes.size();
  absl::StrAppend(&out, "<table class=\"hm", text ? " t" : " m", "\"><thead><tr><th></th>");
  for (const std::string& name : c.nodes) absl::StrAppend(&out, "<th>", HtmlEscape(name), "</th>");
  out += "</tr></thead><tbody>\n";
  for (size_t i = 0; i < n; ++i) {
    const bool down = report_of[i] != nullptr && !report_of[i]->reachable;
    absl::StrAppend(&out, "<tr", Attr("data-node", c.nodes[i]), down ? " class=\"down\"" : "",
                    "><th>", HtmlEscape(c.nodes[i]), "</th>");
    for (size_t j = 0; j < n; ++j) {
      const CellView v = Cell(c, m, i, j, report_of);
      out += "<td";
      if (*v.cls) absl::StrAppend(&out, " class=", v.cls);
      if (!v.title.empty()) out += Attr("title", v.title);
      out += ">";
      if (text) out += HtmlEscape(v.text);
    }
    out += "\n";
  }
  out += "</tbody></table>\n";
}

// Above: one inline SVG, a path per colour (a run of one colour in a row is
// one rectangle), so the browser lays out a handful of elements instead of
// n^2 cells; every few rows and columns are labelled.
void RenderSvgHeatmap(const ClusterPicture& c, const Matrix& m,
                      const std::vector<const NodeReport*>& report_of, std::string& out) {
  const size_t n = c.nodes.size();
  const size_t cell = n <= 128 ? 6 : 4, every = (12 + cell - 1) / cell, margin = 120;
  std::map<std::string, std::string> paths;  // class -> path data, in cell units
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n;) {
      const char* cls = Cell(c, m, i, j, report_of).cls;
      size_t span = 1;
      while (j + span < n && std::string_view(Cell(c, m, i, j + span, report_of).cls) == cls) {
        ++span;
      }
      absl::StrAppend(&paths[*cls ? cls : "q0"], "M", j, " ", i, "h", span, "v1h-", span, "z");
      j += span;
    }
  }
  const size_t size = margin + n * cell;
  absl::StrAppend(&out, "<svg class=\"hm-svg\" xmlns=\"http://www.w3.org/2000/svg\" width=\"", size,
                  "\" height=\"", size, "\" viewBox=\"0 0 ", size, " ", size, "\" role=\"img\"",
                  Attr("aria-label", absl::StrCat(m.title, " heatmap")),
                  "><g transform=\"translate(", margin, " ", margin, ") scale(", cell,
                  ")\" shape-rendering=\"crispEdges\">");
  for (const auto& [cls, d] : paths)
    absl::StrAppend(&out, "<path class=\"", cls, "\" d=\"", d, "\"/>");
  out += "</g>\n";
  auto down = [&](size_t i) { return report_of[i] != nullptr && !report_of[i]->reachable; };
  for (size_t i = 0; i < n; ++i) {
    // Every few rows, and every down node; no label crowds a down node's.
    bool near_down = false;
    for (size_t k = i >= every ? i - every + 1 : 0; k < std::min(n, i + every); ++k) {
      near_down |= k != i && down(k);
    }
    if (!down(i) && (i % every != 0 || near_down)) continue;
    const char* cls = down(i) ? " class=\"down\"" : "";
    const size_t at = margin + i * cell + cell / 2;
    absl::StrAppend(&out, "<text", Attr("data-node", c.nodes[i]), cls, " x=\"", margin - 3,
                    "\" y=\"", at, "\">", HtmlEscape(c.nodes[i]), "</text><text", cls,
                    " text-anchor=\"start\" transform=\"translate(", at, " ", margin - 3,
                    ") rotate(-90)\">", HtmlEscape(c.nodes[i]), "</text>\n");
  }
  out += "</svg>\n";
}

void RenderMatrices(const ClusterPicture& c, std::string& out) {
  std::vector<const NodeReport*> report_of(c.nodes.size(), nullptr);
  for (const NodeReport& n : c.node_reports) {
    auto it = std::lower_bound(c.nodes.begin(), c.nodes.end(), n.name);
    if (it != c.nodes.end() && *it == n.name) report_of[it - c.nodes.begin()] = &n;
  }
  std::optional<EffectiveThresholds> legend;
  bool mixed = false;
  for (const NodeReport& n : c.node_reports) {
    if (n.status == nullptr) continue;
    const EffectiveThresholds t = ThresholdsOf(*n.status);
    if (!legend) legend = t;
    mixed |= t.latency_seconds != legend->latency_seconds || t.link_ratio != legend->link_ratio ||
             t.clock_offset_seconds != legend->clock_offset_seconds;
  }
  const size_t n = c.nodes.size();
  const bool text = n <= kMaxTextNodes, titled = n <= kMaxTitledNodes;
  absl::StrAppend(&out,
                  "<section id=\"matrices\"><p class=\"note\">Row: the node measuring; column: "
                  "its peer.",
                  titled ? "" : " Columns are in the same order as the rows.", "</p>\n");
  for (const Matrix& m : Matrices()) {
    const double threshold = m.threshold(legend.value_or(EffectiveThresholds{}));
    absl::StrAppend(&out, "<section class=\"matrix\" id=\"m-", m.id, "\"><h2>", m.title,
                    "</h2><p class=\"note\">", m.what, "</p>\n");
    RenderLegend(m, threshold, mixed, out);
    if (titled) {
      RenderTableHeatmap(c, m, report_of, text, out);
    } else {
      RenderSvgHeatmap(c, m, report_of, out);
    }
    out += "</section>\n";
  }
  out += "</section>\n";
}

// What `gloowatch health` leads with: who explains the bad links.
void RenderSuspects(const ClusterPicture& c, std::string& out) {
  out += "<section id=\"suspects\"><h2>Suspects</h2>\n";
  if (c.suspects.empty()) {
    out += "<p class=\"note\">No suspects: no measured link is bad.</p></section>\n";
    return;
  }
  out += "<table class=\"list\"><tbody>\n";
  size_t listed = 0;
  for (const Suspect& s : c.suspects) {
    if (listed++ == kMaxListedLinks) break;
    absl::StrAppend(&out, "<tr class=\"degraded\"><td class=\"status\">", SuspectKindName(s.kind),
                    "</td><td>", HtmlEscape(s.name), "</td><td>",
                    absl::StrFormat("confidence %.0f%%", s.confidence * 100), "; ", s.bad_links,
                    " bad links</td><td>");
    for (const std::string& e : s.evidence) absl::StrAppend(&out, HtmlEscape(e), "<br>");
    out += "</td></tr>\n";
  }
  out += "</tbody></table>\n";
  if (c.suspects.size() > kMaxListedLinks) {
    absl::StrAppend(&out, "<p class=\"note\">", c.suspects.size() - kMaxListedLinks,
                    " more: see gloowatch health --json.</p>\n");
  }
  out += "</section>\n";
}

void RenderWorstLinks(const ClusterPicture& c, std::string& out) {
  out += "<section id=\"worst-links\"><h2>Worst links</h2>\n";
  size_t listed = 0, problems = 0;
  for (const LinkReport& l : c.links) problems += l.health != Health::kHealthy;
  for (const LinkReport& l : c.links) {
    if (l.health == Health::kHealthy || listed == kMaxListedLinks) break;
    if (listed++ == 0) out += "<table class=\"list\"><tbody>\n";
    absl::StrAppend(&out, "<tr", Attr("class", HealthName(l.health)), "><td class=\"status\">",
                    HealthName(l.health), "</td><td>", HtmlEscape(l.a), " \u2194 ", HtmlEscape(l.b),
                    "</td><td>");
    for (const std::string& p : l.problems) absl::StrAppend(&out, HtmlEscape(p), "<br>");
    out += "</td></tr>\n";
  }
  if (listed > 0) out += "</tbody></table>\n";
  if (listed < problems) {
    absl::StrAppend(&out, "<p class=\"note\">", problems - listed,
                    " more problem links: see gloowatch health --json.</p>\n");
  }
  if (problems == 0) out += "<p class=\"note\">No problem links.</p>\n";
  bool any = false;
  for (const NodeReport& n : c.node_reports) {
    for (const std::string& p : n.problems) {
      if (!any) out += "<h2>Node problems</h2><ul id=\"node-problems\">\n";
      any = true;
      absl::StrAppend(&out, "<li>", HtmlEscape(n.name), ": ", HtmlEscape(p), "</li>\n");
    }
  }
  if (any) out += "</ul>\n";
  out += "</section>\n";
}

void RenderPending(const ClusterPicture& c, std::string& out) {
  const std::vector<PendingFigure> pending = PendingFigures(c);
  if (pending.empty()) return;
  const absl::Time now = absl::Now();
  absl::StrAppend(&out,
                  "<section id=\"pending\"><h2>Pending figures</h2><p class=\"note\">Links that "
                  "are up but have no such figure yet, soonest due first (bandwidth as the "
                  "measuring daemon scheduled it under its bandwidth budget).</p><table "
                  "class=\"list\"><tbody>\n");
  size_t listed = 0;
  for (const PendingFigure& p : pending) {
    if (listed++ == kMaxListedLinks) break;
    absl::StrAppend(&out, "<tr><td>", HtmlEscape(p.from), " \u2192 ", HtmlEscape(p.to), "</td><td>",
                    p.figure, "</td><td>", HtmlEscape(DueText(p, now)), "</td></tr>\n");
  }
  out += "</tbody></table>\n";
  if (pending.size() > kMaxListedLinks) {
    absl::StrAppend(&out, "<p class=\"note\">", pending.size() - kMaxListedLinks,
                    " more: see gloowatch health --json.</p>\n");
  }
  out += "</section>\n";
}

void RenderTraining(const ClusterPicture& c, std::string& out) {
  if (c.training.empty()) return;
  out +=
      "<section id=\"training\"><h2>Training jobs</h2><table class=\"list\"><thead><tr><th>node"
      "</th><th>job</th><th>rank</th><th>steps</th><th>comm share</th></tr></thead><tbody>\n";
  for (const TrainingReport& t : c.training) {
    absl::StrAppend(&out, "<tr", t.over_threshold ? " class=\"degraded\"" : "", "><td>",
                    HtmlEscape(t.node), "</td><td>", HtmlEscape(t.job.job()), "</td><td>",
                    t.job.rank(), "</td><td>", t.job.steps(), "</td><td class=\"status\">",
                    t.job.has_communication_share()
                        ? absl::StrFormat("%.1f%%", t.job.communication_share() * 100)
                        : "-",
                    t.over_threshold ? absl::StrFormat(" &gt; %.0f%%", t.threshold * 100) : "",
                    "</td></tr>\n");
  }
  out += "</tbody></table></section>\n";
}

// The page, top to bottom. A new part of the report is one function here.
struct Section {
  const char* id;
  void (*render)(const ClusterPicture&, std::string&);
};
constexpr Section kSections[] = {
    {"verdict", RenderVerdict},   {"suspects", RenderSuspects}, {"worst-links", RenderWorstLinks},
    {"matrices", RenderMatrices}, {"pending", RenderPending},   {"nodes", RenderNodes},
    {"training", RenderTraining},
};

}  // namespace

std::string HtmlEscape(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

std::string RenderHealthHtml(const ClusterPicture& c, const HtmlPageOptions& options) {
  std::string out;
  out.reserve(4096 + c.nodes.size() * c.nodes.size() * 4 * 5);
  absl::StrAppend(
      &out,
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width\">",
      options.refresh_seconds > 0
          ? absl::StrCat("<meta http-equiv=\"refresh\" content=\"", options.refresh_seconds, "\">")
          : "",
      "<title>gloowatch: cluster ", HealthName(c.verdict), ", ", c.nodes.size(),
      " nodes</title><style>", kStyle, "</style></head><body>\n");
  for (const Section& s : kSections) s.render(c, out);
  out += "</body></html>\n";
  return out;
}

}  // namespace gloowatch::client
