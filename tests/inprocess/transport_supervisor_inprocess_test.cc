// TransportSupervisor on simulated time, supervising real transport
// processes (gloowatchd re-executed as in production): restart backoff and
// the heartbeat deadline are asserted on simulated time, without sleeping.
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "common/simulated_clock.h"
#include "daemon/supervisor/transport_supervisor.h"
#include "gtest/gtest.h"

namespace gloowatch {
namespace {

constexpr absl::Duration kRealTimeout = absl::Seconds(30);

std::string GloowatchdPath() {
  const char* dir = std::getenv("GLOOWATCH_BIN_DIR");
  return std::string(dir != nullptr ? dir : ".") + "/gloowatchd";
}

// The process state letter from /proc/<pid>/stat ('T' once stopped).
char ProcessState(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  return paren == std::string::npos || paren + 2 >= text.size() ? '?' : text[paren + 2];
}

// Waits until `pid`, a child of this process (the supervisor forked it), has
// stopped; leaves the stop to be seen by others (WNOWAIT).
bool AwaitStopped(pid_t pid) {
  siginfo_t info{};
  return waitid(P_PID, pid, &info, WSTOPPED | WNOWAIT) == 0 && info.si_code == CLD_STOPPED;
}

// Every start and end of a transport process, on simulated time.
class Events {
 public:
  explicit Events(const Clock* clock) : clock_(clock) {}

  void Started(pid_t pid) {
    absl::MutexLock lock(&mu_);
    if (pid > 0) starts_.push_back({pid, clock_->Monotonic()});
  }
  void Exited(const std::string& why) {
    absl::MutexLock lock(&mu_);
    exits_.push_back({why, clock_->Monotonic()});
  }
  struct Start {
    pid_t pid;
    absl::Duration at;
  };
  struct Exit {
    std::string why;
    absl::Duration at;
  };
  // Waits in real time until there have been `n` starts (exits).
  std::optional<Start> AwaitStart(size_t n) {
    absl::MutexLock lock(&mu_);
    auto reached = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return starts_.size() >= n; };
    if (!mu_.AwaitWithTimeout(absl::Condition(&reached), kRealTimeout)) return std::nullopt;
    return starts_[n - 1];
  }
  std::optional<Exit> AwaitExit(size_t n, absl::Duration real_timeout = kRealTimeout) {
    absl::MutexLock lock(&mu_);
    auto reached = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return exits_.size() >= n; };
    if (!mu_.AwaitWithTimeout(absl::Condition(&reached), real_timeout)) return std::nullopt;
    return exits_[n - 1];
  }
  size_t starts() {
    absl::MutexLock lock(&mu_);
    return starts_.size();
  }

 private:
  const Clock* const clock_;
  absl::Mutex mu_;
  std::vector<Start> starts_ ABSL_GUARDED_BY(mu_);
  std::vector<Exit> exits_ ABSL_GUARDED_BY(mu_);
};

TransportSupervisor::Options SupervisorOptions(Events& events) {
  TransportSupervisor::Options options;
  options.launcher = NewProcessLauncher(GloowatchdPath(), "warning");
  options.config.node = "node-a";
  // Only parsed by the transport, which binds neither listen address.
  options.config.yaml =
      "node: node-a\ngrpc_listen: 127.0.0.1:7601\nmetrics_listen: 127.0.0.1:9601\n"
      "gloo:\n  address: 127.0.0.1\n";
  options.config.source = "inprocess.yaml";
  options.gloo_address = "127.0.0.1";
  options.observer_for = [](const std::string&) -> std::shared_ptr<ProbeObserver> {
    return nullptr;
  };
  options.on_exit = [&events](const std::string& why) { events.Exited(why); };
  options.on_pid = [&events](pid_t pid) { events.Started(pid); };
  return options;
}

TEST(TransportSupervisorInProcessTest, RestartBackoffDoublesAndCapsOnSimulatedTime) {
  SimulatedClock clock;
  Events events(&clock);
  TransportSupervisor::Options options = SupervisorOptions(events);
  options.restart_initial = absl::Milliseconds(500);
  options.restart_max = absl::Seconds(2);
  // Out of the way: its deadline must not be mistaken for a backoff step.
  options.heartbeat_timeout = absl::Hours(1);
  TransportSupervisor supervisor(options, &clock);
  supervisor.Start();
  ASSERT_TRUE(supervisor.AwaitStarted(kRealTimeout).ok());

  absl::Duration base = options.restart_initial;
  for (size_t n = 1; n <= 5; ++n) {
    const std::optional<Events::Start> running = events.AwaitStart(n);
    ASSERT_TRUE(running.has_value());
    ASSERT_EQ(kill(running->pid, SIGKILL), 0);
    const std::optional<Events::Exit> died = events.AwaitExit(n);
    ASSERT_TRUE(died.has_value());
    EXPECT_TRUE(absl::StrContains(died->why, "killed by signal 9")) << died->why;
    // Step through the supervisor's waits until the next process starts.
    for (int steps = 0; events.starts() == n; ++steps) {
      ASSERT_LT(steps, 100);
      const std::optional<absl::Duration> wake = clock.AwaitPendingDeadline(kRealTimeout);
      ASSERT_TRUE(wake.has_value());
      if (*wake - died->at > options.restart_max) break;  // the new process's heartbeat deadline
      clock.AdvanceTo(*wake);
    }
    const std::optional<Events::Start> restarted = events.AwaitStart(n + 1);
    ASSERT_TRUE(restarted.has_value());
    const absl::Duration backoff = restarted->at - died->at;
    EXPECT_GE(backoff, base / 2) << "restart " << n;
    EXPECT_LE(backoff, base) << "restart " << n;
    EXPECT_EQ(supervisor.restarts(), n);
    base = std::min(base * 2, options.restart_max);
  }
  supervisor.Stop();
}

TEST(TransportSupervisorInProcessTest, KillsATransportSilentForTheHeartbeatTimeout) {
  SimulatedClock clock;
  Events events(&clock);
  TransportSupervisor::Options options = SupervisorOptions(events);
  options.heartbeat_timeout = absl::Seconds(5);
  TransportSupervisor supervisor(options, &clock);
  supervisor.Start();
  ASSERT_TRUE(supervisor.AwaitStarted(kRealTimeout).ok());
  const std::optional<Events::Start> running = events.AwaitStart(1);
  ASSERT_TRUE(running.has_value());
  EXPECT_TRUE(supervisor.Healthy());

  // Wedged: alive, but no heartbeat any more.
  ASSERT_EQ(kill(running->pid, SIGSTOP), 0);
  ASSERT_TRUE(AwaitStopped(running->pid));
  // A heartbeat sent just before the stop may still arrive and move the
  // deadline once; each round advances to the deadline then pending.
  std::optional<Events::Exit> killed;
  for (int round = 0; round < 3 && !killed; ++round) {
    const std::optional<absl::Duration> deadline = clock.AwaitPendingDeadline(kRealTimeout);
    ASSERT_TRUE(deadline.has_value());
    if (round == 0) {
      // Every heartbeat so far arrived at the start's simulated time.
      EXPECT_EQ(*deadline - running->at, options.heartbeat_timeout);
    }
    clock.AdvanceTo(*deadline - absl::Nanoseconds(1));
    EXPECT_TRUE(supervisor.Healthy());
    EXPECT_FALSE(events.AwaitExit(1, absl::ZeroDuration()).has_value());
    clock.AdvanceTo(*deadline);
    killed = events.AwaitExit(1, absl::Seconds(2));
  }
  ASSERT_TRUE(killed.has_value());
  EXPECT_TRUE(absl::StrContains(killed->why, "stopped answering (no heartbeat for 5s); killed it"))
      << killed->why;
  EXPECT_GE(killed->at - running->at, options.heartbeat_timeout);
  EXPECT_EQ(ProcessState(running->pid), '?') << "killed and reaped";
  EXPECT_EQ(supervisor.restarts(), 1u);
  supervisor.Stop();
}

}  // namespace
}  // namespace gloowatch
