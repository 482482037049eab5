// gloowatchd speaks the sd_notify protocol: a unix datagram socket stands in
// for systemd's NOTIFY_SOCKET and records what the daemon sends.
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/daemon_process.h"
#include "tests/support/free_port.h"

namespace gloowatch::testing {
namespace {

bool Accepts(int port) {
  const int fd = ConnectLoopback(port);
  if (fd >= 0) close(fd);
  return fd >= 0;
}

// The NOTIFY_SOCKET end: a bound unix datagram socket.
class NotifySocket {
 public:
  explicit NotifySocket(const std::string& path) : path_(path) {
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    path.copy(addr.sun_path, sizeof(addr.sun_path) - 1);
    ok_ = path.size() < sizeof(addr.sun_path) &&
          bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~NotifySocket() {
    close(fd_);
    unlink(path_.c_str());
  }
  bool ok() const { return ok_; }
  // One datagram, or "" after `timeout`.
  std::string Receive(absl::Duration timeout) {
    timeval tv = absl::ToTimeval(std::max(timeout, absl::Milliseconds(1)));
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    char buf[4096];
    const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    return n > 0 ? std::string(buf, n) : std::string();
  }

 private:
  std::string path_;
  int fd_ = -1;
  bool ok_ = false;
};

struct Message {
  absl::Time at;
  std::string text;
};

class SystemdNotifyTest : public ::testing::Test {
 protected:
  SystemdNotifyTest()
      : self_{"node-a", FreePort(), FreePort()},
        socket_(absl::StrCat(dir_.path(), "/notify.sock")) {}

  // Starts the daemon with one peer that is not running (refused).
  void StartDaemon(std::map<std::string, std::string> env) {
    const NodeSpec peer{"node-b", FreePort(), FreePort()};
    const std::string config =
        dir_.Write("node-a.yaml", LoopbackConfig(self_, {self_, peer}, R"(gloo:
  address: 127.0.0.1
  timeout: 2s
schedule:
  latency_interval: 500ms
probe:
  backoff_initial: 100ms
  backoff_max: 200ms
)"));
    env["NOTIFY_SOCKET"] = absl::StrCat(dir_.path(), "/notify.sock");
    daemon_ = std::make_unique<Process>(
        std::vector<std::string>{BinaryPath("gloowatchd"), "--config", config},
        dir_.path() + "/node-a.log", std::move(env));
  }

  // Collects datagrams for `duration`.
  std::vector<Message> Collect(absl::Duration duration, const std::string& until = "") {
    std::vector<Message> out;
    const absl::Time deadline = absl::Now() + duration;
    while (absl::Now() < deadline) {
      std::string text = socket_.Receive(deadline - absl::Now());
      if (text.empty()) continue;
      out.push_back({absl::Now(), text});
      if (!until.empty() && absl::StrContains(text, until)) break;
    }
    return out;
  }

  TempDir dir_;
  NodeSpec self_;
  NotifySocket socket_;
  std::unique_ptr<Process> daemon_;
};

int Count(const std::vector<Message>& messages, const std::string& line) {
  int n = 0;
  for (const Message& m : messages) {
    for (absl::string_view l : absl::StrSplit(m.text, '\n')) n += (l == line);
  }
  return n;
}

TEST_F(SystemdNotifyTest, ReadyAfterThePortsListenThenWatchdogPingsThenStopping) {
  ASSERT_TRUE(socket_.ok());
  StartDaemon({{"WATCHDOG_USEC", "2000000"}});
  // READY=1 is the first message, and by then both ports accept connections.
  std::string first = socket_.Receive(absl::Seconds(10));
  ASSERT_FALSE(first.empty()) << "no sd_notify message; log:\n" << daemon_->Log();
  const bool grpc_up = Accepts(self_.grpc_port);
  const bool metrics_up = Accepts(self_.metrics_port);
  EXPECT_THAT(absl::StrSplit(first, '\n'), ::testing::Contains("READY=1")) << first;
  EXPECT_THAT(first, ::testing::HasSubstr("STATUS=probing 1 peers"));
  EXPECT_TRUE(grpc_up) << "READY=1 before the gRPC port listens";
  EXPECT_TRUE(metrics_up) << "READY=1 before the metrics port listens";
  EXPECT_TRUE(GetStatus(absl::StrCat("127.0.0.1:", self_.grpc_port)).ok());

  // WATCHDOG_USEC=2s: pings at least every second, while the only peer is
  // refused (failing probes are not a stuck probe thread).
  const std::vector<Message> pings = Collect(absl::Milliseconds(3500));
  EXPECT_GE(Count(pings, "WATCHDOG=1"), 3) << daemon_->Log();
  EXPECT_EQ(Count(pings, "READY=1"), 0);
  for (size_t i = 1; i < pings.size(); ++i) {
    EXPECT_LT(pings[i].at - pings[i - 1].at, absl::Milliseconds(1500)) << i;
  }

  daemon_->Signal(SIGTERM);
  const std::vector<Message> rest = Collect(absl::Seconds(5), "STOPPING=1");
  EXPECT_EQ(Count(rest, "STOPPING=1"), 1);
  EXPECT_EQ(daemon_->Wait(absl::Seconds(10)), 0);

  // node-b was refused many times (backoff 100-200 ms over ~4 s), but the
  // repeated failure is logged once per 30 s.
  const std::string log = daemon_->Log();
  int refused_lines = 0;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    refused_lines += absl::StrContains(line, "peer node-b: refused");
  }
  EXPECT_EQ(refused_lines, 1) << log;
}

// systemctl reload: RELOADING=1, then READY=1 again; a refused config says so
// in the status text that `systemctl status` shows, and the daemon goes on.
TEST_F(SystemdNotifyTest, ReloadIsAnnouncedAndARefusalShowsInTheStatus) {
  ASSERT_TRUE(socket_.ok());
  StartDaemon({});
  ASSERT_THAT(socket_.Receive(absl::Seconds(10)), ::testing::HasSubstr("READY=1"))
      << daemon_->Log();
  // An unknown key: the reload is refused, the running config stays.
  dir_.Write("node-a.yaml", "node: node-a\nlantency: 1\n");
  daemon_->Signal(SIGHUP);
  const std::vector<Message> refused = Collect(absl::Seconds(5), "REFUSED");
  EXPECT_EQ(Count(refused, "RELOADING=1"), 1) << daemon_->Log();
  ASSERT_FALSE(refused.empty());
  EXPECT_THAT(refused.back().text, ::testing::HasSubstr("READY=1"));
  EXPECT_THAT(refused.back().text, ::testing::HasSubstr("last reload REFUSED"));
  EXPECT_THAT(refused.back().text, ::testing::HasSubstr("lantency"));
  EXPECT_TRUE(GetStatus(absl::StrCat("127.0.0.1:", self_.grpc_port)).ok());
}

TEST_F(SystemdNotifyTest, NoWatchdogPingsWhenWatchdogPidIsAnotherProcess) {
  ASSERT_TRUE(socket_.ok());
  // sd_watchdog_enabled(3): WATCHDOG_PID naming another process means the
  // watchdog is not meant for us.
  StartDaemon({{"WATCHDOG_USEC", "1000000"}, {"WATCHDOG_PID", "1"}});
  const std::vector<Message> messages = Collect(absl::Seconds(4));
  EXPECT_EQ(Count(messages, "READY=1"), 1) << daemon_->Log();
  EXPECT_EQ(Count(messages, "WATCHDOG=1"), 0);
}

TEST_F(SystemdNotifyTest, NoWatchdogPingsWithoutWatchdogUsec) {
  ASSERT_TRUE(socket_.ok());
  StartDaemon({});
  const std::vector<Message> messages = Collect(absl::Seconds(3));
  EXPECT_EQ(Count(messages, "READY=1"), 1) << daemon_->Log();
  EXPECT_EQ(Count(messages, "WATCHDOG=1"), 0);
}

}  // namespace
}  // namespace gloowatch::testing
