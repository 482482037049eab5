// Runs the gloowatch binary as a subprocess: exit codes, messages, JSON.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/client/subprocess.h"

namespace gloowatch::testing {
namespace {

using ::testing::HasSubstr;

ProcessResult Cli(std::vector<std::string> args, const std::string& in = "",
                  std::optional<std::map<std::string, std::string>> env = std::nullopt) {
  args.insert(args.begin(), CliPath());
  return RunProcess(args, env, in, absl::Seconds(30));
}

std::string Fixture() { return SourceDir() + "/tests/client/fixtures/mixed_failures.log"; }

TEST(ExplainLogCli, FixtureTable) {
  ProcessResult r = Cli({"explain-log", Fixture()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("7 known signatures in 15 lines"));
  EXPECT_THAT(r.out, HasSubstr("collective_timeout"));
  EXPECT_THAT(r.out, HasSubstr("fix:"));
}

TEST(ExplainLogCli, JsonFromStdin) {
  std::string log = "x\nRuntimeError: [a.cc:1] Timed out waiting 5ms for send operation to complete\n";
  ProcessResult r = Cli({"explain-log", "--json", "-"}, log);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["source"], "-");
  EXPECT_EQ(j["lines"], 2);
  ASSERT_EQ(j["signatures"].size(), 1u);
  EXPECT_EQ(j["signatures"][0]["id"], "collective_timeout");
  EXPECT_EQ(j["signatures"][0]["first_line"], 2);
}

TEST(ExplainLogCli, EmptyFile) {
  ProcessResult r = Cli({"explain-log", "/dev/null"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("no known signatures"));
}

TEST(ExplainLogCli, BinaryFile) {
  ProcessResult r = Cli({"explain-log", CliPath()});  // the ELF binary itself
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(ExplainLogCli, MissingFileNamesIt) {
  ProcessResult r = Cli({"explain-log", "/nonexistent/gloo.log"});
  EXPECT_EQ(r.exit_code, 66);
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/gloo.log"));
  EXPECT_THAT(r.err, HasSubstr("No such file"));
}

TEST(Cli, UsageErrors) {
  EXPECT_EQ(Cli({}).exit_code, 64);
  EXPECT_EQ(Cli({"frobnicate"}).exit_code, 64);
  ProcessResult r = Cli({"explain-log", "--no-such-flag", "x"});
  EXPECT_EQ(r.exit_code, 64);
  EXPECT_THAT(r.err, HasSubstr("--no-such-flag"));
  EXPECT_EQ(Cli({"explain-log"}).exit_code, 64);
  EXPECT_EQ(Cli({"help"}).exit_code, 0);
}

}  // namespace
}  // namespace gloowatch::testing
