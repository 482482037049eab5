// Bad input from a stranger on the network: a bounded, seeded fuzz loop of
// random, truncated and oversized inputs against a daemon's gRPC and
// /metrics ports (and, once the Gloo transport is isolated, its Gloo pair
// ports). The daemon must stay alive, keep answering GetStatus and keep
// probing its real peers. Needs root; skips otherwise. See docs/testing.md.
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <map>
#include <random>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/support/metrics_text.h"
#include "tests/support/netns_cluster.h"

namespace gloowatch::testing {
namespace {

constexpr int kInputsPerPort = 1000;
constexpr int kTarget = 0;    // h1 is attacked
constexpr int kAttacker = 1;  // from h2's namespace (a socket there, not h2's daemon)

uint64_t Seed() {
  uint64_t seed = 20240611;
  if (const char* env = std::getenv("GLOOWATCH_FUZZ_SEED")) (void)absl::SimpleAtoi(env, &seed);
  return seed;
}

class Fuzzer {
 public:
  explicit Fuzzer(uint64_t seed) : rng_(seed) {}
  size_t Uniform(size_t lo, size_t hi) {  // [lo, hi]
    return std::uniform_int_distribution<size_t>(lo, hi)(rng_);
  }
  std::string Bytes(size_t n) {
    std::string s(n, '\0');
    for (char& c : s) c = static_cast<char>(Uniform(0, 255));
    return s;
  }
  std::string Printable(size_t n) {
    std::string s(n, ' ');
    for (char& c : s) c = static_cast<char>(Uniform(33, 126));
    return s;
  }
  std::string Truncate(const std::string& s) { return s.substr(0, Uniform(0, s.size())); }
  std::mt19937_64& rng() { return rng_; }

 private:
  std::mt19937_64 rng_;
};

const std::string kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

std::string Frame(uint32_t length, uint8_t type, uint8_t flags, uint32_t stream,
                  const std::string& payload) {
  std::string f;
  f.push_back(static_cast<char>((length >> 16) & 0xff));
  f.push_back(static_cast<char>((length >> 8) & 0xff));
  f.push_back(static_cast<char>(length & 0xff));
  f.push_back(static_cast<char>(type));
  f.push_back(static_cast<char>(flags));
  for (int shift = 24; shift >= 0; shift -= 8)
    f.push_back(static_cast<char>((stream >> shift) & 0xff));
  return f + payload;
}

std::string RandomFrame(Fuzzer& fz, size_t max_payload) {
  const std::string payload = fz.Bytes(fz.Uniform(0, max_payload));
  return Frame(static_cast<uint32_t>(payload.size()), static_cast<uint8_t>(fz.Uniform(0, 10)),
               static_cast<uint8_t>(fz.Uniform(0, 255)),
               static_cast<uint32_t>(fz.Uniform(0, 1) ? fz.Uniform(0, 9) : fz.Uniform(0, 1u << 31)),
               payload);
}

// One gRPC (HTTP/2) input; `kind` names its family for the counts.
std::string GrpcInput(Fuzzer& fz, std::string* kind) {
  switch (fz.Uniform(0, 6)) {
    case 0:
      *kind = "random bytes";
      return fz.Bytes(fz.Uniform(0, 2048));
    case 1:
      *kind = "truncated preface";
      return fz.Truncate(kPreface);
    case 2: {
      *kind = "preface + random frames";
      std::string s = kPreface;
      for (size_t i = fz.Uniform(1, 8); i > 0; --i) s += RandomFrame(fz, 1024);
      return s;
    }
    case 3: {
      *kind = "frame length lies";
      const std::string payload = fz.Bytes(fz.Uniform(0, 512));
      return kPreface + Frame(static_cast<uint32_t>(fz.Uniform(payload.size() + 1, (1u << 24) - 1)),
                              static_cast<uint8_t>(fz.Uniform(0, 9)), 0, 1, payload);
    }
    case 4: {
      *kind = "GetStatus-like, garbage HPACK/message, truncated";
      std::string s = kPreface + Frame(0, 4, 0, 0, "");  // empty SETTINGS
      const std::string hpack = fz.Bytes(fz.Uniform(1, 300));
      s += Frame(static_cast<uint32_t>(hpack.size()), 1, 0x4, 1, hpack);  // HEADERS, END_HEADERS
      std::string message = fz.Bytes(fz.Uniform(0, 200));
      std::string prefix = {static_cast<char>(fz.Uniform(0, 1)), 0, 0, 0,
                            static_cast<char>(fz.Uniform(0, 255))};
      s +=
          Frame(static_cast<uint32_t>(prefix.size() + message.size()), 0, 0x1, 1, prefix + message);
      return fz.Truncate(s);
    }
    case 5: {
      *kind = "oversized (64-256 KiB of frames)";
      std::string s = kPreface;
      const size_t target = fz.Uniform(64 << 10, 256 << 10);
      while (s.size() < target) s += RandomFrame(fz, 16384);
      return s;
    }
    default:
      *kind = "HTTP/1.1 request to the gRPC port";
      return absl::StrCat("POST /gloowatch.v1.Status/GetStatus HTTP/1.1\r\nHost: x\r\n",
                          "Content-Length: ", fz.Uniform(0, 1 << 20), "\r\n\r\n",
                          fz.Bytes(fz.Uniform(0, 100)));
  }
}

std::string HttpInput(Fuzzer& fz, std::string* kind) {
  const std::string good = "GET /metrics HTTP/1.1\r\nHost: h1\r\nAccept: */*\r\n\r\n";
  switch (fz.Uniform(0, 7)) {
    case 0:
      *kind = "random bytes";
      return fz.Bytes(fz.Uniform(0, 2048));
    case 1:
      *kind = "truncated request";
      return fz.Truncate(good);
    case 2:
      *kind = "random method/path/version";
      return absl::StrCat(fz.Printable(fz.Uniform(1, 20)), " /", fz.Printable(fz.Uniform(0, 200)),
                          " ", fz.Printable(fz.Uniform(0, 12)), "\r\n\r\n");
    case 3:
      *kind = "oversized header (16-256 KiB)";
      return absl::StrCat("GET /metrics HTTP/1.1\r\nX-Big: ",
                          std::string(fz.Uniform(16 << 10, 256 << 10), 'a'), "\r\n\r\n");
    case 4: {
      *kind = "thousands of headers";
      std::string s = "GET /metrics HTTP/1.1\r\n";
      for (size_t i = fz.Uniform(500, 3000); i > 0; --i) absl::StrAppend(&s, "X-", i, ": y\r\n");
      return s + "\r\n";
    }
    case 5:
      *kind = "huge Content-Length, short body";
      return absl::StrCat("POST /metrics HTTP/1.1\r\nHost: h1\r\nContent-Length: ",
                          fz.Uniform(0, 1) ? "99999999999999999999" : "-1", "\r\n\r\n",
                          fz.Bytes(fz.Uniform(0, 1000)));
    case 6:
      *kind = "bad chunked body";
      return absl::StrCat("POST /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
                          fz.Printable(fz.Uniform(1, 20)), "\r\n", fz.Bytes(fz.Uniform(0, 300)));
    default:
      *kind = "long / percent-garbage path";
      return absl::StrCat("GET /metrics", fz.Uniform(0, 1) ? "%" : "/../",
                          std::string(fz.Uniform(1000, 70000), fz.Uniform(0, 1) ? '%' : 'A'),
                          " HTTP/1.0\r\n\r\n");
  }
}

// Sends `input` on a fresh connection from the attacker's namespace,
// reads briefly, then closes (sometimes with a RST). Bounded: ~150 ms.
bool Deliver(const std::string& ns, const std::string& ip, int port, const std::string& input,
             bool reset) {
  absl::StatusOr<int> fd = ConnectInNetns(ns, ip, port, absl::Seconds(1));
  if (!fd.ok()) return false;
  timeval tv{0, 100000};
  setsockopt(*fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  size_t sent = 0;
  const absl::Time deadline = absl::Now() + absl::Milliseconds(100);
  while (sent < input.size() && absl::Now() < deadline) {
    const ssize_t n = send(*fd, input.data() + sent, input.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  char buf[4096];
  for (int i = 0; i < 4; ++i) {  // up to ~20 ms of whatever the server says
    pollfd p{*fd, POLLIN, 0};
    if (poll(&p, 1, 5) <= 0) break;
    if (recv(*fd, buf, sizeof(buf), MSG_DONTWAIT) <= 0) break;
  }
  if (reset) {
    linger l{1, 0};
    setsockopt(*fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
  }
  close(*fd);
  return true;
}

class NetnsFuzzTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = NetnsUnavailableReason();
    if (!reason.empty()) GTEST_SKIP() << "netns harness unavailable: " << reason;
  }
  void StartCluster() {
    cluster_ = std::make_unique<NetnsCluster>();
    absl::Status s = cluster_->Setup();
    ASSERT_TRUE(s.ok()) << s;
    cluster_->StartAll();
    s = cluster_->WaitAllUp(absl::Seconds(30), /*measured=*/false);
    ASSERT_TRUE(s.ok()) << s;
  }
  void TearDown() override {
    if (cluster_ && HasFailure()) std::cerr << cluster_->AllLogs();
    cluster_.reset();
  }
  std::map<std::string, uint64_t> ProbesOk() {
    std::map<std::string, uint64_t> out;
    for (int i = 0; i < cluster_->size(); ++i) {
      auto s = cluster_->Status(i);
      if (!s.ok()) continue;
      for (const auto& p : s->peers())
        out[absl::StrCat(cluster_->name(i), "->", p.name())] = p.probes_ok();
    }
    return out;
  }
  // After the fuzzing: alive, answering, every link UP and still probing.
  void ExpectHealthy(const std::map<std::string, uint64_t>& before) {
    ASSERT_TRUE(cluster_->daemon(kTarget)->running()) << "target daemon died";
    absl::Status up = cluster_->WaitAllUp(absl::Seconds(10), /*measured=*/false);
    EXPECT_TRUE(up.ok()) << up;
    // Every link probes again: wait (bounded) until each has grown, rather
    // than sleep a second and hope each did.
    std::map<std::string, uint64_t> after;
    auto all_grew = [&] {
      after = ProbesOk();
      for (const auto& [link, ok] : before) {
        if ((after.count(link) ? after.at(link) : 0) <= ok) return false;
      }
      return true;
    };
    if (!WaitFor(all_grew, absl::Seconds(10))) {
      for (const auto& [link, ok] : before) {
        EXPECT_GT(after.count(link) ? after.at(link) : 0, ok) << link << " stopped probing";
      }
    }
    auto metrics = cluster_->Metrics(kTarget);
    ASSERT_TRUE(metrics.ok()) << metrics.status();
    EXPECT_EQ(FindMetric(*metrics, "gloowatch_build_info", {{"node", "h1"}}), 1);
  }
  // Runs `inputs` generated inputs against ip:port of the target.
  void Fuzz(const std::string& what, int port, int inputs,
            std::string (*generate)(Fuzzer&, std::string*), Fuzzer& fz) {
    std::map<std::string, int> counts;
    int delivered = 0;
    size_t bytes = 0;
    const absl::Time start = absl::Now();
    for (int i = 0; i < inputs; ++i) {
      std::string kind;
      const std::string input = generate(fz, &kind);
      ++counts[kind];
      bytes += input.size();
      if (Deliver(cluster_->ns(kAttacker), cluster_->ip(kTarget), port, input,
                  fz.Uniform(0, 3) == 0)) {
        ++delivered;
      }
      if (i % 50 == 49) {
        ASSERT_TRUE(cluster_->daemon(kTarget)->running())
            << "daemon died after " << what << " input " << i << " (" << kind << ")";
        absl::StatusOr<v1::NodeStatus> s = cluster_->Status(kTarget);
        ASSERT_TRUE(s.ok()) << "GetStatus failed after " << what << " input " << i << " (" << kind
                            << "): " << s.status();
      }
    }
    std::cout << what << ": " << inputs << " inputs (" << delivered << " delivered, " << bytes
              << " bytes) in " << (absl::Now() - start) << ":\n";
    for (const auto& [kind, n] : counts) std::cout << "  " << n << "  " << kind << "\n";
    EXPECT_EQ(delivered, inputs) << "some connections to " << what << " failed";
  }
  std::unique_ptr<NetnsCluster> cluster_;
};

TEST_F(NetnsFuzzTest, GrpcAndMetricsPortsSurviveBadInput) {
  StartCluster();
  if (HasFatalFailure()) return;
  const uint64_t seed = Seed();
  std::cout << "seed " << seed << " (GLOOWATCH_FUZZ_SEED overrides)\n";
  Fuzzer fz(seed);
  const auto before = ProbesOk();
  Fuzz("gRPC port 7601", NetnsCluster::kGrpcPort, kInputsPerPort, GrpcInput, fz);
  if (HasFatalFailure()) return;
  Fuzz("metrics port 9601", NetnsCluster::kMetricsPort, kInputsPerPort, HttpInput, fz);
  if (HasFatalFailure()) return;
  ExpectHealthy(before);
}

// Gloo pair ports (the ephemeral ports a daemon's pending and connected
// pairs listen on). Some inputs make Gloo's event-loop thread throw (a
// GLOO_ENFORCE in tcp::Pair::read that nothing can catch) and abort the
// transport process; the daemon must survive that and probe again.
TEST_F(NetnsFuzzTest, GlooPairPortsSurviveBadInput) {
  StartCluster();
  if (HasFatalFailure()) return;
  const uint64_t seed = Seed();
  std::cout << "seed " << seed << "\n";
  Fuzzer fz(seed);
  std::map<std::string, int> counts;
  std::set<int> ports_seen;
  int inputs = 0;
  const absl::Time start = absl::Now();
  int round = 0;
  // Pending pairs exist while a prober reconnects: restart h3 every few
  // seconds so h1 keeps opening new ones, and hit every listening port.
  while (absl::Now() - start < absl::Seconds(40) && inputs < kInputsPerPort) {
    if (round++ % 15 == 0) cluster_->Start(2);
    auto ports = ListeningPorts(cluster_->ns(kTarget));
    ASSERT_TRUE(ports.ok()) << ports.status();
    for (int port : *ports) {
      if (port == NetnsCluster::kGrpcPort || port == NetnsCluster::kMetricsPort) continue;
      ports_seen.insert(port);
      std::string kind;
      std::string input;
      switch (fz.Uniform(0, 5)) {
        case 4:
        case 5: {
          // Gloo tcp Op preamble, 6 x size_t: nbytes, opcode, slot, offset,
          // length, roffset; sometimes exactly the known abort (opcode 1 =
          // SEND_UNBOUND_BUFFER to slot 99).
          const bool known = fz.Uniform(0, 3) == 0;
          kind = known ? "Gloo preamble: the known abort" : "Gloo preamble, random fields";
          const uint64_t length = known ? 8 : fz.Uniform(0, 8192);
          const uint64_t op[6] = {48 + length,
                                  known ? 1 : fz.Uniform(0, 4),
                                  known ? 99 : fz.Uniform(0, 200),
                                  known ? 0 : fz.Uniform(0, 64),
                                  length,
                                  0};
          input.assign(reinterpret_cast<const char*>(op), sizeof(op));
          input += fz.Bytes(fz.Uniform(0, 1) ? length : fz.Uniform(0, length));
          break;
        }
        case 0:
          kind = "random bytes";
          input = fz.Bytes(fz.Uniform(0, 4096));
          break;
        case 1: {
          kind = "48-byte header, random fields";
          input = fz.Bytes(48);
          break;
        }
        case 2:
          kind = "truncated header";
          input = fz.Bytes(fz.Uniform(1, 47));
          break;
        default:
          kind = "oversized (64-256 KiB)";
          input = fz.Bytes(fz.Uniform(64 << 10, 256 << 10));
      }
      ++counts[kind];
      ++inputs;
      Deliver(cluster_->ns(kAttacker), cluster_->ip(kTarget), port, input, fz.Uniform(0, 1));
      if (!cluster_->daemon(kTarget)->running()) {
        FAIL() << "daemon died (exit "
               << cluster_->daemon(kTarget)->Wait(absl::ZeroDuration()).value_or(0)
               << ") after input " << inputs << " (" << kind << ") on port " << port;
      }
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  std::cout << "Gloo pair ports: " << inputs << " inputs on " << ports_seen.size() << " ports in "
            << (absl::Now() - start) << ":\n";
  for (const auto& [kind, n] : counts) std::cout << "  " << n << "  " << kind << "\n";
  EXPECT_GT(inputs, 0);
  ASSERT_TRUE(cluster_->daemon(kTarget)->running()) << "target daemon died";
  absl::Status up = cluster_->WaitAllUp(absl::Seconds(20), /*measured=*/false);
  ASSERT_TRUE(up.ok()) << up;
  ExpectHealthy(ProbesOk());  // h3 restarted: compare from here
}

}  // namespace
}  // namespace gloowatch::testing
