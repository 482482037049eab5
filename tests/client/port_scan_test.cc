// Port scan classification on loopback (open/refused) and, in network
// namespaces the test creates, filtered ports behind an nft drop rule.
#include "client/diagnose/port_scan.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/subprocess.h"
#include "tests/support/wait_for.h"

namespace gloowatch::client {
namespace {

using gloowatch::testing::RunProcess;

int Listen(uint32_t addr, uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 16) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

std::map<uint16_t, std::string> States(const std::vector<PortResult>& r) {
  std::map<uint16_t, std::string> m;
  for (const auto& p : r) m[p.port] = PortStateName(p.state);
  return m;
}

TEST(PortScanLoopback, OpenAndRefusedExactly) {
  // Find 10 consecutive free ports; listen on three of them.
  for (int attempt = 0; attempt < 20; ++attempt) {
    const uint16_t base = 41000 + attempt * 97;
    std::vector<int> probe;
    bool free = true;
    for (int i = 0; i < 10 && free; ++i) {
      int fd = Listen(INADDR_LOOPBACK, base + i);
      free = fd >= 0;
      if (fd >= 0) probe.push_back(fd);
    }
    for (int fd : probe) close(fd);
    if (!free) continue;
    const std::set<uint16_t> open = {static_cast<uint16_t>(base + 1),
                                     static_cast<uint16_t>(base + 3),
                                     static_cast<uint16_t>(base + 7)};
    std::vector<int> fds;
    for (uint16_t p : open) fds.push_back(Listen(INADDR_LOOPBACK, p));
    for (int fd : fds) ASSERT_GE(fd, 0);
    ScanOptions o;
    o.concurrency = 4;  // fewer than ports: exercises the refill loop
    auto r = ScanPorts("127.0.0.1", base, base + 9, o);
    for (int fd : fds) close(fd);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->size(), 10u);
    for (const auto& p : *r) {
      EXPECT_EQ(PortStateName(p.state), std::string(open.count(p.port) ? "open" : "refused"))
          << "port " << p.port;
    }
    return;
  }
  GTEST_SKIP() << "no 10 consecutive free loopback ports found";
}

// 1,000 ports through 64 connects in flight: each one answered (loopback
// refuses or accepts at once), in port order, none left unscanned. (How fast
// is no test's business.)
TEST(PortScanLoopback, ManyPortsEachClassifiedInOrder) {
  auto r = ScanPorts("127.0.0.1", 60000, 60999, ScanOptions{});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 1000u);
  for (size_t i = 0; i < r->size(); ++i) {
    const PortResult& p = (*r)[i];
    EXPECT_EQ(p.port, 60000 + i);
    EXPECT_TRUE(p.state == PortState::kOpen || p.state == PortState::kRefused)
        << "port " << p.port << ": " << PortStateName(p.state) << " " << p.error;
  }
}

TEST(PortScanLoopback, UnresolvableHost) {
  // Not a valid host name: refused without a DNS query.
  auto r = ScanPorts("no such host", 1, 2, ScanOptions{});
  EXPECT_FALSE(r.ok());
}

// Two namespaces joined by a veth pair: 10.231.0.1 (scanner) and 10.231.0.2
// (listeners + nft drop rule). Nothing is configured in the root namespace.
class NetnsScan : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root for ip netns / nft";
    suffix_ = absl::StrCat(getpid() % 100000);
    a_ = "gwscan-a" + suffix_;
    b_ = "gwscan-b" + suffix_;
    const std::string va = "gwva" + suffix_, vb = "gwvb" + suffix_;
    const std::vector<std::string> cmds = {
        "ip netns add " + a_,
        "ip netns add " + b_,
        "ip link add " + va + " netns " + a_ + " type veth peer name " + vb + " netns " + b_,
        "ip -n " + a_ + " addr add 10.231.0.1/24 dev " + va,
        "ip -n " + b_ + " addr add 10.231.0.2/24 dev " + vb,
        "ip -n " + a_ + " link set " + va + " up",
        "ip -n " + b_ + " link set " + vb + " up",
        "ip -n " + a_ + " link set lo up",
        "ip -n " + b_ + " link set lo up",
        "ip netns exec " + b_ +
            " nft -f - <<'EOF'\n"
            "table inet gwscan {\n chain input {\n  type filter hook input priority 0; policy "
            "accept;\n"
            "  tcp dport { 29502, 29504 } drop\n }\n}\nEOF",
    };
    for (size_t i = 0; i < cmds.size(); ++i) {
      auto r = Sh(cmds[i]);
      // No netns support at all is an environment limit; later steps failing is a bug.
      if (r.exit_code != 0 && i == 0) GTEST_SKIP() << "no `ip netns` here: " << r.err;
      ASSERT_EQ(r.exit_code, 0) << "`" << cmds[i] << "`: " << r.err;
    }
    ready_ = true;
  }

  void TearDown() override {
    // Deleting the namespaces removes the veth pair and the nft table.
    Sh("ip netns del " + a_ + " 2>/dev/null");
    Sh("ip netns del " + b_ + " 2>/dev/null");
  }

  static gloowatch::testing::ProcessResult Sh(const std::string& c) {
    return RunProcess({"/bin/sh", "-c", c}, std::nullopt, "", absl::Seconds(20));
  }

  // Runs fn on a thread that joined namespace `ns`; sockets it opens live there.
  template <typename F>
  void InNamespace(const std::string& ns, F fn) {
    std::thread t([&] {
      int fd = open(("/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
      ASSERT_GE(fd, 0);
      ASSERT_EQ(setns(fd, CLONE_NEWNET), 0);
      close(fd);
      fn();
    });
    t.join();
  }

  std::string suffix_, a_, b_;
  bool ready_ = false;
};

TEST_F(NetnsScan, FilteredPortsExactly) {
  std::vector<int> fds;
  // 29504 listens but is dropped: filtered wins over open.
  InNamespace(b_, [&] {
    for (uint16_t p : {29501, 29503, 29504}) fds.push_back(Listen(0x0ae70002, p));  // 10.231.0.2
  });
  for (int fd : fds) ASSERT_GE(fd, 0);
  std::vector<PortResult> result;
  std::thread scanner([&] {
    InNamespace(a_, [&] {
      ScanOptions o;
      o.connect_timeout = absl::Seconds(3);
      auto r = ScanPorts("10.231.0.2", 29500, 29505, o);
      ASSERT_TRUE(r.ok()) << r.status();
      result = *r;
    });
  });
  // All connects run in parallel: both dropped ports wait for their answer
  // at the same time (the kernel lists both connects in SYN-SENT at once),
  // not one after the other.
  std::string seen;
  const bool parallel = gloowatch::testing::WaitFor(
      [&] {
        seen = Sh("ip netns exec " + a_ + " ss -Htn state syn-sent").out;
        return absl::StrContains(seen, "10.231.0.2:29502") &&
               absl::StrContains(seen, "10.231.0.2:29504");
      },
      absl::Seconds(3), absl::Milliseconds(20));
  scanner.join();
  for (int fd : fds) close(fd);
  EXPECT_TRUE(parallel) << "never both dropped ports in SYN-SENT at once; last:\n" << seen;
  EXPECT_THAT(States(result),
              ::testing::ElementsAre(
                  ::testing::Pair(29500, "refused"), ::testing::Pair(29501, "open"),
                  ::testing::Pair(29502, "filtered"), ::testing::Pair(29503, "open"),
                  ::testing::Pair(29504, "filtered"), ::testing::Pair(29505, "refused")));
}

// One connect at a time: 29502 uses up 400 ms of the 600, 29503 is refused
// at once, and the scan ends at its bound instead of waiting out 29504's
// connect, which is left not_scanned rather than called filtered.
TEST_F(NetnsScan, TotalTimeBoundLeavesRestNotScanned) {
  std::vector<PortResult> result;
  InNamespace(a_, [&] {
    ScanOptions o;
    o.concurrency = 1;
    o.connect_timeout = absl::Milliseconds(400);
    o.total_timeout = absl::Milliseconds(600);
    auto r = ScanPorts("10.231.0.2", 29502, 29504, o);  // 29502 and 29504 dropped
    ASSERT_TRUE(r.ok());
    result = *r;
  });
  ASSERT_EQ(result.size(), 3u);
  EXPECT_EQ(PortStateName(result[0].state), std::string("filtered"));
  EXPECT_EQ(PortStateName(result[1].state), std::string("refused"));
  EXPECT_EQ(PortStateName(result[2].state), std::string("not_scanned"));
}

TEST_F(NetnsScan, DiagnoseCliReportsFilteredPorts) {
  const std::string report = "/tmp/gwscan-report" + suffix_ + ".json";
  auto r = RunProcess({"/bin/sh", "-c",
                       "exec ip netns exec " + a_ + " " + gloowatch::testing::CliPath() +
                           " diagnose --report-path " + report +
                           " --target 10.231.0.2 --ports 29500-29505 --connect-timeout 500ms"},
                      std::map<std::string, std::string>{{"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}},
                      "", absl::Seconds(30));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;  // filtered ports are a failure
  std::ifstream in(report);
  nlohmann::json j = nlohmann::json::parse(in);
  unlink(report.c_str());
  bool found = false;
  for (const auto& c : j["checks"]) {
    if (c["id"] != "port_scan:10.231.0.2") continue;
    found = true;
    EXPECT_EQ(c["status"], "FAIL");
    EXPECT_THAT(c["evidence"], ::testing::Contains("filtered: 29502,29504"));
    EXPECT_THAT(c["evidence"], ::testing::Contains("refused: 29500-29501,29503,29505"));
  }
  EXPECT_TRUE(found) << j.dump(2);
}

}  // namespace
}  // namespace gloowatch::client
