// accuracy_bench: gloowatch's measurements against the standard tools, side
// by side in one run, on the same paths:
//   bandwidth  vs iperf3 (single stream, same byte count), and vs tbf caps
//   latency    vs sockperf ping-pong over TCP (same message size, RTT)
//   clock      vs the shift libfaketime applies to one daemon
// The paths (bench/accuracy_paths.h) are the test support's clusters:
// loopback, and two hosts of a NetnsCluster (root; skipped with the reason
// otherwise). gloowatch's figures come from real gloowatchd daemons through
// their /metrics and GetStatus, the product's own code paths.
//
//   accuracy_bench [--build_dir=DIR] [--only=bandwidth,tbf,latency,clock] [--debug]
//
// Bounded to 330 s: past that every process it started is stopped and the
// namespaces deleted. Prints one table; a figure short of its target says
// SHORT. Targets are fixed, never relaxed.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "bench/accuracy_paths.h"
#include "nlohmann/json.hpp"

ABSL_FLAG(std::string, build_dir, "",
          "the build directory (default: the one this binary was built in)");
ABSL_FLAG(std::string, only, "bandwidth,tbf,latency,clock",
          "the comparisons to run, a subset of bandwidth,tbf,latency,clock");
ABSL_FLAG(bool, debug, false, "also log the raw clock samples");

namespace gloowatch::bench {
namespace {

using testing::BinaryPath;

// Workloads (one place, so the docs can quote them).
constexpr int64_t kBigBytes = int64_t{1} << 30;  // unshaped bandwidth: 1 GiB per transfer
constexpr int64_t kMessageBytes = 4 << 20;       // gloowatch's bulk message (the default)
const char* const kTbfRates[] = {"200mbit", "500mbit", "1gbit"};
constexpr int kLatencyBytes = 14;  // sockperf's minimum message size
constexpr int kLatencySeconds = 4;
// Seconds, libfaketime's relative syntax.
const char* const kClockShifts[] = {"-0.25", "+0.002", "+0.5", "+5"};
constexpr double kClockErrorTargetUs = 100;
constexpr double kBandwidthRatioTarget = 0.90;
constexpr double kLatencyRatioTarget = 1.30;
constexpr double kCapTolerance = 0.10;
constexpr char kFaketimeLib[] = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";
constexpr absl::Duration kBudget = absl::Seconds(330);

using Figure = std::optional<double>;

void Log(const std::string& text) { std::fprintf(stderr, "accuracy: %s\n", text.c_str()); }

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return absl::StrCat(one, " ", five, " ", fifteen);
}

// --- figures and their verdicts ------------------------------------------------

Figure Median(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

Figure Mean(const std::vector<double>& values) {
  if (values.empty()) return std::nullopt;
  double sum = 0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

Figure Ratio(Figure a, Figure b) {
  if (!a || !b || *b == 0) return std::nullopt;
  return *a / *b;
}

std::string Rate(Figure bytes_per_second) {
  if (!bytes_per_second) return "n/a";
  return *bytes_per_second >= 1e9 ? absl::StrFormat("%.2f GB/s", *bytes_per_second / 1e9)
                                  : absl::StrFormat("%.1f MB/s", *bytes_per_second / 1e6);
}

std::string Us(Figure us) { return us ? absl::StrFormat("%.1f us", *us) : "n/a"; }
std::string Ratio3(Figure r) { return r ? absl::StrFormat("%.3f", *r) : "n/a"; }

std::string Verdict(bool met) { return met ? "met" : "SHORT"; }

std::string Lines(const std::vector<double>& values, const char* separator) {
  return absl::StrJoin(values, separator, [](std::string* out, double v) {
    absl::StrAppend(out, absl::StrFormat("%.6g", v));
  });
}

// --- the table -------------------------------------------------------------------

class Report {
 public:
  // comparison, path, gloowatch, reference, ratio/error, target, result
  void Row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  void Note(std::string note) { notes_.push_back(std::move(note)); }

  // The table with aligned columns, the notes, and how many rows are SHORT.
  void Print(absl::Duration took) const {
    std::vector<std::vector<std::string>> table = {
        {"comparison", "path", "gloowatch", "reference", "ratio/error", "target", "result"}};
    table.insert(table.end(), rows_.begin(), rows_.end());
    std::vector<size_t> width;
    for (const auto& row : table) {
      width.resize(std::max(width.size(), row.size()));
      for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
    }
    std::printf("\n== accuracy (gloowatch vs standard tools), %lld s, load %s\n",
                static_cast<long long>(absl::ToInt64Seconds(took)), LoadAverage().c_str());
    for (const auto& row : table) {
      std::string line;
      for (size_t i = 0; i < row.size(); ++i) {
        absl::StrAppend(&line, row[i], std::string(width[i] - row[i].size() + 2, ' '));
      }
      std::printf("%s\n", std::string(absl::StripTrailingAsciiWhitespace(line)).c_str());
    }
    for (const std::string& note : notes_) std::printf("note: %s\n", note.c_str());
    int short_rows = 0;
    for (const auto& row : rows_) {
      if (absl::StrContains(absl::StrJoin(row, "\t"), "SHORT")) ++short_rows;
    }
    std::printf("%d comparison(s) short of target\n", short_rows);
    std::fflush(stdout);
  }

 private:
  std::vector<std::vector<std::string>> rows_;
  std::vector<std::string> notes_;
};

// --- gloowatch's side --------------------------------------------------------------

// Every distinct value of `metric` the two daemons export (a gauge changes
// once per probe, so distinct values are distinct probes), scraped every
// 0.2 s for up to `span`; stops once `enough` were seen.
std::vector<double> PollDistinct(const BenchPath& path, const std::string& metric,
                                 absl::Duration span, size_t enough) {
  std::set<std::pair<std::string, double>> seen;
  const absl::Time deadline = absl::Now() + span;
  while (absl::Now() < deadline && seen.size() < enough) {
    for (int side : {0, 1}) {
      absl::StatusOr<std::map<std::string, double>> metrics = path.Metrics(side);
      if (!metrics.ok()) continue;
      for (const auto& [series, value] : *metrics) {
        if (absl::StartsWith(series, metric)) seen.emplace(series, value);
      }
    }
    if (seen.size() < enough) absl::SleepFor(absl::Milliseconds(200));
  }
  std::vector<double> values;
  for (const auto& [series, value] : seen) values.push_back(value);
  return values;
}

// --- bandwidth -------------------------------------------------------------------

// iperf3 -J's receiver-side bytes/s.
Figure Iperf3ReceivedRate(const std::string& output) {
  const size_t open = output.find('{');
  const size_t close = output.rfind('}');
  if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
  const nlohmann::json j =
      nlohmann::json::parse(output.substr(open, close - open + 1), nullptr, false);
  if (!j.is_object()) return std::nullopt;  // also a parse error (discarded)
  const double bits =
      j.value(nlohmann::json::json_pointer("/end/sum_received/bits_per_second"), -1.0);
  if (bits < 0) return std::nullopt;
  return bits / 8;
}

// One single-stream iperf3 run of `bytes`, side 0 the client (`reverse`:
// side 1 sends).
Figure Iperf3Once(const BenchPath& path, int64_t bytes, bool reverse) {
  const std::string port = absl::StrCat(path.iperf3_port());
  auto server = path.Spawn(1, {"iperf3", "-s", "-1", "-B", path.ip(1), "-p", port}, "/dev/null");
  Figure rate;
  if (path.WaitListening(1, path.iperf3_port(), absl::Seconds(5))) {
    std::vector<std::string> client = {"iperf3", "-c", path.ip(1),         "-p",
                                       port,     "-n", absl::StrCat(bytes)};
    if (reverse) client.push_back("-R");
    client.push_back("-J");
    rate = Iperf3ReceivedRate(path.Exec(0, client, absl::Seconds(30)).output);
  }
  Stop(*server);
  return rate;
}

struct BandwidthFigures {
  Figure gloowatch;  // median of the transfers seen, bytes/s
  Figure iperf3;     // median of the four runs
};

// iperf3 twice, gloowatch's transfers for up to `span`, iperf3 twice more
// (bracketing drift on a shared machine); the two never run at once.
BandwidthFigures BandwidthCase(BenchPath& path, const std::string& label, int64_t bytes,
                               absl::Duration span) {
  std::vector<double> iperf3;
  auto iperf3_both_ways = [&] {
    for (bool reverse : {false, true}) {
      if (Figure rate = Iperf3Once(path, bytes, reverse)) iperf3.push_back(*rate);
    }
  };
  iperf3_both_ways();
  // No bandwidth budget (1: one transfer at a time): at the default 1% a
  // 1 GiB transfer would hold off the next one for most of a minute.
  PairOptions pair;
  pair.yaml[0] = pair.yaml[1] = absl::StrFormat(
      "schedule:\n  latency_interval: 24h\n  skew_interval: 24h\n  bandwidth_interval: 100ms\n"
      "  bandwidth_budget: 1\n"
      "probe:\n  bandwidth_bytes: %d\n  bandwidth_message_bytes: %d\n",
      bytes, kMessageBytes);
  std::vector<double> transfers;
  if (absl::Status up = path.StartPair(pair); up.ok()) {
    transfers = PollDistinct(path, "gloowatch_peer_bandwidth_bytes_per_second", span, 8);
  } else {
    Log(std::string(up.message()));
  }
  path.StopPair();
  iperf3_both_ways();
  Log(absl::StrCat(label, ": gloowatch transfers (B/s): ", Lines(transfers, " ")));
  Log(absl::StrCat(label, ": iperf3 runs (B/s): ", Lines(iperf3, " ")));
  return {Median(transfers), Median(iperf3)};
}

void BandwidthVsIperf3(BenchPath& path, Report& report) {
  const BandwidthFigures f =
      BandwidthCase(path, absl::StrCat("bw_", path.label()), kBigBytes, absl::Seconds(12));
  const Figure r = Ratio(f.gloowatch, f.iperf3);
  report.Row({"bandwidth 1 GiB, 1 stream", path.label(), Rate(f.gloowatch),
              Rate(f.iperf3) + " iperf3", Ratio3(r),
              absl::StrFormat(">= %.2f", kBandwidthRatioTarget),
              Verdict(r && *r >= kBandwidthRatioTarget)});
}

// "200mbit" -> 25e6 bytes/s.
double TbfBytesPerSecond(const std::string& rate) {
  double n = 0;
  const double scale = absl::EndsWith(rate, "gbit") ? 1e9 : 1e6;
  absl::SimpleAtod(rate.substr(0, rate.size() - 4), &n);
  return n * scale / 8;
}

void BandwidthVsTbf(BenchPath& path, Report& report) {
  const double low = 1 - kCapTolerance, high = 1 + kCapTolerance;
  for (const std::string rate : kTbfRates) {
    const std::string row = absl::StrCat("bandwidth under tbf ", rate);
    const double cap = TbfBytesPerSecond(rate);
    // About one second per transfer at the cap, in whole 4 MiB messages.
    const int64_t messages = std::max<int64_t>(1, std::llround(cap / kMessageBytes));
    if (absl::Status s = path.Shape(rate); !s.ok()) {
      Log(std::string(s.message()));
      report.Row({row, path.label(), "n/a", "n/a", "n/a", "cap +-10%", "SHORT (tc tbf failed)"});
      continue;
    }
    const BandwidthFigures f = BandwidthCase(path, absl::StrCat("tbf_", rate),
                                             messages * kMessageBytes, absl::Seconds(14));
    path.Unshape();
    const Figure r = Ratio(f.gloowatch, cap);
    report.Row({row, path.label(), Rate(f.gloowatch), Rate(cap) + " cap", Ratio3(r),
                absl::StrCat(low, "..", high, " of cap"), Verdict(r && *r >= low && *r <= high)});
    report.Row({"  (iperf3 under the same cap)", path.label(), "-", Rate(f.iperf3) + " iperf3",
                Ratio3(Ratio(f.iperf3, cap)), "reference", "-"});
  }
}

// --- latency ---------------------------------------------------------------------

struct Percentiles {
  double p50_us = 0;
  double p99_us = 0;
};

// sockperf ping-pong's RTT percentiles. With --full-rtt it prints round
// trips ("avg-rtt"); without, half of them ("avg-latency"): doubled then.
std::optional<Percentiles> ParseSockperf(const std::string& output) {
  Figure p50, p99;
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    std::string plain;  // without colour escapes
    for (size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '\x1b') {
        while (i < line.size() && line[i] != 'm') ++i;
        continue;
      }
      plain += line[i];
    }
    Figure* target = absl::StrContains(plain, "percentile 50.000 =")   ? &p50
                     : absl::StrContains(plain, "percentile 99.000 =") ? &p99
                                                                       : nullptr;
    double v = 0;
    const std::vector<std::string> words =
        absl::StrSplit(plain, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (target != nullptr && !words.empty() && absl::SimpleAtod(words.back(), &v)) *target = v;
  }
  if (!p50 || !p99) return std::nullopt;
  const double scale = absl::StrContains(output, "avg-latency") ? 2 : 1;
  return Percentiles{*p50 * scale, *p99 * scale};
}

// sockperf, server on side 1 pinned to cpu_b, client on side 0 to cpu_a.
std::optional<Percentiles> SockperfRun(const BenchPath& path, int cpu_a, int cpu_b,
                                       const std::string& work_dir) {
  const std::string port = absl::StrCat(path.sockperf_port());
  auto server = path.Spawn(1,
                           {"taskset", "-c", absl::StrCat(cpu_b), "sockperf", "server", "--tcp",
                            "-i", path.ip(1), "-p", port},
                           work_dir + "/sockperf_server.log");
  std::string output;
  if (path.WaitListening(1, path.sockperf_port(), absl::Seconds(5))) {
    output = path.Exec(0,
                       {"taskset", "-c", absl::StrCat(cpu_a), "sockperf", "ping-pong", "--tcp",
                        "-i", path.ip(1), "-p", port, "-m", absl::StrCat(kLatencyBytes), "-t",
                        absl::StrCat(kLatencySeconds / 2), "--full-rtt"},
                       absl::Seconds(kLatencySeconds + 10))
                 .output;
  }
  Stop(*server);
  return ParseSockperf(output);
}

// The floor: Gloo's sync pair alone (bench/gloo_pingpong, no daemon), back
// to back as sockperf runs or in gloowatch's bursts (1000 round trips, then
// 100 ms idle). It prints "p50_us P50 p99_us P99 round_trips N".
std::optional<Percentiles> GlooFloor(const BenchPath& path, int cpu_a, int cpu_b, bool bursts) {
  std::vector<std::string> argv = {
      BinaryPath("bench/gloo_pingpong"), "--address", path.ip(0), "--bytes",
      absl::StrCat(kLatencyBytes),       "--seconds", "3",        "--cpus",
      absl::StrCat(cpu_a, ",", cpu_b)};
  if (!path.ns(1).empty()) {
    argv.insert(argv.end(), {"--responder_address", path.ip(1), "--responder_netns", path.ns(1)});
  }
  if (bursts) argv.insert(argv.end(), {"--burst", "1000", "--gap_ms", "100"});
  const std::string output = path.Exec(0, argv, absl::Seconds(15)).output;
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    const std::vector<std::string> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    Percentiles p;
    if (f.size() >= 4 && f[0] == "p50_us" && f[2] == "p99_us" &&
        absl::SimpleAtod(f[1], &p.p50_us) && absl::SimpleAtod(f[3], &p.p99_us)) {
      return p;
    }
  }
  return std::nullopt;
}

// gloowatch's round-trip percentiles: A pings B in bursts of 1000 (the most
// a probe may send) every 100 ms over its command pair, so its threads are
// nearly as busy as sockperf's; B only answers (its own probes are rare), so
// the two do not compete. The p50/p99 gauges cover the last 4096 round trips
// (about 0.5 s): read every 0.5 s, the medians of the readings.
std::optional<Percentiles> GloowatchLatency(BenchPath& path, int cpu_a, int cpu_b) {
  PairOptions pair;
  pair.cpu[0] = cpu_a;
  pair.cpu[1] = cpu_b;
  pair.yaml[0] = absl::StrFormat(
      "schedule:\n  latency_interval: 100ms\n  skew_interval: 24h\n  bandwidth_interval: 24h\n"
      "probe:\n  latency_message_bytes: %d\n  latency_burst: 1000\n  bandwidth_bytes: 4KiB\n"
      "  bandwidth_message_bytes: 4KiB\n",
      kLatencyBytes);
  pair.yaml[1] = absl::StrFormat(
      "schedule:\n  latency_interval: 24h\n  skew_interval: 24h\n  bandwidth_interval: 24h\n"
      "probe:\n  latency_message_bytes: %d\n  bandwidth_bytes: 4KiB\n"
      "  bandwidth_message_bytes: 4KiB\n",
      kLatencyBytes);
  std::vector<double> p50s, p99s;
  if (absl::Status up = path.StartPair(pair); up.ok()) {
    absl::SleepFor(absl::Seconds(1));
    const std::map<std::string, std::string> labels = {{"node", path.node(0)},
                                                       {"peer", path.node(1)}};
    const absl::Time deadline = absl::Now() + absl::Seconds(kLatencySeconds);
    while (absl::Now() < deadline) {
      if (auto m = path.Metrics(0); m.ok()) {
        const Figure p50 = testing::FindMetric(*m, "gloowatch_peer_rtt_p50_seconds", labels);
        const Figure p99 = testing::FindMetric(*m, "gloowatch_peer_rtt_p99_seconds", labels);
        if (p50 && p99) {
          p50s.push_back(*p50 * 1e6);
          p99s.push_back(*p99 * 1e6);
        }
      }
      absl::SleepFor(absl::Milliseconds(500));
    }
  } else {
    Log(std::string(up.message()));
  }
  path.StopPair();
  if (p50s.empty()) return std::nullopt;
  return Percentiles{*Median(p50s), *Median(p99s)};
}

std::string PercentilesText(const std::optional<Percentiles>& p) {
  return p ? absl::StrFormat("%.1f us p50, %.1f us p99", p->p50_us, p->p99_us) : "n/a";
}

Figure P50(const std::optional<Percentiles>& p) { return p ? Figure(p->p50_us) : std::nullopt; }
Figure P99(const std::optional<Percentiles>& p) { return p ? Figure(p->p99_us) : std::nullopt; }

// Both tools with side A's processes on cpu_a and side B's on cpu_b.
// Placement decides the figure on a VM: a wake-up across CPUs costs an
// inter-processor interrupt, and a halted virtual CPU wakes slowly, so the
// tools are always compared pinned alike. sockperf runs before and after
// gloowatch (drift on a shared machine moves both); its figure is the mean
// of the two runs' percentiles.
void LatencyCase(BenchPath& path, int cpu_a, int cpu_b, const std::string& work_dir,
                 Report& report) {
  const std::string placement =
      cpu_a == cpu_b ? "same CPU" : absl::StrCat("CPUs ", cpu_a, "/", cpu_b);
  const std::string where = absl::StrCat("latency ", path.label(), ", ", placement, ": ");
  std::vector<double> sockperf_p50s, sockperf_p99s;
  std::string runs;
  auto sockperf = [&] {
    if (auto p = SockperfRun(path, cpu_a, cpu_b, work_dir)) {
      sockperf_p50s.push_back(p->p50_us);
      sockperf_p99s.push_back(p->p99_us);
      absl::StrAppend(&runs, absl::StrFormat("%.3f %.3f;", p->p50_us, p->p99_us));
    }
  };
  sockperf();
  const std::optional<Percentiles> gloowatch = GloowatchLatency(path, cpu_a, cpu_b);
  sockperf();
  const Figure sp50 = Mean(sockperf_p50s), sp99 = Mean(sockperf_p99s);
  Log(absl::StrCat(where, "sockperf runs (p50 p99 us): ", runs));
  Log(absl::StrCat(where, "sockperf RTT ", Us(sp50), " p50, ", Us(sp99), " p99; gloowatch ",
                   PercentilesText(gloowatch)));
  const std::optional<Percentiles> back_to_back = GlooFloor(path, cpu_a, cpu_b, false);
  const std::optional<Percentiles> in_bursts = GlooFloor(path, cpu_a, cpu_b, true);
  Log(absl::StrCat(where, "Gloo alone back to back ", PercentilesText(back_to_back), "; in bursts ",
                   PercentilesText(in_bursts)));

  const std::string size = absl::StrCat(kLatencyBytes, " B, ", placement);
  const Figure r50 = Ratio(P50(gloowatch), sp50);
  report.Row({absl::StrCat("latency p50 RTT, ", size), path.label(), Us(P50(gloowatch)),
              Us(sp50) + " sockperf", Ratio3(r50), absl::StrFormat("<= %.2f", kLatencyRatioTarget),
              Verdict(r50 && *r50 <= kLatencyRatioTarget)});
  report.Row({absl::StrCat("latency p99 RTT, ", size), path.label(), Us(P99(gloowatch)),
              Us(sp99) + " sockperf", Ratio3(Ratio(P99(gloowatch), sp99)), "(none)", "-"});
  report.Row({"  (Gloo pair alone, back to back)", path.label(), "-", PercentilesText(back_to_back),
              Ratio3(Ratio(P50(back_to_back), sp50)), "reference", "-"});
  report.Row({"  (Gloo pair alone, in bursts)", path.label(), "-", PercentilesText(in_bursts),
              Ratio3(Ratio(P50(in_bursts), sp50)), "reference", "-"});
}

// --- clock offset ----------------------------------------------------------------

// One clock figure from one GetStatus answer, so offset and bound belong to
// the same probe: side `viewer`'s view of the other side.
struct ClockSample {
  int viewer;
  double offset_ms;
  double error_ms;
  bool operator<(const ClockSample& o) const {
    return std::tie(viewer, offset_ms, error_ms) < std::tie(o.viewer, o.offset_ms, o.error_ms);
  }
};

// Every distinct clock figure both daemons report, asked every 0.2 s for
// `span`. Also the latest b-side offset, for the table.
std::vector<ClockSample> PollClock(const BenchPath& path, absl::Duration span,
                                   Figure* latest_b_offset_ms) {
  std::set<ClockSample> seen;
  const absl::Time deadline = absl::Now() + span;
  while (absl::Now() < deadline) {
    for (int side : {0, 1}) {
      absl::StatusOr<v1::NodeStatus> status = path.Status(side);
      if (!status.ok()) continue;
      const v1::PeerStatus* peer = testing::FindPeer(*status, path.node(1 - side));
      if (peer == nullptr || !peer->clock().has_offset_seconds() ||
          !peer->clock().has_error_seconds()) {
        continue;
      }
      const ClockSample sample{side, peer->clock().offset_seconds() * 1e3,
                               peer->clock().error_seconds() * 1e3};
      seen.insert(sample);
      if (side == 1) *latest_b_offset_ms = sample.offset_ms;
    }
    absl::SleepFor(absl::Milliseconds(200));
  }
  return {seen.begin(), seen.end()};
}

// What bench/clock_shift_probe measured under the same environment, ns.
struct AppliedShift {
  std::optional<int64_t> absl_now, realtime, monotonic;
};

AppliedShift ProbeShift(const BenchPath& path, const std::map<std::string, std::string>& env) {
  std::vector<std::string> argv = {"env"};
  for (const auto& [k, v] : env) argv.push_back(absl::StrCat(k, "=", v));
  argv.push_back(BinaryPath("bench/clock_shift_probe"));
  const std::string output = path.Exec(0, argv, absl::Seconds(20)).output;
  AppliedShift shift;
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    const std::vector<std::string> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    int64_t ns = 0;
    if (f.size() != 2 || !absl::SimpleAtoi(f[1], &ns)) continue;
    if (f[0] == "absl_now") shift.absl_now = ns;
    if (f[0] == "realtime") shift.realtime = ns;
    if (f[0] == "monotonic") shift.monotonic = ns;
  }
  return shift;
}

std::string Ns(std::optional<int64_t> ns) { return ns ? absl::StrCat(*ns) : "n/a"; }

// Daemon a runs under libfaketime shifted by `shift` seconds, b plainly: a
// sees b at -shift, b sees a at +shift. Every sample must be within 100 us of
// that and its error bound must contain it; clock_shift_probe checks that
// libfaketime applies exactly the shift to absl::Now (the daemon's wall
// clock) and leaves CLOCK_MONOTONIC alone, so the shift asked for is the
// reference.
void ClockCase(BenchPath& path, const std::string& shift, Report& report) {
  const std::map<std::string, std::string> env = {{"LD_PRELOAD", kFaketimeLib},
                                                  {"FAKETIME", shift},
                                                  {"FAKETIME_DONT_FAKE_MONOTONIC", "1"},
                                                  {"FAKETIME_NO_CACHE", "1"}};
  double shift_seconds = 0;
  absl::SimpleAtod(absl::StripPrefix(shift, "+"), &shift_seconds);
  const int64_t true_ns = std::llround(shift_seconds * 1e9);
  const AppliedShift applied = ProbeShift(path, env);
  report.Note(absl::StrCat("faketime ", shift, " on ", path.label(), ": absl::Now shifted by ",
                           Ns(applied.absl_now), " ns, CLOCK_REALTIME by ", Ns(applied.realtime),
                           " ns, CLOCK_MONOTONIC by ", Ns(applied.monotonic),
                           " ns (clock_shift_probe)"));

  PairOptions pair;
  pair.yaml[0] = pair.yaml[1] =
      "schedule:\n  latency_interval: 24h\n  skew_interval: 100ms\n  bandwidth_interval: 24h\n"
      "probe:\n  bandwidth_bytes: 4KiB\n  bandwidth_message_bytes: 4KiB\n";
  pair.env_a = env;
  std::vector<ClockSample> samples;
  Figure latest_b_ms;
  if (absl::Status up = path.StartPair(pair); up.ok()) {
    samples = PollClock(path, absl::Seconds(3), &latest_b_ms);
  } else {
    Log(std::string(up.message()));
  }
  path.StopPair();

  double worst_ms = 0, largest_b_bound_ms = 0;
  int inside = 0;
  for (const ClockSample& s : samples) {
    const double expect_ms = (s.viewer == 0 ? -1 : 1) * static_cast<double>(true_ns) / 1e6;
    const double error_ms = std::fabs(s.offset_ms - expect_ms);
    worst_ms = std::max(worst_ms, error_ms);
    if (error_ms <= s.error_ms + 1e-6) ++inside;
    if (s.viewer == 1) largest_b_bound_ms = std::max(largest_b_bound_ms, s.error_ms);
  }
  if (absl::GetFlag(FLAGS_debug)) {
    std::string text;
    for (const ClockSample& s : samples) {
      absl::StrAppend(&text, absl::StrFormat("%d %.6f %.6f; ", s.viewer, s.offset_ms, s.error_ms));
    }
    Log(absl::StrCat("clock samples: ", text));
  }
  const int total = static_cast<int>(samples.size());
  const double worst_us = worst_ms * 1e3;  // a figure only when total > 0
  Log(absl::StrCat("clock ", shift, " on ", path.label(), ": ", total, " offsets, worst |error| ",
                   total > 0 ? absl::StrFormat("%.1f", worst_us) : "n/a", " us, ", inside,
                   " within their bound"));
  auto within_1us = [](std::optional<int64_t> ns) { return ns && std::llabs(*ns) < 1000; };
  const std::optional<int64_t> shift_error_ns =
      applied.absl_now ? std::optional<int64_t>(*applied.absl_now - true_ns) : std::nullopt;
  const bool met = total > 0 && inside == total && worst_us < kClockErrorTargetUs &&
                   within_1us(applied.monotonic) && within_1us(shift_error_ns);
  report.Row({absl::StrCat("clock offset, faketime ", shift, " s"), path.label(),
              latest_b_ms ? absl::StrFormat("%.4f ms", *latest_b_ms) : "n/a",
              absl::StrFormat("%.4f ms shift", static_cast<double>(true_ns) / 1e6),
              total > 0 ? absl::StrFormat("|err| %.1f us", worst_us) : "n/a",
              absl::StrFormat("< %.0f us, in bound", kClockErrorTargetUs),
              absl::StrFormat("%s (%d/%d in bound, bound <= %.1f us)", Verdict(met), inside, total,
                              largest_b_bound_ms * 1e3)});
}

// --- the run ---------------------------------------------------------------------

// The pids of this process's children (every thread's).
std::vector<pid_t> Children() {
  std::vector<pid_t> pids;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream in(task.path() / "children");
    pid_t pid;
    while (in >> pid) pids.push_back(pid);
  }
  return pids;
}

// Past the budget: stops every process we started and ends the run with
// SIGTERM, whose handler (the test support's) deletes the namespaces.
void StartWatchdog() {
  std::thread([] {
    absl::SleepFor(kBudget);
    Log(absl::StrCat("over the ", absl::FormatDuration(kBudget), " budget, stopping"));
    for (pid_t pid : Children()) kill(pid, SIGTERM);
    absl::SleepFor(absl::Milliseconds(500));
    for (pid_t pid : Children()) kill(pid, SIGKILL);
    raise(SIGTERM);
  }).detach();
}

// The build directory: the flag, or the one this binary (DIR/bench/) is in.
std::string BuildDir() {
  std::error_code ec;
  const std::string flag = absl::GetFlag(FLAGS_build_dir);
  if (flag.empty()) {
    return std::filesystem::read_symlink("/proc/self/exe", ec).parent_path().parent_path();
  }
  // Absolute: the daemons run from `ip netns exec` too.
  return std::filesystem::absolute(flag, ec);
}

bool OnPath(const std::string& tool) {
  return testing::RunCommand({"sh", "-c", "command -v " + tool}, absl::Seconds(5)).ok();
}

// Which binaries and tools are missing, as the message to exit with.
std::string Missing(const std::string& build) {
  for (const char* binary : {"gloowatchd", "bench/clock_shift_probe", "bench/gloo_pingpong"}) {
    if (access(BinaryPath(binary).c_str(), X_OK) != 0) {
      return absl::StrCat(BinaryPath(binary), " not found: build it first (cmake --build ", build,
                          " --target gloowatchd clock_shift_probe gloo_pingpong)");
    }
  }
  for (const char* tool : {"iperf3", "sockperf", "taskset"}) {
    if (!OnPath(tool))
      return absl::StrCat(tool, " is not installed (see scripts/packages-test.txt)");
  }
  return "";
}

int Run() {
  const std::string build = BuildDir();
  setenv("GLOOWATCH_BIN_DIR", build.c_str(), 1);  // testing::BinaryPath's directory
  if (const std::string missing = Missing(build); !missing.empty()) {
    Log(missing);
    return 2;
  }
  const std::set<std::string> only = absl::StrSplit(absl::GetFlag(FLAGS_only), ',');
  auto want = [&](const char* part) { return only.count(part) > 0; };
  StartWatchdog();
  const absl::Time start = absl::Now();
  Log(absl::StrCat("build dir ", build, ", load: ", LoadAverage()));
  testing::TempDir work;
  Report report;

  std::vector<std::unique_ptr<BenchPath>> paths;
  paths.push_back(MakeLoopbackPath());
  BenchPath* veth = nullptr;
  std::string veth_skip;
  if (absl::StatusOr<std::unique_ptr<BenchPath>> p = MakeVethPath(); p.ok()) {
    veth = p->get();
    paths.push_back(*std::move(p));
    Log(absl::StrCat("veth: ", veth->ns(0), " (", veth->ip(0), ") <-> ", veth->ns(1), " (",
                     veth->ip(1), ") through a bridge namespace"));
  } else {
    veth_skip = std::string(p.status().message());
    Log(veth_skip);
  }

  if (want("bandwidth")) {
    for (auto& path : paths) BandwidthVsIperf3(*path, report);
  }
  if (want("tbf")) {
    if (veth != nullptr) {
      BandwidthVsTbf(*veth, report);
    } else {
      report.Row(
          {"bandwidth under tbf", "veth", "-", "-", "-", "cap +-10%", "skipped: " + veth_skip});
    }
  }
  if (want("latency")) {
    // Both ends on one CPU, then (with two or more) on two different CPUs.
    std::vector<std::pair<int, int>> placements = {{0, 0}};
    if (std::thread::hardware_concurrency() > 1) placements.push_back({0, 1});
    for (auto& path : paths) {
      for (auto [cpu_a, cpu_b] : placements) LatencyCase(*path, cpu_a, cpu_b, work.path(), report);
    }
  }
  if (want("clock")) {
    if (access(kFaketimeLib, R_OK) == 0) {
      for (auto& path : paths) {
        for (const char* shift : kClockShifts) ClockCase(*path, shift, report);
      }
    } else {
      report.Row({"clock offset", "any", "-", "-", "-",
                  absl::StrFormat("< %.0f us", kClockErrorTargetUs),
                  absl::StrCat("skipped: libfaketime missing (", kFaketimeLib, ")")});
    }
  }
  if (veth == nullptr) {
    report.Row({"bandwidth/latency/clock", "veth", "-", "-", "-", "-", "skipped: " + veth_skip});
  }
  report.Print(absl::Now() - start);
  return 0;
}

}  // namespace
}  // namespace gloowatch::bench

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return gloowatch::bench::Run();
}
