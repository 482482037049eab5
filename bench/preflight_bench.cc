// preflight_bench: wall time of `gloowatch preflight` over N real gloowatchd
// daemons on loopback (a LoopbackCluster of the test support with no
// configured peers, so the preflight's mesh is all the Gloo work; each
// daemon with its transport process): N*(N-1)/2 real Gloo pairs, every pair
// connected and one message each way, the reverse round (every pair
// connected the other way too) and the store check (a listener on 127.0.0.1
// in this process that accepts and closes). Median and max of several runs,
// checked: verdict go, exit 0, every pair ok, both directions of every pair
// ok where the daemons report them, no host error, every store check ok. Also the daemons' memory
// (RSS of daemon + transport, summed and per node).
//
//   preflight_bench [--build_dir=DIR] [--sizes="16 64"] [--runs=5] [--timeout=10s]
//                   [--deadline=10s] [--settle=2]
//
// The flags' defaults come from PF_SIZES (add 256 on a machine with ~8 GiB
// free), PF_RUNS, PF_TIMEOUT (the job timeout given to preflight),
// PF_DEADLINE (--deadline, the bound of each Resolve call) and PF_SETTLE
// (seconds to wait after every daemon answers, for the start-up of N daemons
// and their transports to finish). Target: 64 hosts in < 10 s (median).
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "bench/bench_support.h"
#include "nlohmann/json.hpp"
#include "tests/support/daemon_process.h"
#include "tests/support/subprocess.h"

ABSL_FLAG(std::string, build_dir, "",
          "the build directory (default: the one this binary was built in)");
ABSL_FLAG(std::string, sizes, gloowatch::bench::EnvOr("PF_SIZES", std::string("16 64")),
          "the cluster sizes, separated by spaces or commas (env PF_SIZES)");
ABSL_FLAG(int, runs, gloowatch::bench::EnvOr("PF_RUNS", 5), "runs per size (env PF_RUNS)");
ABSL_FLAG(std::string, timeout, gloowatch::bench::EnvOr("PF_TIMEOUT", std::string("10s")),
          "preflight's --timeout, the job's (env PF_TIMEOUT)");
ABSL_FLAG(std::string, deadline, gloowatch::bench::EnvOr("PF_DEADLINE", std::string("10s")),
          "preflight's --deadline, the bound of each Resolve call (env PF_DEADLINE)");
ABSL_FLAG(int, settle, gloowatch::bench::EnvOr("PF_SETTLE", 2),
          "seconds to wait after every daemon answers (env PF_SETTLE)");

namespace gloowatch::bench {
namespace {

using testing::ClusterPeers;
using testing::LoopbackCluster;

constexpr char kYaml[] = "gloo:\n  address: 127.0.0.1\n  timeout: 5s\n";

void Log(const std::string& text) { std::fprintf(stderr, "preflight bench: %s\n", text.c_str()); }

// The job's store: a listener on 127.0.0.1 (a port the kernel picks) that
// accepts and closes, on its own thread until destroyed.
class Store {
 public:
  Store() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        listen(fd_, 1024) != 0 || getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return;
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] {
      // Polls, so the destructor's flag ends it within 200 ms.
      while (!stop_) {
        pollfd p{fd_, POLLIN, 0};
        if (poll(&p, 1, 200) <= 0) continue;
        const int conn = accept(fd_, nullptr, nullptr);
        if (conn >= 0) close(conn);
      }
    });
  }
  ~Store() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) close(fd_);
  }
  int port() const { return port_; }  // 0: no listener

 private:
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// "ok", or BAD(what is wrong) with the preflight's JSON for N hosts.
std::string Check(const std::string& output, int n, int code) {
  const nlohmann::json j = nlohmann::json::parse(output, nullptr, false);
  if (!j.is_object()) return "BAD(no JSON)";
  std::vector<std::string> problems;
  const std::string verdict = j.value("verdict", "");
  if (verdict != "go" || code != 0)
    problems.push_back(absl::StrCat("verdict ", verdict, " exit ", code));
  const nlohmann::json pairs = j.value("pairs", nlohmann::json::array());
  if (static_cast<int>(pairs.size()) != n * (n - 1) / 2) {
    problems.push_back(absl::StrCat(pairs.size(), " pairs"));
  }
  int bad = 0, bad_ways = 0;
  std::string first_bad;
  for (const auto& p : pairs) {
    // Both directions, where the daemons ran the reverse round.
    for (const char* way : {"a_to_b", "b_to_a"}) {
      const nlohmann::json d = p.value(way, nlohmann::json());
      if (d.is_object() && d.value("tried", false) && !d.value("ok", false)) ++bad_ways;
    }
    if (p.value("ok", false)) continue;
    if (bad++ == 0) first_bad = p.value("message", "").substr(0, 120);
  }
  if (bad > 0) problems.push_back(absl::StrCat(bad, " failed pairs, e.g. ", first_bad));
  if (bad_ways > 0) problems.push_back(absl::StrCat(bad_ways, " failed directions"));
  int failed_hosts = 0;
  bool store_failed = false;
  std::set<std::string> errors;
  for (const auto& h : j.value("hosts", nlohmann::json::array())) {
    const nlohmann::json error = h.value("error", nlohmann::json());
    if (error.is_string() && !error.get<std::string>().empty()) {
      ++failed_hosts;
      errors.insert(error.get<std::string>().substr(0, 160));
    }
    const nlohmann::json store = h.value("store", nlohmann::json());
    if (!store.is_object() || !store.value("ok", false)) store_failed = true;
  }
  if (failed_hosts > 0) {
    std::vector<std::string> some(errors.begin(), errors.end());
    some.resize(std::min<size_t>(some.size(), 3));
    problems.push_back(absl::StrCat(failed_hosts, " hosts failed: ", absl::StrJoin(some, " | ")));
  }
  if (store_failed) problems.push_back("store check failed");
  return problems.empty() ? "ok" : absl::StrCat("BAD(", absl::StrJoin(problems, "; "), ")");
}

// The last `lines` lines of `text`.
std::string Tail(const std::string& text, size_t lines) {
  std::vector<absl::string_view> all = absl::StrSplit(text, '\n');
  if (!all.empty() && all.back().empty()) all.pop_back();
  const size_t from = all.size() > lines ? all.size() - lines : 0;
  return absl::StrCat(absl::StrJoin(all.begin() + from, all.end(), "\n"), "\n");
}

struct Settings {
  int runs;
  std::string timeout, deadline;
  absl::Duration settle;
  absl::Duration run_bound;  // of one preflight run
  int store_port;
};

// One size: N daemons up, their memory, `runs` preflights; one table row.
// False when the daemons did not come up.
bool Size(int n, const Settings& s) {
  LoopbackCluster cluster(n, kYaml, ClusterPeers::kNone);
  if (absl::Status up = StartOneByOne(cluster); !up.ok()) {
    Log(absl::StrCat("the ", n, " daemons did not all come up: ", up.message()));
    StopCluster(cluster);
    return false;
  }
  absl::SleepFor(s.settle);
  double rss_mib = 0;
  std::vector<std::string> daemons;
  for (int i = 0; i < n; ++i) {
    const pid_t d = cluster.process(i)->pid();
    rss_mib += testing::UsageOf(d).rss_mib;
    if (const pid_t t = testing::ChildPid(d); t > 0) rss_mib += testing::UsageOf(t).rss_mib;
    daemons.push_back(cluster.grpc(i));
  }
  const std::vector<std::string> argv = {testing::BinaryPath("client/gloowatch"),
                                         "preflight",
                                         "--daemons",
                                         absl::StrJoin(daemons, ","),
                                         "--master",
                                         absl::StrCat("127.0.0.1:", s.store_port),
                                         "--timeout",
                                         s.timeout,
                                         "--deadline",
                                         s.deadline,
                                         "--json"};
  std::vector<double> ms;
  testing::ProcessResult last;
  for (int r = 0; r < s.runs; ++r) {
    const absl::Time t0 = absl::Now();
    last = testing::RunProcess(argv, std::nullopt, "", s.run_bound);
    ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - t0));
    if (last.exit_code != 0) break;
  }
  if (last.timed_out)
    last.err += absl::StrCat("\n(killed after ", absl::FormatDuration(s.run_bound), ")");
  const std::string check = Check(last.out, n, last.exit_code);
  std::sort(ms.begin(), ms.end());
  const double median = ms[(ms.size() - 1) / 2], max = ms.back();
  // The target: 64 hosts in under 10 s (median), every pair connected.
  std::string target = "-";
  if (n == 64) target = check == "ok" && median < 10000 ? "met" : "SHORT";
  std::printf("%6d %8d %12.2f %12.2f %14.0f %14.1f %-6s %s\n", n, n * (n - 1) / 2, median / 1000,
              max / 1000, rss_mib, rss_mib / n, target.c_str(), check.c_str());
  std::fflush(stdout);
  if (check != "ok") {
    std::fprintf(stderr, "%s\n%s", last.err.c_str(), Tail(cluster.process(0)->Log(), 5).c_str());
  }
  StopCluster(cluster);
  return true;
}

int Run() {
  const std::string build = UseBuildDir(absl::GetFlag(FLAGS_build_dir));
  for (const char* binary : {"client/gloowatch", "gloowatchd"}) {
    if (access(testing::BinaryPath(binary).c_str(), X_OK) != 0) {
      Log(absl::StrCat(testing::BinaryPath(binary), " not built (cmake --build ", build,
                       " --target gloowatchd gloowatch)"));
      return 1;
    }
  }
  std::vector<int> sizes;
  for (absl::string_view word :
       absl::StrSplit(absl::GetFlag(FLAGS_sizes), absl::ByAnyChar(" ,"), absl::SkipEmpty())) {
    int n = 0;
    if (!absl::SimpleAtoi(word, &n) || n < 2) {
      Log(absl::StrCat("--sizes: '", word, "' is not a cluster size (2 or more)"));
      return 1;
    }
    sizes.push_back(n);
  }
  Settings s;
  s.runs = std::max(1, absl::GetFlag(FLAGS_runs));
  s.timeout = absl::GetFlag(FLAGS_timeout);
  s.deadline = absl::GetFlag(FLAGS_deadline);
  s.settle = absl::Seconds(std::max(0, absl::GetFlag(FLAGS_settle)));
  absl::Duration timeout, deadline;
  if (!absl::ParseDuration(s.timeout, &timeout) || !absl::ParseDuration(s.deadline, &deadline)) {
    Log("--timeout and --deadline take durations (10s)");
    return 1;
  }
  // A preflight takes at most about twice its timeout (docs/client.md).
  s.run_bound = 2 * timeout + deadline + absl::Seconds(60);
  absl::Duration budget;  // the sum of every bounded wait
  for (int n : sizes) {
    budget += 2 * n * kStartEach + s.settle + s.runs * s.run_bound + absl::Seconds(30);
  }
  StartWatchdog(budget, "preflight bench");
  Store store;
  if (store.port() == 0) {
    Log("cannot listen on 127.0.0.1 for the store");
    return 1;
  }
  s.store_port = store.port();

  std::printf("gloowatch preflight: %u cores, load %s, %s\n", std::thread::hardware_concurrency(),
              LoadAverage().c_str(), UtcNow().c_str());
  std::printf(
      "median of %d runs of: gloowatch preflight --daemons <N> --master 127.0.0.1:%d --timeout "
      "%s --deadline %s --json\n\n",
      s.runs, s.store_port, s.timeout.c_str(), s.deadline.c_str());
  std::printf("%6s %8s %12s %12s %14s %14s %-6s %s\n", "N", "pairs", "median s", "max s",
              "RSS MiB total", "MiB per node", "target", "check");
  std::fflush(stdout);
  for (int n : sizes) {
    if (!Size(n, s)) return 1;
  }
  return 0;
}

}  // namespace
}  // namespace gloowatch::bench

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return gloowatch::bench::Run();
}
