// End to end: the gloowatch CLI (and the Python StepReporter inside a real
// torch.distributed job) against real gloowatchd processes on loopback. No
// fakes: every number the client prints is checked against what the daemons
// themselves report over gRPC and /metrics.
#include <signal.h>

#include <cmath>
#include <future>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/daemon_process.h"
#include "tests/support/free_port.h"
#include "tests/support/metrics_text.h"
#include "tests/support/subprocess.h"

extern char** environ;

namespace gloowatch::testing {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
using json = nlohmann::json;

// Generous: a loaded 2-core machine with concurrent builds.
constexpr absl::Duration kCliTimeout = absl::Seconds(30);

ProcessResult Cli(std::vector<std::string> args, absl::Duration timeout = kCliTimeout) {
  args.insert(args.begin(), CliPath());
  return RunProcess(args, std::nullopt, "", timeout);
}

std::string Describe(const ProcessResult& r) {
  return absl::StrCat("exit ", r.exit_code, " signal ", r.signal, r.timed_out ? " TIMED OUT" : "",
                      "\nstdout:\n", r.out, "\nstderr:\n", r.err);
}

// stdout of `health --json` (one document); a discarded value when invalid.
json ParseJson(const std::string& text) { return json::parse(text, nullptr, false); }

std::string Join(const std::vector<std::string>& v) { return absl::StrJoin(v, ","); }

std::string Logs(LoopbackCluster& cluster) {
  std::string out;
  for (int i = 0; i < cluster.size(); ++i) {
    if (cluster.process(i) != nullptr) {
      absl::StrAppend(&out, "--- ", cluster.node(i).name, " log:\n", cluster.process(i)->Log());
    }
  }
  return out;
}

std::map<std::string, std::string> Environment(const std::map<std::string, std::string>& extra) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string s = *e;
    const size_t eq = s.find('=');
    if (eq == std::string::npos) continue;
    // The job must not inherit Gloo settings from whoever runs the tests.
    if (s.rfind("GLOO_", 0) == 0) continue;
    env[s.substr(0, eq)] = s.substr(eq + 1);
  }
  for (const auto& [k, v] : extra) env[k] = v;
  return env;
}

// --- figure-by-figure comparison of `health --json` with GetStatus ---------

// The matrices of the health JSON, and how each cell derives from the
// daemon's own PeerStatus (same units as docs/client.md).
struct MatrixFigure {
  const char* key;
  std::function<std::optional<double>(const v1::PeerStatus&)> get;
};
const std::vector<MatrixFigure>& Figures() {
  static const auto* f = new std::vector<MatrixFigure>{
      {"latency_p50_ms",
       [](const v1::PeerStatus& p) -> std::optional<double> {
         if (!p.latency().has_p50_seconds()) return std::nullopt;
         return p.latency().p50_seconds() * 1e3;
       }},
      {"latency_p99_ms",
       [](const v1::PeerStatus& p) -> std::optional<double> {
         if (!p.latency().has_p99_seconds()) return std::nullopt;
         return p.latency().p99_seconds() * 1e3;
       }},
      {"tx_bytes_per_second",
       [](const v1::PeerStatus& p) -> std::optional<double> {
         if (!p.bandwidth().has_tx_bytes_per_second()) return std::nullopt;
         return p.bandwidth().tx_bytes_per_second();
       }},
      {"rx_bytes_per_second",
       [](const v1::PeerStatus& p) -> std::optional<double> {
         if (!p.bandwidth().has_rx_bytes_per_second()) return std::nullopt;
         return p.bandwidth().rx_bytes_per_second();
       }},
      {"link_ratio",
       [](const v1::PeerStatus& p) -> std::optional<double> {
         if (!p.bandwidth().has_link_ratio()) return std::nullopt;
         return p.bandwidth().link_ratio();
       }},
      {"clock_offset_ms",
       [](const v1::PeerStatus& p) -> std::optional<double> {
         if (!p.clock().has_offset_seconds()) return std::nullopt;
         return p.clock().offset_seconds() * 1e3;
       }},
  };
  return *f;
}

using Snapshot = std::map<std::string, v1::NodeStatus>;  // by node name

Snapshot ReadAll(const LoopbackCluster& cluster) {
  Snapshot s;
  for (int i = 0; i < cluster.size(); ++i) {
    auto status = GetStatus(cluster.grpc(i));
    if (status.ok()) s[cluster.node(i).name] = *status;
  }
  return s;
}

bool Same(double x, double y) { return x == y || std::abs(x - y) <= 1e-12 * std::abs(y); }

// The CLI's cell must be what the daemon reported: equal to the value read
// just before or just after the CLI ran, or in between (it changed while the
// CLI was asking). Returns the discrepancies.
std::vector<std::string> CompareWithDaemons(const json& health, const Snapshot& before,
                                            const Snapshot& after) {
  std::vector<std::string> bad;
  const std::vector<std::string> names = health["node_names"].get<std::vector<std::string>>();
  for (const MatrixFigure& f : Figures()) {
    const json& m = health["matrices"][f.key];
    for (size_t i = 0; i < names.size(); ++i) {
      for (size_t j = 0; j < names.size(); ++j) {
        if (i == j) continue;
        const std::string where = absl::StrCat(f.key, "[", names[i], "][", names[j], "]");
        const v1::PeerStatus* b = FindPeer(before.at(names[i]), names[j]);
        const v1::PeerStatus* a = FindPeer(after.at(names[i]), names[j]);
        if (b == nullptr || a == nullptr) {
          bad.push_back(where + ": peer missing from GetStatus");
          continue;
        }
        const std::optional<double> vb = f.get(*b), va = f.get(*a);
        const json& cell = m[i][j];
        if (cell.is_null()) {
          if (vb.has_value() && va.has_value()) bad.push_back(where + ": null, daemon has a value");
          continue;
        }
        const double v = cell.get<double>();
        if (!vb.has_value() && !va.has_value()) {
          bad.push_back(absl::StrCat(where, ": ", v, ", daemon has no value"));
          continue;
        }
        const double lo = std::min(vb.value_or(*va), va.value_or(*vb));
        const double hi = std::max(vb.value_or(*va), va.value_or(*vb));
        const bool ok = (vb && Same(v, *vb)) || (va && Same(v, *va)) || (v >= lo && v <= hi);
        if (!ok) {
          bad.push_back(absl::StrCat(where, ": CLI ", v, ", daemon before ", lo, " after ", hi));
        }
      }
    }
  }
  return bad;
}

// Runs `health ARGS --json` between two GetStatus rounds until the figures
// are consistent (a figure may change twice during one round, e.g. p50
// moving and back); at most `attempts` rounds. Returns the consistent JSON.
json HealthConsistentWithDaemons(const LoopbackCluster& cluster,
                                 const std::vector<std::string>& args, int expect_exit,
                                 int attempts = 5) {
  std::vector<std::string> last_bad;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    const Snapshot before = ReadAll(cluster);
    std::vector<std::string> argv = {"health", "--json"};
    argv.insert(argv.end(), args.begin(), args.end());
    ProcessResult r = Cli(argv);
    const Snapshot after = ReadAll(cluster);
    EXPECT_EQ(r.exit_code, expect_exit) << Describe(r);
    json j = ParseJson(r.out);
    if (j.is_discarded()) {
      ADD_FAILURE() << "not JSON: " << r.out;
      return j;
    }
    if (before.size() != static_cast<size_t>(cluster.size()) ||
        after.size() != static_cast<size_t>(cluster.size())) {
      ADD_FAILURE() << "a daemon did not answer GetStatus";
      return j;
    }
    last_bad = CompareWithDaemons(j, before, after);
    if (last_bad.empty()) return j;
  }
  ADD_FAILURE() << "health JSON never matched the daemons' GetStatus in " << attempts
                << " rounds; last round:\n  " << absl::StrJoin(last_bad, "\n  ");
  return json();
}

// Asserts the healthy 3-node picture field by field.
void ExpectHealthyCluster(const LoopbackCluster& cluster, const json& j) {
  const std::vector<std::string> names = {"node-a", "node-b", "node-c"};
  EXPECT_EQ(j["schema"], "gloowatch.health.v1");
  EXPECT_EQ(j["verdict"], "healthy") << j.dump(2);
  EXPECT_EQ(j["exit_code"], 0);
  EXPECT_FALSE(j["generated_at"].get<std::string>().empty());
  ASSERT_EQ(j["node_names"], json(names));

  ASSERT_EQ(j["nodes"].size(), 3u);
  std::set<std::string> seen;
  for (const json& n : j["nodes"]) {
    const std::string name = n["name"];
    SCOPED_TRACE(name);
    seen.insert(name);
    const int index = name.back() - 'a';
    ASSERT_TRUE(index >= 0 && index < 3);
    auto own = GetStatus(cluster.grpc(index));
    ASSERT_TRUE(own.ok());
    EXPECT_EQ(n["address"], cluster.grpc(index));
    EXPECT_EQ(n["reachable"], true);
    EXPECT_EQ(n["error"], "");
    EXPECT_EQ(n["status"], "healthy");
    EXPECT_EQ(n["problems"], json::array());
    EXPECT_EQ(n["version"], own->version());
    EXPECT_EQ(n["gloo_version"], own->gloo_version());
    EXPECT_EQ(n["gloo_interface"], own->gloo().interface());
    EXPECT_EQ(n["gloo_address"], "127.0.0.1");
    // Defaults, as the daemon reports them.
    EXPECT_DOUBLE_EQ(n["thresholds"]["latency_seconds"].get<double>(),
                     own->thresholds().latency_seconds());
    EXPECT_DOUBLE_EQ(n["thresholds"]["latency_seconds"].get<double>(), 0.002);
    EXPECT_DOUBLE_EQ(n["thresholds"]["clock_offset_seconds"].get<double>(), 0.1);
    EXPECT_DOUBLE_EQ(n["thresholds"]["bandwidth_link_ratio"].get<double>(), 0.8);
    EXPECT_DOUBLE_EQ(n["thresholds"]["communication_share"].get<double>(), 0.3);
  }
  EXPECT_EQ(seen, std::set<std::string>(names.begin(), names.end()));

  const json& m = j["matrices"];
  for (int i = 0; i < 3; ++i) {
    for (int k = 0; k < 3; ++k) {
      SCOPED_TRACE(absl::StrCat(names[i], " -> ", names[k]));
      if (i == k) {
        for (const MatrixFigure& f : Figures()) EXPECT_TRUE(m[f.key][i][k].is_null()) << f.key;
        continue;
      }
      ASSERT_TRUE(m["latency_p50_ms"][i][k].is_number());
      ASSERT_TRUE(m["latency_p99_ms"][i][k].is_number());
      ASSERT_TRUE(m["tx_bytes_per_second"][i][k].is_number());
      ASSERT_TRUE(m["rx_bytes_per_second"][i][k].is_number());
      ASSERT_TRUE(m["clock_offset_ms"][i][k].is_number());
      const double p50 = m["latency_p50_ms"][i][k];
      EXPECT_GT(p50, 0);
      EXPECT_LT(p50, 2.0);  // below the threshold, or the verdict is wrong
      EXPECT_GE(m["latency_p99_ms"][i][k].get<double>(), p50);
      EXPECT_GT(m["tx_bytes_per_second"][i][k].get<double>(), 1e6);
      EXPECT_GT(m["rx_bytes_per_second"][i][k].get<double>(), 1e6);
      // One clock on loopback: the offset is ~0 (either sign), not > 0.
      EXPECT_LT(std::abs(m["clock_offset_ms"][i][k].get<double>()), 5.0);
      // Loopback has no link speed, so no ratio rather than a made-up one.
      EXPECT_TRUE(m["link_ratio"][i][k].is_null());
    }
  }

  ASSERT_EQ(j["links"].size(), 3u);
  std::set<std::pair<std::string, std::string>> pairs;
  for (const json& l : j["links"]) {
    const std::string a = l["a"], b = l["b"];
    SCOPED_TRACE(a + " <-> " + b);
    EXPECT_LT(a, b);
    pairs.insert({a, b});
    EXPECT_EQ(l["status"], "healthy");
    EXPECT_EQ(l["problems"], json::array());
    const int ia = a.back() - 'a', ib = b.back() - 'a';
    for (const auto& [key, row, col] :
         {std::make_tuple("a_to_b", ia, ib), std::make_tuple("b_to_a", ib, ia)}) {
      const json& v = l[key];
      ASSERT_TRUE(v.is_object()) << key;
      EXPECT_EQ(v["state"], "up");
      EXPECT_EQ(v["failures_in_window"], 0);
      EXPECT_GT(v["clock_error_ms"].get<double>(), 0);
      // Links and matrices come from the same answer.
      for (const MatrixFigure& f : Figures()) EXPECT_EQ(v[f.key], m[f.key][row][col]) << f.key;
    }
  }
  EXPECT_EQ(pairs.size(), 3u);
  EXPECT_EQ(j["training"], json::array());
}

// --- healthy cluster -------------------------------------------------------

class HealthyClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new LoopbackCluster(3, FastLoopbackYaml());
    for (int i = 0; i < 3; ++i) cluster_->Start(i);
    // First bandwidth transfers are serialised per node: allow for that.
    ready_ = cluster_->WaitAllUp(absl::Seconds(90), FullyMeasured).ok();
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override {
    ASSERT_TRUE(ready_) << "cluster never fully measured\n" << Logs(*cluster_);
  }
  std::vector<std::string> Daemons() const {
    return {cluster_->grpc(0), cluster_->grpc(1), cluster_->grpc(2)};
  }
  static LoopbackCluster* cluster_;
  static bool ready_;
};
LoopbackCluster* HealthyClusterTest::cluster_ = nullptr;
bool HealthyClusterTest::ready_ = false;

TEST_F(HealthyClusterTest, HealthDaemonsJsonMatchesEveryDaemonsOwnStatus) {
  json j = HealthConsistentWithDaemons(*cluster_, {"--daemons", Join(Daemons())}, 0);
  ASSERT_TRUE(j.is_object());
  ExpectHealthyCluster(*cluster_, j);

  // The table says the same.
  ProcessResult text = Cli({"health", "--daemons", Join(Daemons()), "--color", "never"});
  EXPECT_EQ(text.exit_code, 0) << Describe(text);
  EXPECT_THAT(text.out, HasSubstr("cluster: healthy (3 daemons asked, 3 nodes, 3 links)"));
  EXPECT_THAT(text.out, Not(HasSubstr("problem links")));
  EXPECT_THAT(text.out, Not(HasSubstr("\033[")));
}

TEST_F(HealthyClusterTest, HealthConfigAsksTheNodeAndItsPeers) {
  json j = HealthConsistentWithDaemons(*cluster_, {"--config", cluster_->config_path(0)}, 0);
  ASSERT_TRUE(j.is_object());
  ExpectHealthyCluster(*cluster_, j);
  // Asked in config order: grpc_listen first, then peers[].
  ASSERT_EQ(j["nodes"].size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(j["nodes"][i]["name"], cluster_->node(i).name);
    EXPECT_EQ(j["nodes"][i]["address"], cluster_->grpc(i));
  }
  // A node's own config from the other side of the mesh works the same.
  ProcessResult c = Cli({"health", "--config", cluster_->config_path(2)});
  EXPECT_EQ(c.exit_code, 0) << Describe(c);
  EXPECT_THAT(c.out, HasSubstr("cluster: healthy (3 daemons asked, 3 nodes, 3 links)"));
}

// --- a daemon goes away ----------------------------------------------------

class BrokenClusterTest : public ::testing::Test {
 protected:
  BrokenClusterTest() : cluster_(3, FastLoopbackYaml()) {}
  void SetUp() override {
    for (int i = 0; i < 3; ++i) cluster_.Start(i);
    absl::Status up = cluster_.WaitAllUp(absl::Seconds(60), LatencyMeasured);
    ASSERT_TRUE(up.ok()) << up << "\n" << Logs(cluster_);
  }
  std::vector<std::string> Daemons() const {
    return {cluster_.grpc(0), cluster_.grpc(1), cluster_.grpc(2)};
  }
  LoopbackCluster cluster_;
};

const json* NodeNamed(const json& j, const std::string& name) {
  for (const json& n : j["nodes"]) {
    if (n["name"] == name) return &n;
  }
  return nullptr;
}

const json* LinkBetween(const json& j, const std::string& a, const std::string& b) {
  for (const json& l : j["links"]) {
    if (l["a"] == a && l["b"] == b) return &l;
  }
  return nullptr;
}

bool DownWithReason(const json* link, const char* side) {
  return link != nullptr && (*link)[side].is_object() && (*link)[side]["state"] == "down" &&
         !(*link)[side]["last_failure"].get<std::string>().empty();
}

TEST_F(BrokenClusterTest, KilledDaemonIsUnreachableAndItsLinksDown) {
  cluster_.Kill(2, SIGKILL);
  ASSERT_FALSE(cluster_.process(2)->running());

  const absl::Duration deadline = absl::Seconds(2);
  const absl::Time start = absl::Now();
  ProcessResult r = Cli({"health", "--json", "--deadline", "2s", "--daemons", Join(Daemons())});
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  EXPECT_LT(took, deadline + absl::Seconds(1));
  json j = ParseJson(r.out);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["verdict"], "failed");
  EXPECT_EQ(j["exit_code"], 2);
  // The dead daemon is named after the peer the others know at its address,
  // not listed a second time as "host:port".
  EXPECT_EQ(j["node_names"], json({"node-a", "node-b", "node-c"}));
  const json* c = NodeNamed(j, "node-c");
  ASSERT_NE(c, nullptr) << j["nodes"].dump(2);
  EXPECT_EQ((*c)["address"], cluster_.grpc(2));
  EXPECT_EQ((*c)["reachable"], false);
  EXPECT_EQ((*c)["status"], "failed");
  const std::string error = (*c)["error"];
  EXPECT_THAT(error, HasSubstr("UNAVAILABLE"));  // refused: nothing listens any more
  EXPECT_THAT((*c)["problems"],
              Contains(absl::StrCat("unreachable at ", cluster_.grpc(2), ": ", error)));
  EXPECT_FALSE(c->contains("version"));  // only when reachable
  for (const std::string name : {"node-a", "node-b"}) {
    const json* n = NodeNamed(j, name);
    ASSERT_NE(n, nullptr);
    EXPECT_EQ((*n)["reachable"], true);
  }

  // The survivors notice within the Gloo timeout (2 s) plus a probe; poll
  // the CLI until both report their link to node-c down.
  json down;
  const bool noticed = WaitFor(
      [&] {
        ProcessResult x =
            Cli({"health", "--json", "--deadline", "2s", "--daemons", Join(Daemons())});
        down = ParseJson(x.out);
        return x.exit_code == 2 && !down.is_discarded() &&
               DownWithReason(LinkBetween(down, "node-a", "node-c"), "a_to_b") &&
               DownWithReason(LinkBetween(down, "node-b", "node-c"), "a_to_b");
      },
      absl::Seconds(20));
  ASSERT_TRUE(noticed) << down.dump(2) << Logs(cluster_);
  for (const std::string from : {"node-a", "node-b"}) {
    SCOPED_TRACE(from);
    const json& l = *LinkBetween(down, from, "node-c");
    EXPECT_EQ(l["status"], "failed");
    const std::string reason = l["a_to_b"]["last_failure"];
    EXPECT_THAT(l["problems"], Contains(absl::StrCat(from, "->node-c: down (", reason, ")")));
    // node-c's own view is unknown, and that is not called one-sided.
    EXPECT_TRUE(l["b_to_a"].is_null());
    for (const json& p : l["problems"])
      EXPECT_THAT(p.get<std::string>(), Not(HasSubstr("one-sided")));
  }
  const json* ab = LinkBetween(down, "node-a", "node-b");
  ASSERT_NE(ab, nullptr);
  EXPECT_EQ((*ab)["status"], "healthy") << ab->dump(2);
  // node-c's row is empty: nobody to ask.
  for (const json& cell : down["matrices"]["latency_p50_ms"][2]) EXPECT_TRUE(cell.is_null());

  // The table: UNREACHABLE row, the failed links, exit 2.
  ProcessResult text = Cli({"health", "--deadline", "2s", "--daemons", Join(Daemons())});
  EXPECT_EQ(text.exit_code, 2) << Describe(text);
  EXPECT_THAT(text.out, HasSubstr("cluster: failed"));
  EXPECT_THAT(text.out, HasSubstr("UNREACHABLE"));
  EXPECT_THAT(text.out, HasSubstr("node-a <-> node-c"));
  EXPECT_THAT(text.out, HasSubstr("node-b <-> node-c"));
}

TEST_F(BrokenClusterTest, HungDaemonTimesOutWithinTheDeadline) {
  // SIGSTOP: the kernel still accepts connections, nobody answers.
  cluster_.process(1)->Signal(SIGSTOP);
  const absl::Time start = absl::Now();
  ProcessResult r = Cli({"health", "--json", "--deadline", "2s", "--daemons", Join(Daemons())});
  const absl::Duration took = absl::Now() - start;
  cluster_.process(1)->Signal(SIGCONT);
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  // All daemons are asked in parallel: about one deadline, not three.
  EXPECT_GE(took, absl::Seconds(2));
  EXPECT_LT(took, absl::Seconds(3));
  json j = ParseJson(r.out);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  const json* b = NodeNamed(j, "node-b");
  ASSERT_NE(b, nullptr) << j["nodes"].dump(2);
  EXPECT_EQ((*b)["reachable"], false);
  EXPECT_EQ((*b)["error"], "timeout: no answer within 2s");
  EXPECT_EQ(NodeNamed(j, "node-a")->at("reachable"), true);
  EXPECT_EQ(NodeNamed(j, "node-c")->at("reachable"), true);
}

// --- degraded: latency over a (silly) threshold ----------------------------

TEST(DegradedClusterTest, LatencyOverThresholdNamesEveryOffendingLink) {
  LoopbackCluster cluster(3, absl::StrCat(FastLoopbackYaml(), "thresholds:\n  latency: 1us\n"));
  for (int i = 0; i < 3; ++i) cluster.Start(i);
  absl::Status up = cluster.WaitAllUp(absl::Seconds(60), LatencyMeasured);
  ASSERT_TRUE(up.ok()) << up << "\n" << Logs(cluster);
  const std::string daemons = Join({cluster.grpc(0), cluster.grpc(1), cluster.grpc(2)});
  ProcessResult r = Cli({"health", "--json", "--daemons", daemons});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  json j = ParseJson(r.out);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["verdict"], "degraded");
  EXPECT_EQ(j["exit_code"], 1);
  for (const json& n : j["nodes"]) {
    EXPECT_EQ(n["reachable"], true);
    EXPECT_DOUBLE_EQ(n["thresholds"]["latency_seconds"].get<double>(), 1e-6);
    // Link problems are not node problems.
    EXPECT_EQ(n["status"], "healthy") << n.dump(2);
  }
  ASSERT_EQ(j["links"].size(), 3u);
  for (const json& l : j["links"]) {
    const std::string a = l["a"], b = l["b"];
    SCOPED_TRACE(a + " <-> " + b);
    EXPECT_EQ(l["status"], "degraded");
    // Both directions are named, with the value and the threshold.
    for (const auto& [from, to] : {std::make_pair(a, b), std::make_pair(b, a)}) {
      const std::string prefix = absl::StrCat(from, "->", to, ": latency p50 ");
      bool named = false;
      for (const json& p : l["problems"]) {
        const std::string s = p;
        if (absl::StartsWith(s, prefix) && absl::EndsWith(s, " ms >= 0.001 ms")) named = true;
      }
      EXPECT_TRUE(named) << prefix << " not in " << l["problems"].dump();
    }
  }
  ProcessResult text = Cli({"health", "--daemons", daemons});
  EXPECT_EQ(text.exit_code, 1) << Describe(text);
  EXPECT_THAT(text.out, HasSubstr("cluster: degraded"));
  EXPECT_THAT(text.out, HasSubstr("problem links (worst first)"));
  for (const char* link : {"node-a <-> node-b", "node-a <-> node-c", "node-b <-> node-c"}) {
    EXPECT_THAT(text.out, HasSubstr(link));
  }
  EXPECT_THAT(text.out, HasSubstr("node-a->node-b: latency p50 "));
}

// --- report-step -----------------------------------------------------------

std::optional<double> Training(const std::map<std::string, double>& metrics, const char* name,
                               const std::string& node, const std::string& job, int rank) {
  return FindMetric(metrics, name,
                    {{"node", node}, {"training_job", job}, {"rank", std::to_string(rank)}});
}

std::map<std::string, double> Scrape(const LoopbackCluster& cluster, int index) {
  auto body = HttpGet(cluster.node(index).metrics_port, "/metrics");
  EXPECT_TRUE(body.ok()) << body.status();
  return body.ok() ? ParseMetrics(*body) : std::map<std::string, double>{};
}

const v1::TrainingJobStatus* FindJob(const v1::NodeStatus& s, const std::string& job, int rank) {
  for (const auto& t : s.training()) {
    if (t.job() == job && t.rank() == rank) return &t;
  }
  return nullptr;
}

const json* FindTraining(const json& j, const std::string& job, int rank) {
  for (const json& t : j["training"]) {
    if (t["job"] == job && t["rank"] == rank) return &t;
  }
  return nullptr;
}

class ReportStepTest : public ::testing::Test {
 protected:
  ReportStepTest() : cluster_(1) {}
  void SetUp() override {
    cluster_.Start(0);
    ASSERT_TRUE(WaitFor([&] { return GetStatus(cluster_.grpc(0)).ok(); }, absl::Seconds(30)))
        << Logs(cluster_);
  }
  ProcessResult Report(const std::string& job, int rank, int step, const std::string& step_s,
                       const std::string& comm_s) {
    return Cli({"report-step", "--daemon", cluster_.grpc(0), "--job", job, "--rank",
                std::to_string(rank), "--step", std::to_string(step), "--step-seconds", step_s,
                "--comm-seconds", comm_s});
  }
  LoopbackCluster cluster_;
};

TEST_F(ReportStepTest, TotalsInMetricsStatusAndHealth) {
  const std::string node = cluster_.node(0).name;
  ProcessResult h0 = Cli({"health", "--json", "--daemons", cluster_.grpc(0)});
  EXPECT_EQ(h0.exit_code, 0) << Describe(h0);
  EXPECT_EQ(ParseJson(h0.out)["training"], json::array());

  for (int step = 1; step <= 2; ++step) {
    ProcessResult r = Report("J", 0, step, "2", "0.5");
    EXPECT_EQ(r.exit_code, 0) << Describe(r);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "");
  }
  auto expect_j0 = [&] {
    const auto m = Scrape(cluster_, 0);
    EXPECT_EQ(Training(m, "gloowatch_training_step_seconds_total", node, "J", 0), 4.0);
    EXPECT_EQ(Training(m, "gloowatch_training_communication_seconds_total", node, "J", 0), 1.0);
    EXPECT_EQ(Training(m, "gloowatch_training_steps_total", node, "J", 0), 2.0);
    auto s = GetStatus(cluster_.grpc(0));
    ASSERT_TRUE(s.ok());
    const v1::TrainingJobStatus* t = FindJob(*s, "J", 0);
    ASSERT_NE(t, nullptr) << s->ShortDebugString();
    EXPECT_EQ(t->steps(), 2u);
    EXPECT_DOUBLE_EQ(t->step_seconds_total(), 4.0);
    EXPECT_DOUBLE_EQ(t->communication_seconds_total(), 1.0);
    ASSERT_TRUE(t->has_communication_share());
    EXPECT_DOUBLE_EQ(t->communication_share(), 0.25);
    EXPECT_EQ(s->training_size(), 1);
  };
  {
    SCOPED_TRACE("after two good reports");
    expect_j0();
  }

  // 0.25 <= 0.3: shown, not flagged.
  ProcessResult h1 = Cli({"health", "--json", "--daemons", cluster_.grpc(0)});
  EXPECT_EQ(h1.exit_code, 0) << Describe(h1);
  json j1 = ParseJson(h1.out);
  ASSERT_FALSE(j1.is_discarded()) << h1.out;
  EXPECT_EQ(j1["verdict"], "healthy");
  const json* t1 = FindTraining(j1, "J", 0);
  ASSERT_NE(t1, nullptr) << j1["training"].dump();
  EXPECT_EQ((*t1)["node"], node);
  EXPECT_EQ((*t1)["steps"], 2);
  EXPECT_DOUBLE_EQ((*t1)["step_seconds_total"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ((*t1)["communication_seconds_total"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ((*t1)["communication_share"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ((*t1)["threshold"].get<double>(), 0.3);
  EXPECT_EQ((*t1)["over_threshold"], false);

  // Rejected reports: non-zero exit, a message that says what is wrong, and
  // nothing recorded.
  struct Bad {
    std::string job, step_s, comm_s;
    int exit_code;
    std::string message;
  };
  const std::vector<Bad> bad = {
      {"J", "2", "3", 65, "INVALID_ARGUMENT: communication_seconds: 3 > step_seconds 2"},
      {"J", "2", "-0.5", 65, "INVALID_ARGUMENT: communication_seconds: -0.5 < 0"},
      {"J", "-2", "0.5", 65, "INVALID_ARGUMENT: step_seconds: -2 not in (0, 86400]"},
      {"J", "0", "0", 65, "INVALID_ARGUMENT: step_seconds: 0 not in (0, 86400]"},
      {"a b", "2", "0.5", 65, "INVALID_ARGUMENT: job: character 0x20 not allowed"},
      {"", "2", "0.5", 64, "report-step needs --job"},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(absl::StrCat("job '", b.job, "' step ", b.step_s, " comm ", b.comm_s));
    ProcessResult r = Report(b.job, 0, 3, b.step_s, b.comm_s);
    EXPECT_EQ(r.exit_code, b.exit_code) << Describe(r);
    EXPECT_THAT(r.err, HasSubstr(b.message));
  }
  {
    ProcessResult r = Cli({"report-step", "--daemon", cluster_.grpc(0), "--job", "J", "--rank", "0",
                           "--step", "3", "--step-seconds", "2"});
    EXPECT_EQ(r.exit_code, 64) << Describe(r);
    EXPECT_THAT(r.err, HasSubstr("report-step needs --comm-seconds"));
  }
  {
    // Nothing listens: unavailable, 69.
    ProcessResult r =
        Cli({"report-step", "--daemon", absl::StrCat("127.0.0.1:", FreePort()), "--job", "J",
             "--rank", "0", "--step", "3", "--step-seconds", "2", "--comm-seconds", "0.5"});
    EXPECT_EQ(r.exit_code, 69) << Describe(r);
    EXPECT_THAT(r.err, HasSubstr("UNAVAILABLE"));
  }
  {
    SCOPED_TRACE("after the rejected reports");
    expect_j0();
    EXPECT_EQ(FindMetric(Scrape(cluster_, 0), "gloowatch_training_steps_total",
                         {{"training_job", "a b"}}),
              std::nullopt);
  }

  // Rank 1 spends half its step communicating: over 0.3, a job signal shown
  // on the job; the node and the cluster stay healthy, exit 0 (docs/client.md,
  // "Now, history and jobs").
  ProcessResult r1 = Report("J", 1, 1, "2", "1");
  EXPECT_EQ(r1.exit_code, 0) << Describe(r1);
  ProcessResult h2 = Cli({"health", "--json", "--daemons", cluster_.grpc(0)});
  EXPECT_EQ(h2.exit_code, 0) << Describe(h2);
  json j2 = ParseJson(h2.out);
  ASSERT_FALSE(j2.is_discarded()) << h2.out;
  EXPECT_EQ(j2["verdict"], "healthy");
  EXPECT_EQ(j2["exit_code"], 0);
  ASSERT_EQ(j2["nodes"].size(), 1u);
  EXPECT_EQ(j2["nodes"][0]["status"], "healthy");
  EXPECT_EQ(j2["nodes"][0]["problems"], json::array());
  const json* t2 = FindTraining(j2, "J", 1);
  ASSERT_NE(t2, nullptr);
  EXPECT_DOUBLE_EQ((*t2)["communication_share"].get<double>(), 0.5);
  EXPECT_EQ((*t2)["over_threshold"], true);
  EXPECT_EQ(FindTraining(j2, "J", 0)->at("over_threshold"), false);
  const auto m = Scrape(cluster_, 0);
  EXPECT_EQ(Training(m, "gloowatch_training_step_seconds_total", node, "J", 1), 2.0);
  EXPECT_EQ(Training(m, "gloowatch_training_communication_seconds_total", node, "J", 1), 1.0);
  EXPECT_EQ(Training(m, "gloowatch_training_steps_total", node, "J", 1), 1.0);

  ProcessResult text = Cli({"health", "--daemons", cluster_.grpc(0)});
  EXPECT_EQ(text.exit_code, 0) << Describe(text);
  EXPECT_THAT(text.out, HasSubstr("training jobs"));
  EXPECT_THAT(text.out, HasSubstr("50.0% > 30%"));
  EXPECT_THAT(text.out, HasSubstr("25.0%"));
}

// --- a real torch.distributed job reporting through StepReporter -----------

TEST(TorchJobTest, DaemonTotalsMatchTheJobsOwnTiming) {
  ProcessResult probe = RunProcess(
      {PythonPath(), "-c", "import torch.distributed as d, grpc; assert d.is_gloo_available()"},
      std::nullopt, "", absl::Seconds(120));
  if (probe.exit_code != 0) {
    GTEST_SKIP() << PythonPath() << " lacks torch with gloo or grpc: " << probe.err;
  }
  LoopbackCluster cluster(1);
  cluster.Start(0);
  ASSERT_TRUE(WaitFor([&] { return GetStatus(cluster.grpc(0)).ok(); }, absl::Seconds(30)))
      << Logs(cluster);

  const std::string job = "torch-e2e";
  const int kSteps = 30;
  const auto env = Environment({{"MASTER_ADDR", "127.0.0.1"},
                                {"MASTER_PORT", std::to_string(FreePort())},
                                {"PYTHONUNBUFFERED", "1"}});
  const std::string script = SourceDir() + "/tests/client/torch/e2e_train.py";
  auto run = [&](int rank) {
    return RunProcess({PythonPath(), script, "--daemon", cluster.grpc(0), "--job", job, "--rank",
                       std::to_string(rank), "--world", "2", "--steps", std::to_string(kSteps)},
                      env, "", absl::Seconds(240));
  };
  auto rank1 = std::async(std::launch::async, run, 1);
  ProcessResult results[2] = {run(0), rank1.get()};

  const std::string node = cluster.node(0).name;
  const auto metrics = Scrape(cluster, 0);
  auto status = GetStatus(cluster.grpc(0));
  ASSERT_TRUE(status.ok());
  for (int rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE(absl::StrCat("rank ", rank));
    const ProcessResult& r = results[rank];
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    // The last stdout line: the job's own totals.
    std::vector<std::string> lines = absl::StrSplit(r.out, '\n', absl::SkipEmpty());
    ASSERT_FALSE(lines.empty()) << Describe(r);
    json own = ParseJson(lines.back());
    ASSERT_FALSE(own.is_discarded()) << Describe(r);
    EXPECT_EQ(own["rank"], rank);
    EXPECT_EQ(own["steps"], kSteps);
    EXPECT_EQ(own["errors"], 0);
    const double own_step = own["step_seconds_total"], own_comm = own["comm_seconds_total"];
    const double own_share = own["communication_share"];
    // Real work on both sides: the all_reduce takes noticeable time.
    EXPECT_GT(own_comm, 0.01);
    EXPECT_GT(own_step, own_comm);
    EXPECT_NEAR(own_share, own_comm / own_step, 1e-9);

    const auto d_step = Training(metrics, "gloowatch_training_step_seconds_total", node, job, rank);
    const auto d_comm =
        Training(metrics, "gloowatch_training_communication_seconds_total", node, job, rank);
    const auto d_steps = Training(metrics, "gloowatch_training_steps_total", node, job, rank);
    ASSERT_TRUE(d_step && d_comm && d_steps) << "no series for rank " << rank;
    EXPECT_EQ(*d_steps, kSteps);
    EXPECT_NEAR(*d_step, own_step, 0.01 * own_step);
    EXPECT_NEAR(*d_comm, own_comm, 0.01 * own_comm);
    const double d_share = *d_comm / *d_step;
    EXPECT_NEAR(d_share, own_share, 0.05 * own_share);

    // NodeStatus.training: same totals, and the windowed share (every step
    // is within the 5 min window) is the job's own share too.
    const v1::TrainingJobStatus* t = FindJob(*status, job, rank);
    ASSERT_NE(t, nullptr) << status->ShortDebugString();
    EXPECT_EQ(t->steps(), static_cast<uint64_t>(kSteps));
    EXPECT_NEAR(t->step_seconds_total(), own_step, 0.01 * own_step);
    EXPECT_NEAR(t->communication_seconds_total(), own_comm, 0.01 * own_comm);
    ASSERT_TRUE(t->has_communication_share());
    EXPECT_NEAR(t->communication_share(), own_share, 0.05 * own_share);
  }

  // health shows both ranks; its exit code follows the shares (> 0.3 flags).
  ProcessResult h = Cli({"health", "--json", "--daemons", cluster.grpc(0)});
  json j = ParseJson(h.out);
  ASSERT_FALSE(j.is_discarded()) << Describe(h);
  bool any_over = false;
  for (int rank = 0; rank < 2; ++rank) {
    const json* t = FindTraining(j, job, rank);
    ASSERT_NE(t, nullptr) << j["training"].dump();
    const v1::TrainingJobStatus* own = FindJob(*status, job, rank);
    ASSERT_NE(own, nullptr);
    EXPECT_DOUBLE_EQ((*t)["communication_share"].get<double>(), own->communication_share());
    EXPECT_EQ((*t)["over_threshold"], own->communication_share() > 0.3);
    any_over |= own->communication_share() > 0.3;
  }
  EXPECT_EQ(h.exit_code, any_over ? 1 : 0) << Describe(h);
}

}  // namespace
}  // namespace gloowatch::testing
