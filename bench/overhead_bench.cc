// overhead_bench: what one gloowatchd costs its host while probing 31 peers
// at the default schedules: CPU (user+sys) of the daemon and of its
// transport child, resident memory, threads, file descriptors, and the share
// of link time the bandwidth probes took. 32 daemons on loopback, a
// LoopbackCluster of the test support, started and stopped by the benchmark.
//
//   overhead_bench [--build_dir=DIR] [--seconds=180] [--warmup=20] [--slope=true]
//                  [--extra_yaml="schedule:\n  bandwidth_budget: 0.005\n"]
//
// The flags' defaults come from OVERHEAD_SECONDS, OVERHEAD_WARMUP and
// OVERHEAD_SLOPE (0 skips the 8- and 16-peer runs: the fds/threads slope).
// Targets: < 1% of one core, RSS < 64 MiB (daemon + transport), fds
// O(peers). A figure that misses its target is printed with SHORT and the
// reason. Every wait is bounded, and so is the whole run (the watchdog).
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "bench/bench_support.h"
#include "common/config.h"
#include "tests/support/daemon_process.h"
#include "tests/support/metrics_text.h"

ABSL_FLAG(std::string, build_dir, "",
          "the build directory (default: the one this binary was built in)");
ABSL_FLAG(int, seconds, gloowatch::bench::EnvOr("OVERHEAD_SECONDS", 180),
          "the measurement window in seconds (env OVERHEAD_SECONDS)");
ABSL_FLAG(int, warmup, gloowatch::bench::EnvOr("OVERHEAD_WARMUP", 20),
          "seconds between all peers up and the window (env OVERHEAD_WARMUP)");
ABSL_FLAG(bool, slope, gloowatch::bench::EnvOr("OVERHEAD_SLOPE", 1) != 0,
          "also run 9- and 17-daemon meshes for fds/threads at 8 and 16 peers "
          "(env OVERHEAD_SLOPE=0 skips them)");
ABSL_FLAG(std::string, extra_yaml, "",
          "YAML appended to every daemon's configuration, to compare a schedule or probe "
          "size with the defaults");

namespace gloowatch::bench {
namespace {

using testing::LoopbackCluster;

// gloo's address only: default schedules and probe sizes (unless --extra_yaml).
constexpr char kYaml[] = "gloo:\n  address: 127.0.0.1\n";
constexpr int kNodes = 32;
constexpr absl::Duration kSample = absl::Seconds(2);

void Log(const std::string& text) { std::fprintf(stderr, "overhead: %s\n", text.c_str()); }

std::optional<std::vector<testing::MetricSample>> Scrape(int metrics_port) {
  absl::StatusOr<std::string> body = testing::HttpGet(metrics_port, "/metrics");
  if (!body.ok()) return std::nullopt;
  return testing::ParseSamples(*body);
}

// The value of the first series of `name` (empty when the daemon is down).
std::optional<double> Metric(int metrics_port, const std::string& name) {
  auto samples = Scrape(metrics_port);
  if (!samples) return std::nullopt;
  for (const auto& s : *samples) {
    if (s.name == name) return s.value;
  }
  return std::nullopt;
}

// How many peers the daemon reports up.
int PeersUp(int metrics_port) {
  int up = 0;
  if (auto samples = Scrape(metrics_port)) {
    for (const auto& s : *samples) up += s.name == "gloowatch_peer_up" && s.value == 1;
  }
  return up;
}

// Node 0 sees all the others up, within `timeout`; says so when not.
bool WaitUp(LoopbackCluster& cluster, absl::Duration timeout) {
  const int port = cluster.node(0).metrics_port;
  const int want = cluster.size() - 1;
  if (testing::WaitFor([&] { return PeersUp(port) >= want; }, timeout)) return true;
  std::vector<std::string> down;
  if (auto samples = Scrape(port)) {
    for (const auto& s : *samples) {
      const auto peer = s.labels.find("peer");
      if (s.name == "gloowatch_peer_up" && s.value != 1 && peer != s.labels.end()) {
        down.push_back(peer->second);
      }
    }
  }
  Log(absl::StrCat("node 0 sees ", PeersUp(port), " of ", want, " peers up after ",
                   absl::ToInt64Seconds(timeout), " s; down: ", absl::StrJoin(down, " ")));
  for (int i = 0; i < cluster.size(); ++i) {
    if (!cluster.process(i)->running()) {
      Log(absl::StrCat(cluster.node(i).name, " exited; its log:\n", cluster.process(i)->Log()));
    }
  }
  return false;
}

// Null (and said why) when a daemon does not start.
std::unique_ptr<LoopbackCluster> StartCluster(int nodes) {
  auto cluster = std::make_unique<LoopbackCluster>(nodes, kYaml + absl::GetFlag(FLAGS_extra_yaml));
  if (absl::Status s = StartOneByOne(*cluster); !s.ok()) {
    Log(std::string(s.message()));
    StopCluster(*cluster);
    return nullptr;
  }
  return cluster;
}

// fds and threads at 8 and 16 peers, so the 31-peer figures have a slope.
void Slope() {
  std::printf("\n%-6s %-24s %-24s %s\n", "peers", "fds (daemon+transport)",
              "threads (daemon+transport)", "RSS MiB");
  for (int n : {9, 17}) {
    auto cluster = StartCluster(n);
    if (cluster == nullptr) continue;
    WaitUp(*cluster, absl::Seconds(40));
    absl::SleepFor(absl::Seconds(5));
    const pid_t d = cluster->process(0)->pid();
    const testing::ProcessUsage du = testing::UsageOf(d);
    const testing::ProcessUsage tu = testing::UsageOf(testing::ChildPid(d));
    std::printf("%-6d %-24s %-24s %.1f\n", n - 1, absl::StrCat(du.fds, "+", tu.fds).c_str(),
                absl::StrCat(du.threads, "+", tu.threads).c_str(), du.rss_mib + tu.rss_mib);
    std::fflush(stdout);
    StopCluster(*cluster);
  }
}

std::string Verdict(bool ok, const std::string& why) {
  return ok ? "ok" : absl::StrCat("SHORT (", why, ")");
}

int Run() {
  const std::string build = UseBuildDir(absl::GetFlag(FLAGS_build_dir));
  const int seconds = absl::GetFlag(FLAGS_seconds);
  const int warmup = absl::GetFlag(FLAGS_warmup);
  const bool slope = absl::GetFlag(FLAGS_slope);
  if (access(testing::BinaryPath("gloowatchd").c_str(), X_OK) != 0) {
    Log(absl::StrCat(testing::BinaryPath("gloowatchd"), " not built (cmake --build ", build,
                     " --target gloowatchd)"));
    return 1;
  }
  // The sum of every bounded wait: start-up, all peers up, 5 s and the stop
  // of each slope mesh, then the same, the warm-up and the window at 32.
  const absl::Duration slope_bound = 2 * (9 + 17) * kStartEach + 2 * absl::Seconds(40 + 5 + 10);
  StartWatchdog(2 * kNodes * kStartEach + (slope ? slope_bound : absl::ZeroDuration()) +
                    absl::Seconds(60 + warmup + seconds + 60),
                "overhead");
  std::printf("gloowatchd overhead: %u cores, load %s, %s\n", std::thread::hardware_concurrency(),
              LoadAverage().c_str(), UtcNow().c_str());
  if (!absl::GetFlag(FLAGS_extra_yaml).empty()) {
    std::printf("configuration added to the defaults:\n%s\n",
                absl::GetFlag(FLAGS_extra_yaml).c_str());
  }
  std::fflush(stdout);
  if (slope) Slope();

  // --- 31 peers ---------------------------------------------------------------
  auto cluster = StartCluster(kNodes);
  if (cluster == nullptr) return 1;
  // The budget node 0 runs with: the default unless --extra_yaml sets one.
  const absl::StatusOr<Config> config = LoadConfigFile(cluster->config_path(0));
  if (!config.ok()) {
    Log(absl::StrCat("cannot read node 0's configuration: ", config.status().message()));
    return 1;
  }
  const double budget = config->schedule.bandwidth_budget;
  WaitUp(*cluster, absl::Seconds(60));
  absl::SleepFor(absl::Seconds(warmup));
  const pid_t d = cluster->process(0)->pid();
  const pid_t t = testing::ChildPid(d);
  if (t < 0) {
    Log(absl::StrCat("no transport process under ", d));
    return 1;
  }
  const int mport = cluster->node(0).metrics_port;
  const char* const kShare = "gloowatch_bandwidth_probe_seconds_total";
  const double c0d = CpuSeconds(d), c0t = CpuSeconds(t);
  const std::optional<double> b0 = Metric(mport, kShare);
  if (!b0) {
    Log(absl::StrCat("cannot read ", kShare, " from port ", mport));
    return 1;
  }
  const absl::Time start = absl::Now();
  // Memory, threads and fds through the window; the peaks.
  double peak_rss = 0;
  long peak_fds = 0, peak_thr = 0;
  for (const absl::Time end = start + absl::Seconds(seconds); absl::Now() < end;) {
    const testing::ProcessUsage du = testing::UsageOf(d), tu = testing::UsageOf(t);
    peak_rss = std::max(peak_rss, du.rss_mib + tu.rss_mib);
    peak_fds = std::max(peak_fds, du.fds + tu.fds);
    peak_thr = std::max(peak_thr, du.threads + tu.threads);
    absl::SleepFor(std::min(kSample, std::max(end - absl::Now(), absl::ZeroDuration())));
  }
  const double c1d = CpuSeconds(d), c1t = CpuSeconds(t);
  const double wall = absl::ToDoubleSeconds(absl::Now() - start);
  const std::optional<double> b1 = Metric(mport, kShare);
  if (!b1) {
    Log(absl::StrCat("cannot read ", kShare, " from port ", mport));
    return 1;
  }
  const pid_t t_after = testing::ChildPid(d);
  const int up = PeersUp(mport);
  const std::optional<double> restarts = Metric(mport, "gloowatch_transport_restarts_total");
  if (t_after != t) {
    Log(absl::StrCat("the transport process was restarted during the window (", t, " -> ", t_after,
                     "); CPU of the transport is not comparable"));
  }
  const testing::ProcessUsage du = testing::UsageOf(d), tu = testing::UsageOf(t);
  const double rss_d = du.rss_mib, rss_t = tu.rss_mib;
  const double hwm_d = StatusMiB(d, "VmHWM"), hwm_t = StatusMiB(t, "VmHWM");
  const double anon_d = StatusMiB(d, "RssAnon"), anon_t = StatusMiB(t, "RssAnon");
  const double age = AgeSeconds(d);
  StopCluster(*cluster);

  const double cpu_d = c1d - c0d, cpu_t = c1t - c0t;
  auto per_min = [&](double s) { return s / wall * 60; };
  const double core = (cpu_d + cpu_t) / wall;
  const long fds = du.fds + tu.fds;
  std::printf(
      "\none daemon probing 31 peers at default schedules (%d up, transport restarts %s), %.0f s "
      "window\n",
      up, restarts ? absl::StrFormat("%g", *restarts).c_str() : "n/a", wall);
  std::printf("%-28s %10s %10s %10s\n", "", "daemon", "transport", "sum");
  std::printf("%-28s %10.3f %10.3f %10.3f\n", "CPU s per minute", per_min(cpu_d), per_min(cpu_t),
              per_min(cpu_d + cpu_t));
  std::printf("%-28s %10.1f %10.1f %10.1f\n", "RSS MiB (end)", rss_d, rss_t, rss_d + rss_t);
  std::printf("%-28s %10.1f %10.1f %10.1f\n", "RSS MiB (peak, VmHWM)", hwm_d, hwm_t, hwm_d + hwm_t);
  std::printf("%-28s %10.1f %10.1f %10.1f\n", "  of which anonymous", anon_d, anon_t,
              anon_d + anon_t);
  // The transport is the same executable: its libraries' pages are the daemon's.
  std::printf("%-28s %10s %10s %10.1f  (daemon RSS + transport anonymous)\n",
              "RSS MiB counted once", "", "", rss_d + anon_t);
  std::printf("%-28s %10ld %10ld %10ld\n", "threads", du.threads, tu.threads,
              du.threads + tu.threads);
  std::printf("%-28s %10ld %10ld %10ld\n", "file descriptors", du.fds, tu.fds, fds);
  std::printf("peaks sampled every 2 s (sum): RSS %.1f MiB, fds %ld, threads %ld\n", peak_rss,
              peak_fds, peak_thr);

  const double in_window = *b1 - *b0;
  const double share = in_window / wall;
  const double since_start = age > 0 ? *b1 / age : 0;
  std::printf("\nCPU: %.3f%% of one core (target < 1%%): %s\n", core * 100,
              Verdict(core < 0.01,
                      absl::StrFormat("daemon + transport use more than 1%% of one core; %.2f s of "
                                      "the window were bandwidth transfers, which over loopback "
                                      "are memory copies that cost about their duration in CPU, "
                                      "up to the %.2f%% budget",
                                      in_window, budget * 100))
                  .c_str());
  const double worst = std::max(rss_d + rss_t, hwm_d + hwm_t);
  std::printf("RSS: %.1f MiB at most, daemon + transport (target < 64 MiB): %s\n", worst,
              Verdict(worst < 64, "see docs/performance.md for where the memory goes").c_str());
  std::printf("fds: %ld for 31 peers (%.1f per peer): O(peers), see the slope above\n", fds,
              static_cast<double>(fds) / 31);
  std::printf(
      "bandwidth probes: %.3f s in transfers in the %.0f s window = %.3f%% of link time; since "
      "start %.3f s in %.0f s = %.3f%% (schedule.bandwidth_budget %.2f%%)\n",
      in_window, wall, share * 100, *b1, age, since_start * 100, budget * 100);
  std::printf(
      "  a transfer of d seconds closes the node's gate for d / budget (%.0f d here): on a "
      "loopback shared by\n"
      "  32 daemons transfers are slow, so a short window can fall entirely inside one closure.\n",
      1 / budget);
  std::printf("  budget: %s\n",
              Verdict(since_start <= budget * 1.1 || share <= budget * 1.1,
                      absl::StrFormat("over the %.2f%% budget (10%% tolerance)", budget * 100))
                  .c_str());
  std::fflush(stdout);
  return 0;
}

}  // namespace
}  // namespace gloowatch::bench

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return gloowatch::bench::Run();
}
