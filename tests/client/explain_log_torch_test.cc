// Provokes real torch.distributed Gloo failures (tests/client/torch/
// gloo_failure.py, two ranks on 127.0.0.1) and checks that explain-log names
// the cause from the surviving rank's stderr.
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <future>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/free_port.h"
#include "tests/support/subprocess.h"

extern char** environ;

namespace gloowatch::testing {
namespace {

std::map<std::string, std::string> Env(const std::map<std::string, std::string>& extra) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string s = *e;
    auto eq = s.find('=');
    if (eq != std::string::npos) env[s.substr(0, eq)] = s.substr(eq + 1);
  }
  for (auto it = env.begin(); it != env.end();) {
    it = it->first.rfind("GLOO_", 0) == 0 ? env.erase(it) : std::next(it);
  }
  for (const auto& [k, v] : extra) env[k] = v;
  return env;
}

class TorchGlooFailure : public ::testing::Test {
 protected:
  void SetUp() override {
    ProcessResult probe = RunProcess({PythonPath(), "-c",
                                      "import torch.distributed as d; "
                                      "assert d.is_gloo_available()"},
                                     std::nullopt, "", absl::Seconds(60));
    if (probe.exit_code != 0)
      GTEST_SKIP() << PythonPath() << " has no torch with gloo: " << probe.err;
  }

  // Runs both ranks of `scenario`; returns rank 0's stderr.
  std::string RunScenario(const std::string& scenario,
                          std::map<std::string, std::string> extra_env = {}, bool fails = true) {
    extra_env["MASTER_ADDR"] = "127.0.0.1";
    extra_env["MASTER_PORT"] = std::to_string(FreePort());
    const auto env = Env(extra_env);
    const std::string script = SourceDir() + "/tests/client/torch/gloo_failure.py";
    auto run = [&](int rank) {
      return RunProcess({PythonPath(), script, scenario, std::to_string(rank), "2"}, env, "",
                        absl::Seconds(90));
    };
    auto rank1 = std::async(std::launch::async, run, 1);
    ProcessResult r0 = run(0);
    ProcessResult r1 = rank1.get();
    EXPECT_FALSE(r0.timed_out) << r0.err;
    EXPECT_FALSE(r1.timed_out) << r1.err;
    if (fails) {
      EXPECT_NE(r0.exit_code, 0) << "rank 0 should fail; stderr: " << r0.err;
    } else {
      EXPECT_EQ(r0.exit_code, 0) << r0.err;
      EXPECT_EQ(r1.exit_code, 0) << r1.err;
    }
    return r0.err;
  }

  // expected_exit -1: no error (0 or 1).
  nlohmann::json Explain(const std::string& log, int expected_exit = 2) {
    char path[] = "/tmp/gloowatch_torch_log_XXXXXX";
    int fd = mkstemp(path);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(write(fd, log.data(), log.size()), static_cast<ssize_t>(log.size()));
    close(fd);
    ProcessResult r =
        RunProcess({CliPath(), "explain-log", "--json", path}, std::nullopt, "", absl::Seconds(30));
    unlink(path);
    if (expected_exit >= 0) {
      EXPECT_EQ(r.exit_code, expected_exit) << r.err;
    } else {
      EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.exit_code << r.err;
    }
    return nlohmann::json::parse(r.out);
  }

  static std::vector<std::string> Ids(const nlohmann::json& j) {
    std::vector<std::string> ids;
    for (const auto& s : j["signatures"]) ids.push_back(s["id"]);
    return ids;
  }
};

using ::testing::AnyOf;
using ::testing::Contains;
using ::testing::HasSubstr;

TEST_F(TorchGlooFailure, PeerKilledMidAllReduce) {
  std::string log = RunScenario("peer_killed");
  // Which one depends on timing: EOF (closed) or RST (reset) on the pair.
  EXPECT_THAT(log,
              AnyOf(HasSubstr("Connection closed by peer"), HasSubstr("Connection reset by peer")));
  nlohmann::json j = Explain(log);
  EXPECT_THAT(Ids(j), AnyOf(Contains("peer_connection_closed"), Contains("peer_connection_reset")))
      << log;
}

TEST_F(TorchGlooFailure, CollectiveTimeout) {
  std::string log = RunScenario("collective_timeout");
  EXPECT_THAT(log, HasSubstr("Timed out waiting 3000ms for recv operation to complete"));
  nlohmann::json j = Explain(log);
  EXPECT_THAT(Ids(j), Contains("collective_timeout")) << log;
  EXPECT_EQ(j["root_cause"]["id"], "collective_timeout") << log;
  EXPECT_EQ(j["root_cause"]["detail"], "a recv waited 3000 ms, the timeout in force");
}

TEST_F(TorchGlooFailure, BadSocketIfname) {
  std::string log = RunScenario("bad_ifname", {{"GLOO_SOCKET_IFNAME", "doesnotexist0"}});
  EXPECT_THAT(log, HasSubstr("Unable to find address for: doesnotexist0"));
  nlohmann::json j = Explain(log);
  EXPECT_THAT(Ids(j), Contains("bad_interface")) << log;
  EXPECT_EQ(j["root_cause"]["id"], "bad_interface") << log;
  EXPECT_EQ(j["root_cause"]["detail"], "interface doesnotexist0") << log;
}

// A run that works prints, at most, warnings (the loopback fallback when the
// host name resolves to 127.0.1.1, store connect retries): never an error.
TEST_F(TorchGlooFailure, HealthyRunHasNoError) {
  std::string log = RunScenario("healthy", {}, /*fails=*/false);
  nlohmann::json j = Explain(log, -1);
  EXPECT_TRUE(j["root_cause"].is_null()) << log;
  EXPECT_NE(j["severity"], "error") << log;
}

}  // namespace
}  // namespace gloowatch::testing
