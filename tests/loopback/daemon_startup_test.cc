// gloowatchd refuses to start, clearly and quickly, when it cannot do its job.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/daemon_process.h"
#include "tests/support/free_port.h"

namespace gloowatch::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Holds a listening socket on 127.0.0.1:port for the test's lifetime.
class PortHolder {
 public:
  explicit PortHolder(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    ok_ = bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 && listen(fd_, 4) == 0;
  }
  ~PortHolder() { close(fd_); }
  bool ok() const { return ok_; }

 private:
  int fd_;
  bool ok_ = false;
};

struct Outcome {
  std::optional<int> exit_code;
  std::string log;
};

Outcome RunDaemon(const TempDir& dir, const std::string& yaml,
                  std::map<std::string, std::string> env = {}) {
  const std::string config = dir.Write("node.yaml", yaml);
  Process p({BinaryPath("gloowatchd"), "--config", config}, dir.path() + "/node.log",
            std::move(env));
  Outcome out;
  out.exit_code = p.Wait(absl::Seconds(15));
  out.log = p.Log();
  return out;
}

std::string Config(int grpc_port, int metrics_port, const std::string& gloo) {
  return absl::StrCat("node: node-a\ngrpc_listen: 127.0.0.1:", grpc_port,
                      "\nmetrics_listen: 127.0.0.1:", metrics_port, "\n", gloo,
                      "peers:\n  - name: node-b\n    grpc: 127.0.0.1:1\n");
}

TEST(DaemonStartupTest, GrpcPortInUseIsAClearError) {
  TempDir dir;
  const int grpc_port = FreePort();
  PortHolder holder(grpc_port);
  ASSERT_TRUE(holder.ok());
  Outcome out = RunDaemon(dir, Config(grpc_port, FreePort(), "gloo: {address: 127.0.0.1}\n"));
  ASSERT_TRUE(out.exit_code.has_value()) << "daemon did not exit";
  EXPECT_EQ(*out.exit_code, 69) << out.log;
  EXPECT_THAT(out.log, HasSubstr(absl::StrCat("cannot listen for gRPC on 127.0.0.1:", grpc_port)));
  EXPECT_THAT(out.log, HasSubstr("already in use"));
  // Our line alone: gRPC's own (600 characters from chttp2_server.cc) is
  // debug output now.
  EXPECT_THAT(out.log, Not(HasSubstr("chttp2_server")));
  EXPECT_THAT(out.log, Not(HasSubstr("No address added")));
}

TEST(DaemonStartupTest, MetricsPortInUseIsAClearError) {
  TempDir dir;
  const int metrics_port = FreePort();
  PortHolder holder(metrics_port);
  ASSERT_TRUE(holder.ok());
  Outcome out = RunDaemon(dir, Config(FreePort(), metrics_port, "gloo: {address: 127.0.0.1}\n"));
  ASSERT_TRUE(out.exit_code.has_value()) << "daemon did not exit";
  EXPECT_EQ(*out.exit_code, 69) << out.log;
  EXPECT_THAT(out.log, HasSubstr(absl::StrCat("cannot serve metrics on 127.0.0.1:", metrics_port)));
}

TEST(DaemonStartupTest, MissingInterfaceIsNamed) {
  TempDir dir;
  Outcome out = RunDaemon(dir, Config(FreePort(), FreePort(), "gloo: {interface: nosuch0}\n"));
  ASSERT_TRUE(out.exit_code.has_value()) << "daemon did not exit";
  EXPECT_EQ(*out.exit_code, 69) << out.log;
  EXPECT_THAT(out.log, HasSubstr("nosuch0"));
}

TEST(DaemonStartupTest, MissingInterfaceFromGlooSocketIfnameIsNamed) {
  TempDir dir;
  Outcome out =
      RunDaemon(dir, Config(FreePort(), FreePort(), ""), {{"GLOO_SOCKET_IFNAME", "nosuch1"}});
  ASSERT_TRUE(out.exit_code.has_value()) << "daemon did not exit";
  EXPECT_EQ(*out.exit_code, 69) << out.log;
  EXPECT_THAT(out.log, HasSubstr("nosuch1"));
  EXPECT_THAT(out.log, HasSubstr("GLOO_SOCKET_IFNAME"));
}

TEST(DaemonStartupTest, AddressNotOnThisHostIsNamed) {
  TempDir dir;
  // Documentation range (RFC 5737): assigned to no interface here.
  Outcome out = RunDaemon(dir, Config(FreePort(), FreePort(), "gloo: {address: 192.0.2.77}\n"));
  ASSERT_TRUE(out.exit_code.has_value()) << "daemon did not exit";
  EXPECT_EQ(*out.exit_code, 69) << out.log;
  EXPECT_THAT(out.log, HasSubstr("192.0.2.77"));
}

TEST(DaemonStartupTest, InvalidConfigExitsWithConfigErrorNamingFileAndLine) {
  TempDir dir;
  Outcome out = RunDaemon(dir, "node: node-a\ngrpc_listen: 127.0.0.1:7601\nmetrics_listen: x\n");
  ASSERT_TRUE(out.exit_code.has_value());
  EXPECT_EQ(*out.exit_code, 78) << out.log;
  EXPECT_THAT(out.log, HasSubstr("node.yaml:3"));
  EXPECT_THAT(out.log, HasSubstr("metrics_listen"));
}

TEST(DaemonStartupTest, CheckConfigValidatesWithoutStarting) {
  TempDir dir;
  const std::string good = dir.Write("good.yaml", Config(FreePort(), FreePort(), ""));
  const std::string bad = dir.Write("bad.yaml", "node: node-a\nlantency: 1\n");
  Process ok({BinaryPath("gloowatchd"), "--check-config", good}, dir.path() + "/ok.log");
  EXPECT_EQ(ok.Wait(absl::Seconds(10)), 0) << ok.Log();
  EXPECT_THAT(ok.Log(), HasSubstr("OK"));
  Process ko({BinaryPath("gloowatchd"), "--check-config", bad}, dir.path() + "/ko.log");
  EXPECT_EQ(ko.Wait(absl::Seconds(10)), 1) << ko.Log();
  EXPECT_THAT(ko.Log(), HasSubstr("bad.yaml:2"));
  EXPECT_THAT(ko.Log(), HasSubstr("lantency"));
}

TEST(DaemonStartupTest, VersionPrintsBothVersions) {
  TempDir dir;
  Process p({BinaryPath("gloowatchd"), "--version"}, dir.path() + "/v.log");
  EXPECT_EQ(p.Wait(absl::Seconds(10)), 0);
  EXPECT_THAT(p.Log(), HasSubstr("gloowatchd 0."));
  EXPECT_THAT(p.Log(), HasSubstr("Gloo 0.5"));
}

TEST(DaemonStartupTest, HelpListsTheFlagsAndABadFlagIsAUsageError) {
  TempDir dir;
  Process help({BinaryPath("gloowatchd"), "--help"}, dir.path() + "/help.log");
  EXPECT_EQ(help.Wait(absl::Seconds(10)), 0);
  EXPECT_THAT(help.Log(), HasSubstr("--check_config"));
  EXPECT_THAT(help.Log(), HasSubstr("exit codes:"));
  EXPECT_THAT(help.Log(), ::testing::Not(HasSubstr("transport_fd")));  // internal
  Process bad({BinaryPath("gloowatchd"), "--no-such-flag"}, dir.path() + "/bad.log");
  EXPECT_EQ(bad.Wait(absl::Seconds(10)), 64);
  EXPECT_THAT(bad.Log(), HasSubstr("unknown flag '--no-such-flag'"));
  Process typo({BinaryPath("gloowatchd"), "--check-confg", "x.yaml"}, dir.path() + "/typo.log");
  EXPECT_EQ(typo.Wait(absl::Seconds(10)), 64);
  EXPECT_THAT(typo.Log(), HasSubstr("did you mean --check-config?"));
  Process extra({BinaryPath("gloowatchd"), "stray"}, dir.path() + "/extra.log");
  EXPECT_EQ(extra.Wait(absl::Seconds(10)), 64);
}

TEST(DaemonStartupTest, SigtermStopsPromptly) {
  TempDir dir;
  const std::string config =
      dir.Write("node.yaml", Config(FreePort(), FreePort(), "gloo: {address: 127.0.0.1}\n"));
  Process p({BinaryPath("gloowatchd"), "--config", config}, dir.path() + "/node.log");
  ASSERT_TRUE(
      WaitFor([&] { return p.Log().find("ready") != std::string::npos; }, absl::Seconds(10)))
      << p.Log();
  p.Signal(SIGTERM);
  EXPECT_EQ(p.Wait(absl::Seconds(8)), 0) << p.Log();
}

}  // namespace
}  // namespace gloowatch::testing

namespace gloowatch::testing {
namespace {

// gloowatchd --node with a file that lists every node, itself included (as
// a Kubernetes DaemonSet's ConfigMap does): it takes the name, leaves itself
// out and probes the other node, a daemon with a classic config.
TEST(DaemonStartupTest, NodeFlagWithASharedPeerListProbesTheOthers) {
  TempDir dir;
  const NodeSpec a{"node-a", FreePort(), FreePort()};
  const NodeSpec b{"node-b", FreePort(), FreePort()};
  const std::string shared = dir.Write(
      "shared.yaml",
      absl::StrCat("grpc_listen: 127.0.0.1:", a.grpc_port,
                   "\nmetrics_listen: 127.0.0.1:", a.metrics_port, "\n", FastLoopbackYaml(),
                   "peers:\n  - {name: node-a, grpc: ", "127.0.0.1:", a.grpc_port,
                   ", group: rack-1}\n  - {name: node-b, grpc: ", "127.0.0.1:", b.grpc_port,
                   ", group: rack-1}\n"));
  Process daemon_a({BinaryPath("gloowatchd"), "--config", shared, "--node", "node-a"},
                   dir.path() + "/a.log");
  Process daemon_b(
      {BinaryPath("gloowatchd"), "--config",
       dir.Write("b.yaml", LoopbackConfig(b, {a, b}, FastLoopbackYaml() + "group: rack-1\n"))},
      dir.path() + "/b.log");
  absl::StatusOr<v1::NodeStatus> status;
  const bool up = WaitFor(
      [&] {
        status = GetStatus(absl::StrCat("127.0.0.1:", a.grpc_port));
        return status.ok() && status->peers_size() == 1 &&
               status->peers(0).state() == v1::PEER_STATE_UP;
      },
      absl::Seconds(20));
  ASSERT_TRUE(up) << (status.ok() ? status->DebugString() : status.status().ToString())
                  << "\nnode-a:\n"
                  << daemon_a.Log() << "\nnode-b:\n"
                  << daemon_b.Log();
  EXPECT_EQ(status->node(), "node-a");
  EXPECT_EQ(status->peers(0).name(), "node-b");

  // Its transport process has a name in ps and top, not "exe".
  const pid_t transport = ChildPid(daemon_a.pid());
  ASSERT_GT(transport, 0);
  std::ifstream comm(absl::StrCat("/proc/", transport, "/comm"));
  std::string name;
  std::getline(comm, name);
  EXPECT_EQ(name, "gloowatchd-tran");  // the kernel keeps 15 characters
  std::ifstream cmdline(absl::StrCat("/proc/", transport, "/cmdline"));
  std::string argv0;
  std::getline(cmdline, argv0, '\0');
  EXPECT_EQ(argv0, "gloowatchd-transport");
}

}  // namespace
}  // namespace gloowatch::testing
