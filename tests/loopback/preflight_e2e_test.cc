// End to end: `gloowatch preflight` and the Preflight RPC against real
// gloowatchd processes on loopback: the mesh their transports form with real
// Gloo pairs, the store check, a daemon that is down, a transport that does
// not answer, a pair that never connects (at the job's timeout), and hostile
// RPC fields.
#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "gloo/transport/tcp/address.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "proto/gloowatch.grpc.pb.h"
#include "tests/support/daemon_process.h"
#include "tests/support/free_port.h"
#include "tests/support/subprocess.h"

namespace gloowatch::testing {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

constexpr absl::Duration kCliTimeout = absl::Seconds(60);

ProcessResult Cli(std::vector<std::string> args) {
  args.insert(args.begin(), CliPath());
  return RunProcess(args, std::nullopt, "", kCliTimeout);
}

std::string Describe(const ProcessResult& r) {
  return absl::StrCat("exit ", r.exit_code, r.timed_out ? " TIMED OUT" : "", "\nstdout:\n", r.out,
                      "\nstderr:\n", r.err);
}

// A TCP listener on 127.0.0.1 (the job's store), closed by the destructor.
class Listener {
 public:
  Listener() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (bind(fd_, reinterpret_cast<sockaddr*>(&a), len) != 0 || listen(fd_, 64) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      ADD_FAILURE() << "cannot listen on loopback";
    }
    port_ = ntohs(a.sin_port);
  }
  ~Listener() { close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

class PreflightTest : public ::testing::Test {
 protected:
  void StartCluster(int n) {
    cluster_ = std::make_unique<LoopbackCluster>(n);
    for (int i = 0; i < n; ++i) cluster_->Start(i);
    ASSERT_TRUE(WaitFor(
        [&] {
          for (int i = 0; i < n; ++i) {
            if (!GetStatus(cluster_->grpc(i)).ok()) return false;
          }
          return true;
        },
        absl::Seconds(30)));
  }
  std::string Daemons() const {
    std::vector<std::string> all;
    for (int i = 0; i < cluster_->size(); ++i) all.push_back(cluster_->grpc(i));
    return absl::StrJoin(all, ",");
  }
  std::unique_ptr<v1::Preflight::Stub> Stub(int i) const {
    return v1::Preflight::NewStub(
        grpc::CreateChannel(cluster_->grpc(i), grpc::InsecureChannelCredentials()));
  }
  // Phase 1 on the two daemons for a mesh of three ranks (the third has no
  // daemon), 1.5 s timeout: their answers in rank order; empty on failure.
  std::vector<v1::PreflightResolveResponse> PrepareThreeRanks(const std::string& session) {
    std::vector<v1::PreflightResolveResponse> resolved(2);
    for (int i = 0; i < 2; ++i) {
      v1::PreflightResolveRequest request;
      request.set_session(session);
      request.set_rank(i);
      request.set_hosts(3);
      request.set_timeout_ms(1500);
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      grpc::Status s = Stub(i)->Resolve(&ctx, request, &resolved[i]);
      if (!s.ok() || resolved[i].pair_addresses_size() != 3 ||
          !resolved[i].pair_addresses(i).empty()) {
        ADD_FAILURE() << s.error_message() << resolved[i].DebugString();
        return {};
      }
    }
    return resolved;
  }
  // Phase 2 on both daemons at once, with the third rank's pair at
  // 127.255.255.254:65000 (it never connects) and, given a port, a reverse
  // round whose third rank listens on 127.0.0.1 there.
  std::vector<std::pair<grpc::Status, v1::PreflightConnectResponse>> ConnectBoth(
      const std::string& session, const std::vector<v1::PreflightResolveResponse>& resolved,
      std::optional<int> third_reverse_port = std::nullopt) {
    std::vector<std::future<std::pair<grpc::Status, v1::PreflightConnectResponse>>> calls;
    for (int i = 0; i < 2; ++i) {
      v1::PreflightConnectRequest request;
      request.set_session(session);
      request.set_timeout_ms(1500);
      for (int r = 0; r < 3; ++r) {
        request.add_peer_pair_addresses(r == i   ? ""
                                        : r == 2 ? GlooAddressBytes("127.255.255.254", 65000)
                                                 : resolved[r].pair_addresses(i));
        if (!third_reverse_port) continue;
        request.add_peer_reverse_addresses(r == i ? ""
                                           : r == 2
                                               ? GlooAddressBytes("127.0.0.1", *third_reverse_port)
                                               : resolved[r].reverse_address());
      }
      calls.push_back(std::async(std::launch::async, [this, i, request] {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
        v1::PreflightConnectResponse response;
        grpc::Status s = Stub(i)->Connect(&ctx, request, &response);
        return std::make_pair(s, response);
      }));
    }
    std::vector<std::pair<grpc::Status, v1::PreflightConnectResponse>> out;
    for (auto& call : calls) out.push_back(call.get());
    return out;
  }
  std::unique_ptr<LoopbackCluster> cluster_;
};

const json* FindPair(const json& j, const std::string& a, const std::string& b) {
  for (const json& p : j["pairs"]) {
    if (p["a"] == a && p["b"] == b) return &p;
  }
  return nullptr;
}

TEST_F(PreflightTest, HealthyMeshAndStoreIsGo) {
  StartCluster(3);
  Listener store;
  ProcessResult r = Cli({"preflight", "--daemons", Daemons(), "--master",
                         absl::StrCat("127.0.0.1:", store.port()), "--timeout", "3s",
                         "--world_size", "6", "--json"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  json j = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["schema"], "gloowatch.preflight.v1");
  EXPECT_EQ(j["verdict"], "go");
  ASSERT_EQ(j["hosts"].size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const json& h = j["hosts"][i];
    EXPECT_EQ(h["name"], cluster_->node(i).name);  // the node name, not the address
    EXPECT_EQ(h["rank"], i);
    EXPECT_EQ(h["in_mesh"], true);
    EXPECT_EQ(h["gloo"]["address"], "127.0.0.1") << h.dump();
    EXPECT_EQ(h["store"]["ok"], true) << h.dump();
    EXPECT_EQ(h["store"]["address"], absl::StrCat("127.0.0.1:", store.port()));
  }
  ASSERT_EQ(j["pairs"].size(), 3u);
  for (const json& p : j["pairs"]) {
    EXPECT_EQ(p["ok"], true) << p.dump();
    EXPECT_GT(p["seconds"].get<double>(), 0);
    EXPECT_LT(p["seconds"].get<double>(), 3.0);
    // One address, so Gloo's port order picks the listener; the reverse
    // round proves the other direction.
    EXPECT_TRUE(p["listener"] == p["a"] || p["listener"] == p["b"]) << p.dump();
    EXPECT_NE(p["a_to_b"]["gloo"], p["b_to_a"]["gloo"]) << p.dump();
    for (const char* way : {"a_to_b", "b_to_a"}) {
      EXPECT_EQ(p[way]["tried"], true) << p.dump();
      EXPECT_EQ(p[way]["ok"], true) << p.dump();
    }
  }
  for (const json& h : j["hosts"]) {
    EXPECT_EQ(h["inbound"]["ok"], 2) << h.dump();
    EXPECT_EQ(h["outbound"]["ok"], 2) << h.dump();
  }
  EXPECT_TRUE(j["findings"].empty()) << j["findings"].dump();

  // The same as text, with GLOO_SOCKET_IFNAME=lo given as --ifname.
  ProcessResult text = Cli({"preflight", "--daemons", Daemons(), "--ifname", "lo", "--master",
                            absl::StrCat("127.0.0.1:", store.port()), "--timeout", "3s"});
  ASSERT_EQ(text.exit_code, 0) << Describe(text);
  EXPECT_THAT(text.out, HasSubstr("GLOO_SOCKET_IFNAME=lo"));
  EXPECT_THAT(text.out, HasSubstr("env:GLOO_SOCKET_IFNAME"));
  EXPECT_THAT(text.out, HasSubstr("pairs: 3 of 3 connected; the other way 3 of 3"));
  EXPECT_THAT(text.out, HasSubstr("verdict: GO (exit 0)"));
}

TEST_F(PreflightTest, StoreWithNothingListeningIsNamed) {
  StartCluster(2);
  const int port = FreePort();
  ProcessResult r = Cli({"preflight", "--daemons", Daemons(), "--master",
                         absl::StrCat("127.0.0.1:", port), "--timeout", "2s", "--json"});
  ASSERT_EQ(r.exit_code, 1) << Describe(r);
  json j = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["verdict"], "degraded");
  for (const json& h : j["hosts"]) {
    EXPECT_EQ(h["store"]["ok"], false);
    EXPECT_EQ(h["store"]["reason"], "refused") << h.dump();
  }
  ASSERT_EQ(j["findings"].size(), 2u) << j["findings"].dump();
  EXPECT_EQ(j["findings"][0]["check"], "store");
  EXPECT_THAT(j["findings"][0]["message"].get<std::string>(),
              HasSubstr(absl::StrCat("node-a: nothing listens on the store 127.0.0.1:", port)));
  EXPECT_EQ(j["pairs"][0]["ok"], true);
}

TEST_F(PreflightTest, DaemonDownStopsTheJobAndNamesIt) {
  StartCluster(3);
  cluster_->Kill(2, SIGKILL);
  ProcessResult r = Cli({"preflight", "--daemons", Daemons(), "--timeout", "2s", "--json"});
  ASSERT_EQ(r.exit_code, 2) << Describe(r);
  json j = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["verdict"], "do_not_start");
  const std::string down = cluster_->grpc(2);
  ASSERT_GE(j["findings"].size(), 1u);
  EXPECT_EQ(j["findings"][0]["severity"], "fail");
  EXPECT_THAT(j["findings"][0]["message"].get<std::string>(),
              HasSubstr(absl::StrCat(down, ": the daemon at ", down, " did not answer")));
  const json* ab = FindPair(j, "node-a", "node-b");
  ASSERT_NE(ab, nullptr) << j["pairs"].dump();
  EXPECT_EQ((*ab)["ok"], true);
  const json* ac = FindPair(j, "node-a", down);
  ASSERT_NE(ac, nullptr) << j["pairs"].dump();
  EXPECT_EQ((*ac)["tried"], false);
  // The text names it too.
  ProcessResult text = Cli({"preflight", "--daemons", Daemons(), "--timeout", "2s"});
  EXPECT_EQ(text.exit_code, 2);
  EXPECT_THAT(text.out, HasSubstr(absl::StrCat("FAIL  ", down, ": the daemon")));
  EXPECT_THAT(text.out, HasSubstr("verdict: DO NOT START (exit 2)"));
}

TEST_F(PreflightTest, StoppedTransportIsNamedAndTheDaemonRecovers) {
  StartCluster(3);
  // gRPC answers before the first transport has reported its start; a
  // transport stopped before that fails the daemon's start-up instead.
  const absl::Status up = cluster_->WaitAllUp(absl::Seconds(30));
  ASSERT_TRUE(up.ok()) << up;
  const pid_t transport = ChildPid(cluster_->process(2)->pid());
  ASSERT_GT(transport, 0);
  kill(transport, SIGSTOP);
  ProcessResult r = Cli({"preflight", "--daemons", Daemons(), "--timeout", "2s", "--json"});
  kill(transport, SIGCONT);  // the daemon may have killed it already
  ASSERT_EQ(r.exit_code, 2) << Describe(r);
  json j = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["hosts"][2]["in_mesh"], false) << j["hosts"][2].dump();
  EXPECT_THAT(j["findings"][0]["message"].get<std::string>(), HasSubstr(cluster_->grpc(2)));
  EXPECT_EQ(FindPair(j, "node-a", "node-b") != nullptr &&
                (*FindPair(j, "node-a", "node-b"))["ok"] == true,
            true)
      << j["pairs"].dump();
  // The daemon restarted its transport; a new preflight is all go.
  ProcessResult last;
  EXPECT_TRUE(WaitFor(
      [&] {
        last = Cli({"preflight", "--daemons", Daemons(), "--timeout", "2s"});
        return last.exit_code == 0;
      },
      absl::Seconds(40)))
      << Describe(last);
}

// Two real daemons and a third rank whose pairs never connect: Gloo's pairs
// on the daemons wait for it and fail at the job's timeout, with reason
// timeout, while the real pair connects. (127.255.255.254 sorts above the
// daemons' address, so their pairs only listen: nothing is sent to it.)
TEST_F(PreflightTest, PairThatNeverConnectsFailsAtTheTimeout) {
  StartCluster(2);
  const std::string session = "test-timeout";
  const std::vector<v1::PreflightResolveResponse> resolved = PrepareThreeRanks(session);
  ASSERT_EQ(resolved.size(), 2u);
  const absl::Time start = absl::Now();
  auto results = ConnectBoth(session, resolved);
  for (int i = 0; i < 2; ++i) {
    auto [status, response] = results[i];
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_EQ(response.pairs_size(), 2) << response.DebugString();
    for (const v1::PreflightPairResult& p : response.pairs()) {
      EXPECT_TRUE(p.tried());
      if (p.rank() == 2) {
        EXPECT_FALSE(p.ok()) << p.DebugString();
        EXPECT_EQ(p.reason(), v1::FAILURE_REASON_TIMEOUT) << p.DebugString();
        EXPECT_EQ(p.peer_address(), "127.255.255.254:65000");
        // Gloo's connect deadline is the job's timeout (5 pair timeouts).
        EXPECT_GE(p.seconds(), 1.4) << p.DebugString();
        EXPECT_LT(p.seconds(), 6.0) << p.DebugString();
      } else {
        EXPECT_TRUE(p.ok()) << p.DebugString();
      }
    }
    EXPECT_FALSE(response.master().checked());
  }
  EXPECT_LT(absl::Now() - start, absl::Seconds(15));
}

// The port in a serialized Gloo TCP address (IPv4).
int PortOf(const std::string& bytes) {
  const sockaddr_storage ss =
      gloo::transport::tcp::Address(std::vector<char>(bytes.begin(), bytes.end())).getSockaddr();
  return ntohs(reinterpret_cast<const sockaddr_in*>(&ss)->sin_port);
}

// The reverse round on real daemons. Between the two, the side Gloo made
// listen connects the other way and the other side sees its rank arrive.
// Towards a third rank (127.255.255.254 sorts above the daemons, so they
// listened) whose reverse listener is a closed loopback port, both are
// refused (not timed out). Strangers' bytes on a reverse listener change nothing.
TEST_F(PreflightTest, ReverseRoundProvesTheOtherDirection) {
  StartCluster(2);
  const std::string session = "test-reverse";
  const std::vector<v1::PreflightResolveResponse> resolved = PrepareThreeRanks(session);
  ASSERT_EQ(resolved.size(), 2u);
  for (const v1::PreflightResolveResponse& r : resolved) {
    ASSERT_FALSE(r.reverse_address().empty()) << r.DebugString();
  }
  // Garbage, a short write and a bogus rank on daemon 1's reverse listener.
  for (const std::string& junk :
       {std::string("GET / HTTP/1.0\r\n\r\n"), std::string("gw"), std::string("gwrv\0\0\0\7", 8)}) {
    const int fd = ConnectLoopback(PortOf(resolved[1].reverse_address()));
    ASSERT_GE(fd, 0);
    EXPECT_EQ(write(fd, junk.data(), junk.size()), static_cast<ssize_t>(junk.size()));
    close(fd);
  }
  const int closed_port = FreePort();
  auto results = ConnectBoth(session, resolved, closed_port);
  int listened_between = 0;
  for (int i = 0; i < 2; ++i) {
    auto [status, response] = results[i];
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_EQ(response.pairs_size(), 2) << response.DebugString();
    for (const v1::PreflightPairResult& p : response.pairs()) {
      EXPECT_TRUE(p.reverse().tried()) << p.DebugString();
      if (p.rank() == 2) {
        EXPECT_TRUE(p.listened()) << p.DebugString();
        EXPECT_FALSE(p.connected()) << p.DebugString();
        EXPECT_FALSE(p.reverse().ok()) << p.DebugString();
        EXPECT_EQ(p.reverse().reason(), v1::FAILURE_REASON_REFUSED) << p.DebugString();
        EXPECT_EQ(p.reverse().address(), absl::StrCat("127.0.0.1:", closed_port));
      } else {
        EXPECT_TRUE(p.ok()) << p.DebugString();
        EXPECT_TRUE(p.connected()) << p.DebugString();
        EXPECT_TRUE(p.reverse().ok()) << p.DebugString();
        listened_between += p.listened() ? 1 : 0;
        if (p.listened()) {
          EXPECT_EQ(p.reverse().address(),
                    absl::StrCat("127.0.0.1:", PortOf(resolved[p.rank()].reverse_address())));
        }
      }
    }
  }
  EXPECT_EQ(listened_between, 1);  // exactly one side of the real pair listened
}

grpc::Status Resolve(v1::Preflight::Stub& stub, const v1::PreflightResolveRequest& request,
                     v1::PreflightResolveResponse* response = nullptr) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(15));
  v1::PreflightResolveResponse ignored;
  return stub.Resolve(&ctx, request, response != nullptr ? response : &ignored);
}

grpc::Status Connect(v1::Preflight::Stub& stub, const v1::PreflightConnectRequest& request,
                     v1::PreflightConnectResponse* response = nullptr) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(15));
  v1::PreflightConnectResponse ignored;
  return stub.Connect(&ctx, request, response != nullptr ? response : &ignored);
}

TEST_F(PreflightTest, HostileFieldsAreRefusedAndTheDaemonStaysResponsive) {
  StartCluster(2);
  auto stub = Stub(0);
  auto resolve = [](auto edit) {
    v1::PreflightResolveRequest r;
    r.set_session("ok-session");
    r.set_rank(0);
    r.set_hosts(2);
    r.set_timeout_ms(1000);
    edit(r);
    return r;
  };
  struct Case {
    v1::PreflightResolveRequest request;
    std::string field;
  };
  std::vector<Case> cases = {
      {resolve([](auto& r) { r.set_hosts(1000000); }), "hosts"},
      {resolve([](auto& r) { r.set_hosts(1); }), "hosts"},
      {resolve([](auto& r) { r.set_rank(2); }), "rank"},
      {resolve([](auto& r) { r.set_timeout_ms(0); }), "timeout_ms"},
      {resolve([](auto& r) { r.set_timeout_ms(uint64_t{1} << 62); }), "timeout_ms"},
      {resolve([](auto& r) { r.set_session(""); }), "session"},
      {resolve([](auto& r) { r.set_session(std::string(100000, 'x')); }), "session"},
      {resolve([](auto& r) { r.set_session("../../etc"); }), "session"},
      {resolve([](auto& r) { r.set_socket_ifname(std::string(100000, 'e')); }), "socket_ifname"},
      {resolve([](auto& r) { r.set_socket_ifname("eth0/../x"); }), "socket_ifname"},
  };
  for (const Case& c : cases) {
    grpc::Status s = Resolve(*stub, c.request);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.field;
    EXPECT_THAT(s.error_message(), HasSubstr(c.field + ":"));
    EXPECT_LT(s.error_message().size(), 300u);  // names are clipped
  }
  // Connect: unknown session, wrong sizes, bad store.
  v1::PreflightConnectRequest connect;
  connect.set_session("never-prepared");
  connect.set_timeout_ms(1000);
  connect.add_peer_pair_addresses("");
  connect.add_peer_pair_addresses("");
  EXPECT_EQ(Connect(*stub, connect).error_code(), grpc::StatusCode::NOT_FOUND);
  v1::PreflightConnectRequest huge = connect;
  for (int i = 0; i < 5000; ++i) huge.add_peer_pair_addresses("");
  EXPECT_EQ(Connect(*stub, huge).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  v1::PreflightConnectRequest short_reverse = connect;
  short_reverse.add_peer_reverse_addresses("");
  grpc::Status reverse_status = Connect(*stub, short_reverse);
  EXPECT_EQ(reverse_status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(reverse_status.error_message(), HasSubstr("peer_reverse_addresses:"));
  v1::PreflightConnectRequest bad_store = connect;
  bad_store.set_master_addr("host name; rm -rf");
  bad_store.set_master_port(29500);
  EXPECT_EQ(Connect(*stub, bad_store).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  bad_store.set_master_addr("127.0.0.1");
  bad_store.set_master_port(70000);
  EXPECT_EQ(Connect(*stub, bad_store).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  // A flood of big meshes: bounded (a few admitted, the rest refused at
  // once), and GetStatus keeps answering meanwhile.
  std::vector<std::future<grpc::Status>> flood;
  for (int i = 0; i < 16; ++i) {
    flood.push_back(std::async(std::launch::async, [&, i] {
      v1::PreflightResolveRequest r;
      r.set_session(absl::StrCat("flood-", i));
      r.set_rank(0);
      r.set_hosts(512);
      r.set_timeout_ms(1000);
      return Resolve(*stub, r);
    }));
  }
  const absl::Time before = absl::Now();
  EXPECT_TRUE(GetStatus(cluster_->grpc(0), absl::Seconds(2)).ok());
  EXPECT_LT(absl::Now() - before, absl::Seconds(2));
  std::vector<int> admitted;
  int refused = 0;
  for (int i = 0; i < 16; ++i) {
    grpc::Status s = flood[i].get();
    if (s.ok()) {
      admitted.push_back(i);
    } else {
      EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
      EXPECT_THAT(s.error_message(), HasSubstr("limit"));
      ++refused;
    }
  }
  EXPECT_GE(refused, 14);
  EXPECT_LE(admitted.size(), 2u);
  // Connecting the admitted ones with nobody else frees their slots at once.
  for (int i : admitted) {
    v1::PreflightConnectRequest done;
    done.set_session(absl::StrCat("flood-", i));
    done.set_timeout_ms(1000);
    for (int r = 0; r < 512; ++r) done.add_peer_pair_addresses("");
    v1::PreflightConnectResponse response;
    grpc::Status s = Connect(*stub, done, &response);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(response.pairs_size(), 511);
    EXPECT_FALSE(response.pairs(0).tried());
  }
  // And a real preflight still works.
  ProcessResult r = Cli({"preflight", "--daemons", Daemons(), "--timeout", "2s"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_TRUE(GetStatus(cluster_->grpc(0)).ok());
}

TEST_F(PreflightTest, UsageErrors) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"preflight", "--hosts", "a"},
           {"preflight", "--hosts", "a,b", "--world_size", "1"},
           {"preflight", "--hosts", "a,b", "--timeout", "0s"},
           {"preflight", "--hosts", "a,b", "--master", "nope"},
           {"preflight", "--hosts", "n[3-1]"},
           {"preflight", "--hosts", "a,b", "--daemons", "127.0.0.1:1,127.0.0.1:2"},
       }) {
    ProcessResult r = Cli(args);
    EXPECT_EQ(r.exit_code, 64) << absl::StrJoin(args, " ") << "\n" << Describe(r);
    EXPECT_THAT(r.err, HasSubstr("gloowatch: "));
  }
  ProcessResult missing = Cli({"preflight", "--hostfile", "/nonexistent/hosts"});
  EXPECT_EQ(missing.exit_code, 66) << Describe(missing);
}

}  // namespace
}  // namespace gloowatch::testing
