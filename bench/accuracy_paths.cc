#include "bench/accuracy_paths.h"

#include <sched.h>
#include <signal.h>

#include <cstddef>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace gloowatch::bench {
namespace {

using testing::CommandResult;
using testing::Process;

constexpr absl::Duration kPairUpTimeout = absl::Seconds(20);

std::string GlooYaml(const std::string& address) {
  return absl::StrCat("gloo:\n  address: ", address, "\n  timeout: 5s\n");
}

std::string LastLines(const std::string& text, size_t n) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  if (lines.size() > n) lines.erase(lines.begin(), lines.end() - static_cast<ptrdiff_t>(n));
  return absl::StrJoin(lines, "\n");
}

// Both daemons on 127.0.0.1, on ports nobody listened on.
class LoopbackPath : public BenchPath {
 public:
  LoopbackPath()
      : nodes_{{"a", testing::FreePort(), testing::FreePort()},
               {"b", testing::FreePort(), testing::FreePort()}},
        iperf3_port_(testing::FreePort()),
        sockperf_port_(testing::FreePort()) {}

  std::string label() const override { return "lo"; }
  std::string ns(int) const override { return ""; }
  std::string ip(int) const override { return "127.0.0.1"; }
  std::string node(int side) const override { return nodes_[side].name; }
  int iperf3_port() const override { return iperf3_port_; }
  int sockperf_port() const override { return sockperf_port_; }

  void StopPair() override {
    for (auto& daemon : daemons_) {
      if (daemon) Stop(*daemon);
    }
  }

  absl::StatusOr<std::map<std::string, double>> Metrics(int side) const override {
    absl::StatusOr<std::string> body = testing::HttpGet(nodes_[side].metrics_port, "/metrics");
    if (!body.ok()) return body.status();
    return testing::ParseMetrics(*body);
  }

  absl::StatusOr<v1::NodeStatus> Status(int side) const override {
    return testing::GetStatus(absl::StrCat("127.0.0.1:", nodes_[side].grpc_port));
  }

 protected:
  void StartDaemon(int side, const std::string& yaml,
                   const std::map<std::string, std::string>& env) override {
    const testing::NodeSpec& self = nodes_[side];
    const std::string config = dir_.Write(
        absl::StrCat(self.name, ".yaml"),
        testing::LoopbackConfig(self, {nodes_[0], nodes_[1]}, GlooYaml("127.0.0.1") + yaml));
    daemons_[side].reset();  // a daemon of an earlier pair
    daemons_[side] = std::make_unique<Process>(
        std::vector<std::string>{testing::BinaryPath("gloowatchd"), "--config", config},
        absl::StrCat(dir_.path(), "/", self.name, ".log"), env);
  }

  std::string LogTail(int side) const override {
    return daemons_[side] ? LastLines(daemons_[side]->Log(), 5) : "";
  }

 private:
  testing::TempDir dir_;
  testing::NodeSpec nodes_[2];
  std::unique_ptr<Process> daemons_[2];
  int iperf3_port_;
  int sockperf_port_;
};

// Hosts h1 and h2 of a NetnsCluster, each alone in its namespace.
class VethPath : public BenchPath {
 public:
  VethPath() : cluster_(Options()) {}

  absl::Status Setup() { return cluster_.Setup(); }

  std::string label() const override { return "veth"; }
  std::string ns(int side) const override { return cluster_.ns(side); }
  std::string ip(int side) const override { return cluster_.ip(side); }
  std::string node(int side) const override { return cluster_.name(side); }
  int iperf3_port() const override { return 5201; }
  int sockperf_port() const override { return 11111; }

  void StopPair() override {
    for (int side : {0, 1}) {
      testing::Process* daemon = cluster_.daemon(side);
      if (daemon == nullptr || !daemon->running()) continue;
      cluster_.Kill(side, SIGTERM);
      if (daemon->running()) cluster_.Kill(side, SIGKILL);
    }
  }

  absl::StatusOr<std::map<std::string, double>> Metrics(int side) const override {
    return cluster_.Metrics(side);
  }

  absl::StatusOr<v1::NodeStatus> Status(int side) const override { return cluster_.Status(side); }

  // h1's eth0 (what it sends) and its switch port (what it receives).
  absl::Status Shape(const std::string& rate) override {
    return cluster_.Shape(0, rate, testing::ShapeSide::kBoth);
  }
  void Unshape() override { cluster_.Unshape(0).IgnoreError(); }

 protected:
  void StartDaemon(int side, const std::string& yaml,
                   const std::map<std::string, std::string>& env) override {
    testing::DaemonOptions options;
    options.env = env;
    // The config is the gloo block, then the cluster's extra_yaml (empty
    // here): this side's own keys ride along with its gloo block.
    options.gloo_yaml = GlooYaml(ip(side)) + yaml;
    cluster_.Start(side, options);
  }

  std::string LogTail(int side) const override { return LastLines(cluster_.DaemonLog(side), 5); }

 private:
  static testing::NetnsClusterOptions Options() {
    testing::NetnsClusterOptions options;
    options.hosts = 2;
    options.extra_yaml = "";
    return options;
  }

  testing::NetnsCluster cluster_;
};

}  // namespace

absl::Status BenchPath::StartPair(const PairOptions& options) {
  for (int side : {0, 1}) {
    OnCpu(options.cpu[side], [&] {
      StartDaemon(side, options.yaml[side],
                  side == 0 ? options.env_a : std::map<std::string, std::string>{});
    });
  }
  if (testing::WaitFor([&] { return SeesPeerUp(0) && SeesPeerUp(1); }, kPairUpTimeout)) {
    return absl::OkStatus();
  }
  return absl::DeadlineExceededError(absl::StrCat(
      "daemons on ", label(), " did not come up in ", absl::FormatDuration(kPairUpTimeout),
      "; their logs end with:\n", LogTail(0), "\n", LogTail(1)));
}

bool BenchPath::SeesPeerUp(int side) const {
  absl::StatusOr<std::map<std::string, double>> metrics = Metrics(side);
  if (!metrics.ok()) return false;
  const std::optional<double> up = testing::FindMetric(
      *metrics, "gloowatch_peer_up", {{"node", node(side)}, {"peer", node(1 - side)}});
  return up.has_value() && *up == 1;
}

absl::Status BenchPath::Shape(const std::string&) {
  return absl::FailedPreconditionError(absl::StrCat(label(), " has no link to shape"));
}

std::vector<std::string> BenchPath::OnSide(int side, const std::vector<std::string>& argv) const {
  if (ns(side).empty()) return argv;
  std::vector<std::string> full = {"ip", "netns", "exec", ns(side)};
  full.insert(full.end(), argv.begin(), argv.end());
  return full;
}

testing::CommandResult BenchPath::Exec(int side, const std::vector<std::string>& argv,
                                       absl::Duration timeout) const {
  return testing::RunCommand(OnSide(side, argv), timeout);
}

std::unique_ptr<testing::Process> BenchPath::Spawn(int side, const std::vector<std::string>& argv,
                                                   const std::string& log_path) const {
  return std::make_unique<Process>(OnSide(side, argv), log_path);
}

bool BenchPath::WaitListening(int side, int port, absl::Duration timeout) const {
  const std::vector<std::string> ss = {"ss", "-ltnH", absl::StrCat("sport = :", port)};
  return testing::WaitFor(
      [&] {
        const CommandResult r = Exec(side, ss, absl::Seconds(2));
        return r.ok() && !r.output.empty();
      },
      timeout);
}

std::unique_ptr<BenchPath> MakeLoopbackPath() { return std::make_unique<LoopbackPath>(); }

absl::StatusOr<std::unique_ptr<BenchPath>> MakeVethPath() {
  const std::string reason = testing::NetnsUnavailableReason();
  if (!reason.empty()) return absl::FailedPreconditionError(reason);
  auto path = std::make_unique<VethPath>();
  if (absl::Status s = path->Setup(); !s.ok()) return s;
  return std::unique_ptr<BenchPath>(std::move(path));
}

void Stop(testing::Process& process) {
  if (!process.running()) return;
  process.Signal(SIGTERM);
  if (process.Wait(absl::Seconds(3)).has_value()) return;
  process.Signal(SIGKILL);
  process.Wait(absl::Seconds(5));
}

void OnCpu(int cpu, const std::function<void()>& fn) {
  std::thread thread([&] {
    if (cpu >= 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpu, &set);
      sched_setaffinity(0, sizeof(set), &set);  // this thread only
    }
    fn();
  });
  thread.join();
}

}  // namespace gloowatch::bench
