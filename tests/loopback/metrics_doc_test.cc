// One list of the daemon's metrics, kept true: the catalogue
// (daemon/metrics/metric_catalogue.h), which the daemon builds its families
// from, is exactly docs/metrics.md's table (names, types, labels), and a real
// daemon's /metrics exports exactly the catalogue: every gloowatch_* and
// process_* family in a scrape (its # TYPE and # HELP lines, its samples'
// labels) is in the catalogue with the same type, help and labels, and every
// entry is in the scrape.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "daemon/metrics/metric_catalogue.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "proto/gloowatch.grpc.pb.h"
#include "tests/support/daemon_process.h"
#include "tests/support/metrics_text.h"

namespace gloowatch::testing {
namespace {

// A connected pair on 127.0.0.1, both ends in this process.
struct LoopbackConnection {
  int listener = -1, client = -1, server = -1;
  LoopbackConnection() {
    listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(listener, 1) ||
        getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      return;
    }
    client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connect(client, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return;
    server = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  }
  ~LoopbackConnection() {
    for (int fd : {listener, client, server}) {
      if (fd >= 0) close(fd);
    }
  }
};

bool OurFamily(absl::string_view name) {
  return absl::StartsWith(name, "gloowatch_") || absl::StartsWith(name, "process_");
}

struct Family {
  std::string type;
  std::set<std::string> labels;
  std::string help;  // catalogue and scrape only
  int samples = 0;
};

std::map<std::string, Family> CataloguedFamilies(std::string* error) {
  std::map<std::string, Family> out;
  for (const MetricSpec* spec : kMetricCatalogue) {
    Family f;
    f.type = std::string(MetricTypeName(spec->type));
    f.help = std::string(spec->help);
    for (size_t i = 0; i < spec->label_count(); ++i) f.labels.insert(std::string(spec->labels[i]));
    if (!out.emplace(std::string(spec->name), f).second)
      *error = absl::StrCat("catalogued twice: ", spec->name);
  }
  return out;
}

// The doc table: | `name` | type | unit | labels | meaning |
std::map<std::string, Family> DocumentedFamilies(std::string* error) {
  const std::string path = SourcePath("docs/metrics.md");
  std::ifstream in(path);
  if (!in) {
    *error = "cannot read " + path;
    return {};
  }
  std::map<std::string, Family> out;
  std::string line;
  while (std::getline(in, line)) {
    if (!absl::StartsWith(line, "| `") || !OurFamily(absl::string_view(line).substr(3))) continue;
    std::vector<std::string> cells = absl::StrSplit(line, '|');
    // "", name, type, unit, labels, meaning, ""
    if (cells.size() < 6) {
      *error = "malformed row: " + line;
      continue;
    }
    std::string name(absl::StripAsciiWhitespace(cells[1]));
    name = std::string(absl::StripSuffix(absl::StripPrefix(name, "`"), "`"));
    Family f;
    f.type = std::string(absl::StripAsciiWhitespace(cells[2]));
    for (absl::string_view label : absl::StrSplit(cells[4], ',', absl::SkipWhitespace())) {
      f.labels.insert(std::string(absl::StripAsciiWhitespace(label)));
    }
    if (!out.emplace(name, f).second) *error = "listed twice: " + name;
  }
  return out;
}

// # TYPE and # HELP lines and the label names of each family's samples.
std::map<std::string, Family> ScrapedFamilies(const std::string& text) {
  std::map<std::string, Family> out;
  for (const auto& [name, type] : MetricTypes(text)) {
    if (OurFamily(name)) out[name].type = type;
  }
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::ConsumePrefix(&line, "# HELP ")) continue;
    const size_t space = line.find(' ');
    const std::string name(line.substr(0, space));
    auto it = out.find(name);
    if (it != out.end() && space != absl::string_view::npos) {
      it->second.help = std::string(line.substr(space + 1));
    }
  }
  for (const MetricSample& sample : ParseSamples(text)) {
    std::string name = sample.name;
    if (out.count(name) == 0) {
      for (const char* suffix : {"_bucket", "_sum", "_count"}) {
        if (absl::EndsWith(name, suffix)) {
          const std::string base = name.substr(0, name.size() - strlen(suffix));
          if (out.count(base) != 0 && out[base].type == "histogram") name = base;
        }
      }
    }
    auto it = out.find(name);
    if (it == out.end()) continue;
    ++it->second.samples;
    for (const auto& [key, value] : sample.labels) {
      if (key != "le") it->second.labels.insert(key);
    }
  }
  return out;
}

TEST(MetricsDocTest, TheCatalogueIsTheDocumentedList) {
  std::string error;
  const std::map<std::string, Family> catalogued = CataloguedFamilies(&error);
  ASSERT_TRUE(error.empty()) << error;
  const std::map<std::string, Family> documented = DocumentedFamilies(&error);
  ASSERT_TRUE(error.empty()) << error;
  ASSERT_GE(documented.size(), 15u);
  for (const auto& [name, f] : catalogued) {
    auto it = documented.find(name);
    if (it == documented.end()) {
      ADD_FAILURE() << "in the catalogue but not in docs/metrics.md: " << name;
      continue;
    }
    EXPECT_EQ(it->second.type, f.type) << name << ": type in docs/metrics.md vs the catalogue";
    EXPECT_EQ(absl::StrJoin(it->second.labels, ", "), absl::StrJoin(f.labels, ", "))
        << name << ": labels in docs/metrics.md vs the catalogue";
  }
  for (const auto& [name, f] : documented) {
    EXPECT_EQ(catalogued.count(name), 1u)
        << "in docs/metrics.md but not in the catalogue: " << name << " (" << f.type << ")";
  }
}

TEST(MetricsDocTest, EveryExportedFamilyIsDocumentedAndViceVersa) {
  std::string error;
  const std::map<std::string, Family> catalogued = CataloguedFamilies(&error);
  ASSERT_TRUE(error.empty()) << error;
  // Each entry is a row of docs/metrics.md: the test above.

  LoopbackCluster cluster(2, FastLoopbackYaml("10Gbps"));
  cluster.Start(0);
  // node-b starts once node-a has failed to reach it: the last failure's
  // time has a series from then on.
  ASSERT_TRUE(WaitFor(
      [&] {
        auto s = GetStatus(cluster.grpc(0));
        return s.ok() && FindPeer(*s, "node-b")->last_failure().has_time();
      },
      absl::Seconds(10)));
  cluster.Start(1);

  // A training step, so that the training families have series. The daemon
  // implements ReportStep: a refusal (UNIMPLEMENTED included) fails.
  for (int step = 0; step < 2; ++step) {
    const std::string log = absl::StrCat(cluster.dir().path(), "/report.log");
    Process cli({BinaryPath("client/gloowatch"), "report-step", "--daemon", cluster.grpc(0),
                 "--job", "doc-job", "--rank", "0", "--step", std::to_string(step),
                 "--step-seconds", "0.5", "--comm-seconds", "0.1"},
                log);
    if (cli.Wait(absl::Seconds(10)) != 0) FAIL() << "gloowatch report-step failed:\n" << cli.Log();
  }

  // Collective reports (what gloowatch_report.instrument sends), so that
  // the collective gauges have series: this process as a rank of doc-job,
  // and a rank of ended-job whose process is killed inside its call. For
  // doc-job a loopback connection of this process stands in for a Gloo pair,
  // so the job link families have series (read within 5 s).
  std::unique_ptr<Process> rank;
  LoopbackConnection pair;
  ASSERT_GE(pair.server, 0);
  {
    auto stub = v1::Status::NewStub(
        grpc::CreateChannel(cluster.grpc(0), grpc::InsecureChannelCredentials()));
    auto report = [&](const std::string& job, pid_t pid) {
      v1::ReportStepsRequest request;
      v1::CollectiveReport* c = request.mutable_collective();
      c->set_job(job);
      c->set_rank(0);
      c->mutable_state()->set_op("all_reduce");
      c->mutable_state()->set_seq(7);
      c->mutable_state()->set_inside_seconds(0.5);
      c->set_pid(static_cast<uint32_t>(pid));
      if (pid == getpid()) {
        for (int fd : {pair.client, pair.server}) {
          struct stat st {};
          ASSERT_EQ(fstat(fd, &st), 0);
          c->mutable_sockets()->add_inodes(st.st_ino);
        }
      }
      grpc::ClientContext context;
      context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
      v1::ReportStepsResponse response;
      grpc::Status s = stub->ReportSteps(&context, request, &response);
      ASSERT_TRUE(s.ok()) << s.error_message();
      ASSERT_EQ(response.collective_error(), "");
    };
    report("doc-job", getpid());
    rank = std::make_unique<Process>(std::vector<std::string>{"/bin/sleep", "600"},
                                     absl::StrCat(cluster.dir().path(), "/rank.log"));
    report("ended-job", rank->pid());
    rank->Signal(SIGKILL);
    ASSERT_TRUE(rank->Wait(absl::Seconds(10)).has_value());
  }

  // Wait until every catalogued family has samples (lazy gauges appear with
  // their first measurement: bandwidth comes within ~5 s).
  std::map<std::string, Family> scraped;
  std::string body;
  auto complete = [&] {
    auto got = HttpGet(cluster.node(0).metrics_port, "/metrics");
    if (!got.ok()) return false;
    body = *got;
    scraped = ScrapedFamilies(body);
    for (const auto& [name, f] : catalogued) {
      auto it = scraped.find(name);
      if (it == scraped.end() || it->second.samples == 0) return false;
    }
    return true;
  };
  const bool all = WaitFor(complete, absl::Seconds(30));
  for (const auto& [name, f] : catalogued) {
    auto it = scraped.find(name);
    if (it == scraped.end() || it->second.samples == 0) {
      ADD_FAILURE() << "in the catalogue but not exported: " << name;
      continue;
    }
    EXPECT_EQ(it->second.type, f.type) << name << ": type in the scrape vs the catalogue";
    EXPECT_EQ(it->second.help, f.help) << name << ": help in the scrape vs the catalogue";
    EXPECT_EQ(absl::StrJoin(it->second.labels, ", "), absl::StrJoin(f.labels, ", "))
        << name << ": labels in the scrape vs the catalogue";
  }
  for (const auto& [name, f] : scraped) {
    EXPECT_EQ(catalogued.count(name), 1u)
        << "exported but not in the catalogue (nor in docs/metrics.md): " << name << " (" << f.type
        << ")";
  }
  if (!all) ADD_FAILURE() << "scrape:\n" << body << "\nnode-a log:\n" << cluster.process(0)->Log();
}

}  // namespace
}  // namespace gloowatch::testing
