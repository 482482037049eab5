// Runs the gloowatch binary as a subprocess: exit codes, messages, JSON.
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/chromium.h"
#include "tests/support/free_port.h"
#include "tests/support/subprocess.h"
#include "tests/support/temp_dir.h"

extern char** environ;

namespace gloowatch::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The test's environment, without a default daemon config (a machine with
// /etc/gloowatch/gloowatchd.yaml would otherwise change what commands ask).
std::map<std::string, std::string> TestEnvironment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const size_t eq = entry.find('=');
    if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  env["GLOOWATCH_CONFIG"] = "";
  env.erase("SLURM_JOB_NODELIST");
  return env;
}

ProcessResult Cli(std::vector<std::string> args, const std::string& in = "",
                  std::optional<std::map<std::string, std::string>> env = std::nullopt) {
  args.insert(args.begin(), CliPath());
  if (!env) env = TestEnvironment();
  return RunProcess(args, env, in, absl::Seconds(30));
}

std::string ThisHost() {
  char name[256] = {0};
  gethostname(name, sizeof(name) - 1);
  return name;
}

std::string Fixture() { return SourceDir() + "/tests/client/fixtures/mixed_failures.log"; }

TEST(ExplainLogCli, FixtureTable) {
  ProcessResult r = Cli({"explain-log", Fixture()});
  EXPECT_EQ(r.exit_code, 2) << r.err;  // errors found
  EXPECT_THAT(r.out, HasSubstr("root cause: bad_interface_nccl_syntax (line 10)"));
  EXPECT_THAT(r.out, HasSubstr("7 known signatures in 15 lines"));
  EXPECT_THAT(r.out, HasSubstr("collective_timeout"));
  EXPECT_THAT(r.out, HasSubstr("fix:"));
}

TEST(ExplainLogCli, JsonFromStdin) {
  std::string log =
      "x\nRuntimeError: [a.cc:1] Timed out waiting 5ms for send operation to complete\n";
  ProcessResult r = Cli({"explain-log", "--json", "-"}, log);
  ASSERT_EQ(r.exit_code, 2) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["source"], "-");
  EXPECT_EQ(j["lines"], 2);
  ASSERT_EQ(j["signatures"].size(), 1u);
  EXPECT_EQ(j["signatures"][0]["id"], "collective_timeout");
  EXPECT_EQ(j["signatures"][0]["first_line"], 2);
}

TEST(ExplainLogCli, WarningsOnlyExitOne) {
  ProcessResult r = Cli({"explain-log", "-"},
                        "[W ProcessGroupGloo.cpp:721] Warning: Unable to resolve hostname to a "
                        "(local) address. Using the loopback address as fallback.\n");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
}

TEST(ExplainLogCli, SeveralFilesAreOneJob) {
  ProcessResult r = Cli({"explain-log", Fixture(), "/dev/null"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.out, HasSubstr("2 logs"));
  EXPECT_THAT(r.out, HasSubstr("root cause: "));
  ProcessResult j = Cli({"explain-log", "--json", Fixture(), "/dev/null"});
  nlohmann::json parsed = nlohmann::json::parse(j.out);
  EXPECT_EQ(parsed["logs"].size(), 2u);
  EXPECT_EQ(parsed["root_cause"]["id"], "bad_interface_nccl_syntax");
}

TEST(ExplainLogCli, EmptyFile) {
  ProcessResult r = Cli({"explain-log", "/dev/null"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "/dev/null: empty input, nothing to explain\n");
  ProcessResult j = Cli({"explain-log", "--json", "-"}, "");
  EXPECT_EQ(j.exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(j.out)["empty"], true);
}

TEST(ExplainLogCli, BinaryFile) {
  // The ELF binary itself holds the signatures' own text: it is no log.
  ProcessResult r = Cli({"explain-log", CliPath()});
  EXPECT_EQ(r.exit_code, 65) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr(CliPath() + ": not a text log: an ELF executable"));
  EXPECT_EQ(r.out, "");
  std::string random;
  uint32_t x = 1;
  for (int i = 0; i < 70000; ++i) random.push_back(static_cast<char>((x = x * 69069 + 1) >> 24));
  ProcessResult in = Cli({"explain-log", "--json", "-"}, random);
  EXPECT_EQ(in.exit_code, 65);
  EXPECT_THAT(in.err, HasSubstr("-: not a text log: binary data"));
}

// Logs as crashed nodes leave them: half a .gz is explained with a warning;
// a .gz with no text at all is no log; compressed input on stdin too; a
// directory's files that are no logs are skipped.
class ExplainLogInputCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/explain-input-" + std::to_string(getpid());
    std::filesystem::create_directories(dir_);
    for (int i = 0; i < 20000; ++i) {
      log_ += "step " + std::to_string(i) + " loss 0." + std::to_string(i * 7919 % 10007) + "\n";
      if (i == 10) {
        log_ +=
            "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection "
            "closed by peer [10.0.0.2]:42311\n";
      }
    }
    gz_.resize(compressBound(log_.size()) + 64);
    z_stream z{};
    deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
    z.next_in = reinterpret_cast<Bytef*>(log_.data());
    z.avail_in = static_cast<uInt>(log_.size());
    z.next_out = reinterpret_cast<Bytef*>(gz_.data());
    z.avail_out = static_cast<uInt>(gz_.size());
    deflate(&z, Z_FINISH);
    gz_.resize(z.total_out);
    deflateEnd(&z);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& bytes) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

  std::string dir_, log_, gz_;
};

TEST_F(ExplainLogInputCli, ATruncatedGzipIsExplainedWithAWarning) {
  const std::string half = Write("rank0.log.gz", gz_.substr(0, gz_.size() / 2));
  ProcessResult r = Cli({"explain-log", half});
  EXPECT_EQ(r.exit_code, 2) << r.err;  // the error it holds
  EXPECT_THAT(r.err, HasSubstr("warning: " + half + ": the gzip stream ends early (truncated)"));
  EXPECT_THAT(r.out, HasSubstr("root cause: peer_connection_closed (line 12)"));
  EXPECT_THAT(r.out, HasSubstr("(the input ended early)"));
  ProcessResult j = Cli({"explain-log", "--json", half});
  nlohmann::json parsed = nlohmann::json::parse(j.out);
  EXPECT_EQ(parsed["truncated"], true);
  EXPECT_EQ(parsed["format"], "gzip");
  EXPECT_THAT(parsed["input_warning"].get<std::string>(), HasSubstr("truncated"));
  // A stream that gave no text at all is no log.
  ProcessResult header = Cli({"explain-log", Write("header.gz", gz_.substr(0, 10))});
  EXPECT_EQ(header.exit_code, 65);
  EXPECT_THAT(header.err,
              HasSubstr("header.gz: no text could be read: the gzip stream ends early"));
  ProcessResult corrupt = Cli({"explain-log", Write("corrupt.gz", "\x1f\x8b\x08\x00garbage")});
  EXPECT_EQ(corrupt.exit_code, 65);
  EXPECT_THAT(corrupt.err, HasSubstr("corrupt.gz: no text could be read"));
}

TEST_F(ExplainLogInputCli, GzipOnStdin) {
  ProcessResult r = Cli({"explain-log", "-"}, gz_);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.out, HasSubstr("root cause: peer_connection_closed (line 12)"));
}

TEST_F(ExplainLogInputCli, ADirectorysFilesThatAreNoLogsAreSkipped) {
  Write("rank0.log", log_);
  Write("loss.png", std::string("\x89PNG\r\n\x1a\n", 8) + gz_.substr(0, 4000));
  ProcessResult r = Cli({"explain-log", "--json", dir_});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("skipped " + dir_ + "/loss.png: not a text log: a PNG image"));
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["source"], dir_ + "/rank0.log");
  ASSERT_EQ(j["skipped"].size(), 1u);
  EXPECT_EQ(j["skipped"][0]["source"], dir_ + "/loss.png");
  // Named, the image is an error; a directory of nothing but it, too.
  EXPECT_EQ(Cli({"explain-log", dir_ + "/loss.png"}).exit_code, 65);
  std::filesystem::remove(dir_ + "/rank0.log");
  ProcessResult only = Cli({"explain-log", dir_});
  EXPECT_EQ(only.exit_code, 65);
  EXPECT_THAT(only.err, HasSubstr("no text logs in the given directories"));
}

TEST(ExplainLogCli, AnUnrecognisedDistributedErrorIsReported) {
  ProcessResult r = Cli({"explain-log", "-"},
                        "step 1\nRuntimeError: [c10d] could not connect the quux socket to "
                        "host zork:1234\n");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.out, HasSubstr("root cause (low confidence): unrecognised_distributed_error "
                               "(line 2), most likely connect"));
}

TEST(ExplainLogCli, MissingFileNamesIt) {
  ProcessResult r = Cli({"explain-log", "/nonexistent/gloo.log"});
  EXPECT_EQ(r.exit_code, 66);
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/gloo.log"));
  EXPECT_THAT(r.err, HasSubstr("No such file"));
}

TEST(Cli, HelpAndVersion) {
  ProcessResult help = Cli({"health", "--help"});
  EXPECT_EQ(help.exit_code, 0) << help.err;
  EXPECT_THAT(help.out, HasSubstr("usage: gloowatch health"));
  EXPECT_THAT(help.out, HasSubstr("--deadline=3s"));
  EXPECT_THAT(help.out, HasSubstr("exit codes:"));
  EXPECT_THAT(help.out, ::testing::Not(HasSubstr("--report_path")));  // diagnose's
  for (const char* command : {"diagnose", "explain-log", "report-step"}) {
    ProcessResult r = Cli({command, "-h"});
    EXPECT_EQ(r.exit_code, 0) << command;
    EXPECT_THAT(r.out, HasSubstr(std::string("usage: gloowatch ") + command));
  }
  ProcessResult version = Cli({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_THAT(version.out, ::testing::StartsWith("gloowatch 0."));
}

TEST(Cli, FlagsOfAnotherCommandAndBadEnumsAreRefused) {
  ProcessResult other = Cli({"health", "--job", "x", "--daemons", "127.0.0.1:1"});
  EXPECT_EQ(other.exit_code, 64);
  EXPECT_THAT(other.err, HasSubstr("'--job' does not apply"));
  ProcessResult color = Cli({"health", "--color=rainbow", "--daemons", "127.0.0.1:1"});
  EXPECT_EQ(color.exit_code, 64);
  EXPECT_THAT(color.err, HasSubstr("--color must be auto, always or never"));
}

TEST(Cli, ServeAndHtmlFlagsAreValidated) {
  ProcessResult help = Cli({"serve", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, HasSubstr("--listen=127.0.0.1:8080"));
  EXPECT_THAT(help.out, HasSubstr("--refresh=10s"));
  ProcessResult listen = Cli({"serve", "--listen", "nowhere", "--daemons", "127.0.0.1:1"});
  EXPECT_EQ(listen.exit_code, 64);
  EXPECT_THAT(listen.err, HasSubstr("--listen: bad address 'nowhere'"));
  ProcessResult refresh = Cli({"serve", "--refresh", "0s", "--daemons", "127.0.0.1:1"});
  EXPECT_EQ(refresh.exit_code, 64);
  EXPECT_THAT(refresh.err, HasSubstr("--refresh must be in [1s, 1h]"));
  ProcessResult source = Cli({"serve"});
  EXPECT_EQ(source.exit_code, 64);
  EXPECT_THAT(source.err, HasSubstr("need --daemons, --config or --cluster"));
  EXPECT_EQ(Cli({"serve", "--html", "x", "--daemons", "127.0.0.1:1"}).exit_code, 64);  // health's
  ProcessResult prometheus = Cli({"serve", "--prometheus", "ftp://x"});
  EXPECT_EQ(prometheus.exit_code, 64);
  EXPECT_THAT(prometheus.err, HasSubstr("--prometheus:"));
  // An unwritable page: 73, naming the path. (Port 1 on loopback refuses at once.)
  ProcessResult html =
      Cli({"health", "--daemons", "127.0.0.1:1", "--html", "/nonexistent-dir/page.html"});
  EXPECT_EQ(html.exit_code, 73);
  EXPECT_THAT(html.err, HasSubstr("cannot write '/nonexistent-dir/page.html'"));
  // `-`: the page alone on stdout.
  ProcessResult out = Cli({"health", "--daemons", "127.0.0.1:1", "--html", "-"});
  EXPECT_EQ(out.exit_code, 69);  // the only daemon is unreachable: nothing answered
  EXPECT_THAT(out.out, ::testing::StartsWith("<!DOCTYPE html>"));
  EXPECT_THAT(out.out, HasSubstr("<tr class=\"unreachable\" data-node=\"127.0.0.1:1\">"));
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

namespace gloowatch::testing {
namespace {

TEST(DiagnoseCli, DubiousEnvironmentFlaggedAndReportValid) {
  const std::string report = ::testing::TempDir() + "/diag.json";
  std::map<std::string, std::string> env = {{"PATH", "/usr/bin:/bin"},
                                            {"GLOO_SOCKET_IFNAME", "lo"},
                                            {"GLOO_TIMEOUT_SECONDS", "600"},
                                            {"GLOO_COMPRESSION", "1"},
                                            {"GLOO_MADE_UP", "x"}};
  ProcessResult r = Cli({"diagnose", "--report-path", report, "--target", "127.0.0.1", "--ports",
                         "1-3", "--color=never"},
                        "", env);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;  // warnings only
  EXPECT_THAT(r.out, HasSubstr("GLOO_TIMEOUT_SECONDS"));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("\033[")));
  std::ifstream in(report);
  nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["schema"], "gloowatch.diagnose.v1");
  for (const char* k : {"generated_at", "exit_code", "summary", "inputs", "checks"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  EXPECT_EQ(j["exit_code"], 1);
  EXPECT_EQ(j["inputs"]["ports"], nlohmann::json::array({1, 3}));
  std::map<std::string, std::string> status;
  for (const auto& c : j["checks"]) {
    for (const char* k : {"id", "status", "summary", "evidence", "remediation"}) {
      EXPECT_TRUE(c.contains(k)) << k;
    }
    status[c["id"]] = c["status"];
  }
  EXPECT_EQ(status["port_scan:127.0.0.1"], "PASS");
  EXPECT_EQ(status["interface"], "PASS");  // lo is fine when every target is local
  EXPECT_EQ(status["environment"], "WARN");
  std::string env_evidence;
  for (const auto& c : j["checks"]) {
    if (c["id"] == "environment") env_evidence = c["evidence"].dump();
  }
  EXPECT_THAT(env_evidence, HasSubstr("GLOO_COMPRESSION"));
  EXPECT_THAT(env_evidence, HasSubstr("GLOO_MADE_UP=x: unknown"));
}

TEST(DiagnoseCli, UsageErrors) {
  ProcessResult r = Cli({"diagnose", "--report-path", "/tmp/x.json", "--ports", "9-1"});
  EXPECT_EQ(r.exit_code, 64);
  EXPECT_THAT(r.err, HasSubstr("reversed"));
  EXPECT_EQ(Cli({"diagnose", "--report-path", "/tmp/x.json", "--daemons", "nohostport"}).exit_code,
            64);
  EXPECT_EQ(Cli({"diagnose", "--report-path", "/nonexistent/dir/r.json", "--ports", "1"}).exit_code,
            73);
}

}  // namespace
}  // namespace gloowatch::testing

namespace gloowatch::testing {
namespace {

// --- the habits of a command line ------------------------------------------

TEST(CliHabits, AUsageErrorShowsThatCommandsUsageAndTheNearestFlag) {
  ProcessResult r = Cli({"health", "--daemon", "127.0.0.1:1"});
  EXPECT_EQ(r.exit_code, 64);
  EXPECT_THAT(r.err,
              HasSubstr("'--daemon' does not apply to this command; did you mean --daemons?"));
  EXPECT_THAT(r.err, HasSubstr("usage: gloowatch health [--daemons"));
  EXPECT_THAT(r.err, HasSubstr("gloowatch help health"));
  EXPECT_THAT(r.err, Not(HasSubstr("commands:")));  // not the whole top-level help
  EXPECT_THAT(r.err, Not(HasSubstr("explain-log")));
  // Spelled with dashes, suggested with dashes; a swap of two letters is one edit.
  ProcessResult dashes = Cli({"diagnose", "--report-pth", "x"});
  EXPECT_EQ(dashes.exit_code, 64);
  EXPECT_THAT(dashes.err, HasSubstr("unknown flag '--report-pth'; did you mean --report-path?"));
  ProcessResult swapped = Cli({"health", "--deamons", "127.0.0.1:1"});
  EXPECT_THAT(swapped.err, HasSubstr("did you mean --daemons?"));
  // Nothing near: no guess.
  ProcessResult far = Cli({"health", "--job", "x"});
  EXPECT_THAT(far.err, Not(HasSubstr("did you mean")));
  // A command's own argument error shows its usage too.
  ProcessResult args = Cli({"job"});
  EXPECT_EQ(args.exit_code, 64);
  EXPECT_THAT(args.err, HasSubstr("usage: gloowatch job NAME"));
}

TEST(CliHabits, AnUnknownCommandGetsTheNearestOne) {
  ProcessResult r = Cli({"healt"});
  EXPECT_EQ(r.exit_code, 64);
  EXPECT_THAT(r.err, HasSubstr("unknown command 'healt'; did you mean 'health'?"));
  EXPECT_THAT(r.err, Not(HasSubstr("commands:")));
  EXPECT_THAT(Cli({"prefligt"}).err, HasSubstr("did you mean 'preflight'?"));
  EXPECT_THAT(Cli({"explain"}).err, HasSubstr("did you mean 'explain-log'?"));  // a prefix
  ProcessResult none = Cli({"frobnicate"});
  EXPECT_EQ(none.exit_code, 64);
  EXPECT_THAT(none.err, Not(HasSubstr("did you mean")));
  EXPECT_THAT(none.err, HasSubstr("gloowatch help"));
}

TEST(CliHabits, HelpCommandPrintsThatCommandsHelp) {
  ProcessResult help = Cli({"help", "health"});
  EXPECT_EQ(help.exit_code, 0) << help.err;
  EXPECT_EQ(help.out, Cli({"health", "--help"}).out);
  EXPECT_THAT(help.out, HasSubstr("usage: gloowatch health"));
  EXPECT_THAT(help.out, Not(HasSubstr("commands:")));
  ProcessResult top = Cli({"help"});
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_THAT(top.out, HasSubstr("commands:"));
  ProcessResult unknown = Cli({"help", "healt"});
  EXPECT_EQ(unknown.exit_code, 64);
  EXPECT_THAT(unknown.err, HasSubstr("did you mean 'health'?"));
}

// Two loopback ports nothing listens on: connections are refused at once.
std::string TwoDeadDaemons() {
  const int a = FreePort();
  int b = FreePort();
  while (b == a) b = FreePort();
  return absl::StrCat("127.0.0.1:", a, ",127.0.0.1:", b);
}

TEST(CliHabits, NothingAnsweredIsUnavailableInEveryCommand) {
  const std::string dead = TwoDeadDaemons();
  ProcessResult health = Cli({"health", "--daemons", dead, "--color=never"});
  EXPECT_EQ(health.exit_code, 69) << health.out << health.err;
  EXPECT_THAT(health.err, HasSubstr("no daemon answered (2 asked)"));
  EXPECT_THAT(health.out, HasSubstr("cluster: failed: 2 nodes unreachable ("));
  EXPECT_THAT(health.out, HasSubstr("(2 daemons asked, 2 nodes, 0 links)"));
  // One short line per daemon: its row, with the cause and not gRPC's story.
  EXPECT_EQ(Occurrences(health.out, "UNAVAILABLE: Connection refused"), 2u) << health.out;
  EXPECT_THAT(health.out, Not(HasSubstr("failed to connect to all addresses")));
  EXPECT_THAT(health.err, Not(HasSubstr("grpc")));
  ProcessResult json = Cli({"health", "--daemons", dead, "--json"});
  EXPECT_EQ(json.exit_code, 69);
  EXPECT_EQ(nlohmann::json::parse(json.out)["exit_code"], 69);

  ProcessResult job = Cli({"job", "llm", "--daemons", dead});
  EXPECT_EQ(job.exit_code, 69) << job.err;
  EXPECT_THAT(job.err, HasSubstr("no daemon answered (2 asked)"));
  EXPECT_EQ(Occurrences(job.err, "UNAVAILABLE: Connection refused"), 2u) << job.err;

  ProcessResult preflight = Cli({"preflight", "--daemons", dead, "--timeout", "1s"});
  EXPECT_EQ(preflight.exit_code, 69) << preflight.out << preflight.err;
  EXPECT_THAT(preflight.out, HasSubstr("DO NOT START (exit 69)"));
  EXPECT_EQ(Occurrences(preflight.out, "UNAVAILABLE: Connection refused"), 2u) << preflight.out;

  // diagnose still checked this host: the daemons FAIL, what needs them SKIPs.
  ProcessResult diagnose = Cli({"diagnose", "--daemons", dead, "--ports", "1", "--json"});
  EXPECT_EQ(diagnose.exit_code, 2) << diagnose.err;
  EXPECT_EQ(nlohmann::json::parse(diagnose.out)["checks"][0]["status"], "FAIL");
}

TEST(CliHabits, OneDaemonIsOneDaemon) {
  ProcessResult r = Cli({"health", "--daemons", absl::StrCat("127.0.0.1:", FreePort())});
  EXPECT_THAT(r.out, HasSubstr("(1 daemon asked, 1 node, 0 links)"));
}

TEST(DiagnoseCli, WithoutReportPathTheReportGoesToStdout) {
  ProcessResult r = Cli({"diagnose", "--target", "127.0.0.1", "--ports", "1", "--color=never"});
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("PASS  port_scan:127.0.0.1: 127.0.0.1: 1 refused"));
  EXPECT_THAT(r.out, HasSubstr(" pass, "));
  EXPECT_THAT(r.out, Not(HasSubstr("report:")));  // no file was written
  ProcessResult json = Cli({"diagnose", "--target", "127.0.0.1", "--ports", "1", "--json"});
  nlohmann::json j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["schema"], "gloowatch.diagnose.v1");
  EXPECT_EQ(j["exit_code"], json.exit_code);
}

TEST(DiagnoseCli, ChecksWithNothingToLookAtSkipInsteadOfPassing) {
  std::map<std::string, std::string> env = {{"PATH", "/usr/bin:/bin"}, {"GLOOWATCH_CONFIG", ""}};
  ProcessResult r =
      Cli({"diagnose", "--daemons", TwoDeadDaemons(), "--ports", "1", "--json"}, "", env);
  nlohmann::json j = nlohmann::json::parse(r.out);
  std::map<std::string, std::string> status;
  for (const auto& c : j["checks"]) status[c["id"]] = c["status"];
  EXPECT_EQ(status["daemons"], "FAIL");
  for (const char* id :
       {"ephemeral_ports", "mtu", "link_quality", "consistency", "job_resolution", "master_addr"}) {
    EXPECT_EQ(status[id], "SKIP") << id;
  }
  EXPECT_EQ(j["summary"]["skip"], 6);
  EXPECT_THAT(r.out, Not(HasSubstr("resolves on 0 hosts")));
  EXPECT_THAT(r.out, Not(HasSubstr("use --daemons")));
  ProcessResult text = Cli({"diagnose", "--daemons", TwoDeadDaemons(), "--ports", "1"}, "", env);
  EXPECT_THAT(text.out, HasSubstr("SKIP  mtu: no daemon answered: not checked"));
  EXPECT_THAT(text.out, HasSubstr(", 6 skipped"));
}

// --- the default source: /etc/gloowatch/gloowatchd.yaml or GLOOWATCH_CONFIG --

std::map<std::string, std::string> WithConfig(const std::string& path) {
  std::map<std::string, std::string> env = TestEnvironment();
  env["GLOOWATCH_CONFIG"] = path;
  return env;
}

// A fleet file (no node:, every host in peers:) on a host it lists: the
// daemon of this host is asked at grpc_listen, as `gloowatchd --node %H`
// serves it, and its own entry is not asked a second time.
TEST(DefaultSource, AFleetFileIsReadAsThisHostsAndAsksEveryDaemonOnce) {
  TempDir dir;
  const int self = FreePort(), other = FreePort();
  const std::string fleet = dir.Write(
      "fleet.yaml", absl::StrCat("grpc_listen: 127.0.0.1:", self,
                                 "\nmetrics_listen: 127.0.0.1:7610\ngloo: {address: 127.0.0.1}\n"
                                 "peers:\n  - {name: ",
                                 ThisHost(),
                                 ", grpc: 127.0.0.1:1}\n  - {name: other, grpc: "
                                 "127.0.0.1:",
                                 other, "}\n"));
  ProcessResult r = Cli({"health", "--json"}, "", WithConfig(fleet));
  EXPECT_EQ(r.exit_code, 69) << r.err;  // nothing listens
  EXPECT_THAT(r.err,
              HasSubstr(absl::StrCat("asking the 2 daemons of ", fleet, " (GLOOWATCH_CONFIG)")));
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["nodes"].size(), 2u) << j["nodes"].dump(2);
  EXPECT_EQ(j["nodes"][0]["name"], ThisHost());
  EXPECT_EQ(j["nodes"][0]["address"], absl::StrCat("127.0.0.1:", self));
  EXPECT_EQ(j["nodes"][1]["name"], "other");
  // The same file given by --config reads the same.
  ProcessResult flag = Cli({"health", "--json", "--config", fleet});
  EXPECT_EQ(nlohmann::json::parse(flag.out)["nodes"], j["nodes"]);
  EXPECT_THAT(flag.err, Not(HasSubstr("asking the")));  // the flag says which file
  // job and preflight take it too; preflight outside a Slurm job.
  EXPECT_THAT(Cli({"job", "llm"}, "", WithConfig(fleet)).err, HasSubstr("asking the 2 daemons"));
  ProcessResult preflight = Cli({"preflight", "--timeout", "1s"}, "", WithConfig(fleet));
  EXPECT_EQ(preflight.exit_code, 69) << preflight.err;
  EXPECT_THAT(preflight.out, HasSubstr(ThisHost()));
  ProcessResult diagnose = Cli({"diagnose", "--ports", "1", "--json"}, "", WithConfig(fleet));
  EXPECT_EQ(nlohmann::json::parse(diagnose.out)["inputs"]["daemons"].size(), 2u);
}

// On a host the fleet file does not list (a login node): every listed node.
TEST(DefaultSource, AHostTheFleetFileDoesNotListAsksEveryListedNode) {
  TempDir dir;
  const std::string fleet =
      dir.Write("fleet.yaml",
                absl::StrCat("grpc_listen: 0.0.0.0:7601\nmetrics_listen: 0.0.0.0:7610\n"
                             "peers:\n  - {name: not-this-host-a, grpc: 127.0.0.1:",
                             FreePort(),
                             "}\n  - {name: not-this-host-b, grpc: 127.0.0.1:", FreePort(), "}\n"));
  ProcessResult r = Cli({"health", "--json"}, "", WithConfig(fleet));
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["nodes"].size(), 2u);
  EXPECT_EQ(j["nodes"][0]["name"], "not-this-host-a");
  EXPECT_EQ(j["nodes"][1]["name"], "not-this-host-b");
}

TEST(DefaultSource, NoConfigOrAMissingOneIsAClearError) {
  ProcessResult none = Cli({"health"});  // GLOOWATCH_CONFIG set but empty
  EXPECT_EQ(none.exit_code, 64);
  EXPECT_THAT(none.err, HasSubstr("need --daemons, --config or --cluster"));
  ProcessResult missing = Cli({"health"}, "", WithConfig("/nonexistent/gloowatchd.yaml"));
  EXPECT_EQ(missing.exit_code, 66);
  EXPECT_THAT(missing.err, HasSubstr("/nonexistent/gloowatchd.yaml"));
  EXPECT_THAT(missing.err, HasSubstr("GLOOWATCH_CONFIG"));
}

}  // namespace
}  // namespace gloowatch::testing
