// node-check as node-problem-detector runs it: the shipped custom-plugin
// config (deploy/kubernetes/node-problem-detector/gloowatch-monitor.json)
// names a command that follows NPD's plugin contract -- exit 0 OK, 1 NonOK,
// anything else Unknown; one line on stdout, within max_output_length. NPD
// is not in Debian, so the contract is tested here; the OK and NonOK lines
// against real daemons are netns_slurm_act's.
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/free_port.h"
#include "tests/support/paths.h"
#include "tests/support/subprocess.h"

namespace gloowatch::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

nlohmann::json MonitorConfig() {
  std::ifstream in(SourcePath("deploy/kubernetes/node-problem-detector/gloowatch-monitor.json"));
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
}

TEST(NpdContract, ShippedConfigDeclaresTheConditionAndACommandThatParses) {
  const nlohmann::json j = MonitorConfig();
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["plugin"], "custom");
  ASSERT_EQ(j["conditions"].size(), 1u);
  EXPECT_EQ(j["conditions"][0]["type"], "GlooLinksProblem");
  ASSERT_EQ(j["rules"].size(), 1u);
  const nlohmann::json& rule = j["rules"][0];
  EXPECT_EQ(rule["type"], "permanent");
  EXPECT_EQ(rule["condition"], "GlooLinksProblem");
  EXPECT_EQ(rule["path"], "/usr/bin/gloowatch");
  // The message is never cut by NPD: node-check's line is at most 200 bytes.
  EXPECT_GE(j["pluginConfig"]["max_output_length"].get<int>(), 200);
  // Each call of node-check ends within its deadlines, well inside the
  // rule's timeout, which is inside the plugin's.
  auto seconds = [](const nlohmann::json& v) {
    std::string s = v.get<std::string>();
    return std::stod(s.substr(0, s.size() - 1));
  };
  EXPECT_LT(seconds(rule["timeout"]), seconds(j["pluginConfig"]["timeout"]));
  EXPECT_LT(seconds(rule["timeout"]), seconds(j["pluginConfig"]["invoke_interval"]));
  // Its arguments are node-check's own (--help exits 0 only for known
  // flags... so run them for real with the config swapped for a daemon
  // that does not answer, below).
  std::vector<std::string> args = rule["args"].get<std::vector<std::string>>();
  ASSERT_GE(args.size(), 3u);
  EXPECT_EQ(args[0], "node-check");
}

// Runs the shipped rule with its --config replaced by --daemons at a port
// nothing listens on.
ProcessResult RunRule(const std::string& format) {
  std::vector<std::string> argv = {CliPath()};
  const nlohmann::json j = MonitorConfig();
  std::vector<std::string> args = j["rules"][0]["args"].get<std::vector<std::string>>();
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--config") {
      argv.push_back("--daemons");
      argv.push_back(absl::StrCat("127.0.0.1:", FreePort()));
      ++i;
    } else if (args[i] == "--format" && i + 1 < args.size()) {
      argv.push_back("--format");
      argv.push_back(format);
      ++i;
    } else {
      argv.push_back(args[i]);
    }
  }
  argv.push_back("--node");
  argv.push_back("gpu-17");
  return RunProcess(argv, std::nullopt, "", absl::Seconds(30));
}

TEST(NpdContract, NoDaemonAnsweringIsUnknownInOneLine) {
  ProcessResult r = RunRule("npd");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  std::vector<std::string> lines = absl::StrSplit(r.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 1u) << r.out;
  EXPECT_THAT(lines[0], StartsWith("gloowatch: gpu-17: cannot judge"));
  EXPECT_LE(lines[0].size(), 200u);
}

TEST(NpdContract, SlurmFormatNeverFailsANodeItCannotJudge) {
  // A health check that cannot judge must not drain the node (NHC and
  // HealthCheckProgram drain on any non-zero exit).
  ProcessResult r = RunRule("slurm");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("cannot judge"));
}

TEST(NpdContract, UsageErrorsAreNeitherOkNorNonOk) {
  ProcessResult r =
      RunProcess({CliPath(), "node-check", "--format", "nagios", "--daemons", "127.0.0.1:1"},
                 std::nullopt, "", absl::Seconds(30));
  EXPECT_EQ(r.exit_code, 64);
  EXPECT_THAT(r.err, HasSubstr("--format must be slurm or npd"));
  r = RunProcess({CliPath(), "node-check", "--max-drained", "x", "--daemons", "127.0.0.1:1"},
                 std::nullopt, "", absl::Seconds(30));
  EXPECT_EQ(r.exit_code, 64);
  r = RunProcess({CliPath(), "act", "--daemons", "127.0.0.1:1"}, std::nullopt, "",
                 absl::Seconds(30));
  EXPECT_EQ(r.exit_code, 64);
  EXPECT_THAT(r.err, HasSubstr("act needs --slurm"));
}

}  // namespace
}  // namespace gloowatch::testing
