// `gloowatch health --prometheus` end to end: three real daemons on loopback,
// a real Prometheus scraping them every second, and the CLI reading the
// cluster both ways. The two pictures must agree (nodes, links, verdict,
// figures within tolerance); a killed daemon must show as unreachable and
// failed (exit 2) from Prometheus too; and a Prometheus without the job, or
// one that rejects the query, must give a clear error and exit 69.
#include <signal.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "client/sources/cluster_at.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/daemon_process.h"
#include "tests/support/free_port.h"
#include "tests/support/prometheus.h"
#include "tests/support/subprocess.h"

namespace gloowatch::testing {
namespace {

using nlohmann::json;

ProcessResult Cli(std::vector<std::string> args) {
  args.insert(args.begin(), CliPath());
  return RunProcess(args, std::nullopt, "", absl::Seconds(20));
}

json ParseJson(const ProcessResult& r) {
  return json::parse(r.out, nullptr, /*allow_exceptions=*/false);
}

// Tolerances between the two reads. The daemons' figures move between the
// scrape (at most 1 s old) and GetStatus: the p50/p99 windows take a new
// latency probe every 500 ms, the offset a new burst every second; a
// bandwidth gauge holds the last transfer, which is the same in both reads
// unless a new one lands in between (then the comparison is retried).
bool Close(const std::string& key, double prom, double daemons, std::string* why) {
  double tolerance = 0;
  if (absl::StartsWith(key, "latency_")) {
    tolerance = std::max(0.25 * std::max(std::abs(prom), std::abs(daemons)), 0.02);  // ms
  } else if (key == "clock_offset_ms") {
    tolerance = 0.5;  // ms; loopback offsets are a few us
  } else {
    tolerance = 0.01 * std::max(std::abs(prom), std::abs(daemons));  // bandwidth, link ratio
  }
  if (std::abs(prom - daemons) <= tolerance) return true;
  *why = absl::StrCat(key, ": prometheus ", prom, " vs daemons ", daemons, " (tolerance ",
                      tolerance, ")");
  return false;
}

// Every difference between the two health documents; empty when they agree.
std::vector<std::string> Differences(const json& prom, const json& daemons) {
  std::vector<std::string> out;
  if (prom["verdict"] != daemons["verdict"]) {
    out.push_back(
        absl::StrCat("verdict ", prom["verdict"].dump(), " vs ", daemons["verdict"].dump()));
  }
  if (prom["exit_code"] != daemons["exit_code"]) out.push_back("exit_code differs");
  if (prom["node_names"] != daemons["node_names"]) {
    out.push_back(absl::StrCat("node_names ", prom["node_names"].dump(), " vs ",
                               daemons["node_names"].dump()));
    return out;
  }
  auto by_name = [](const json& nodes) {
    std::map<std::string, json> m;
    for (const json& n : nodes) m[n["name"].get<std::string>()] = n;
    return m;
  };
  auto pn = by_name(prom["nodes"]), dn = by_name(daemons["nodes"]);
  if (pn.size() != dn.size()) out.push_back("different node counts");
  for (const auto& [name, d] : dn) {
    if (!pn.count(name)) {
      out.push_back("node " + name + " missing from Prometheus");
      continue;
    }
    const json& p = pn[name];
    for (const char* k : {"reachable", "status", "version", "gloo_version", "thresholds"}) {
      if (p.value(k, json()) != d.value(k, json())) {
        out.push_back(absl::StrCat("node ", name, " ", k, ": ", p.value(k, json()).dump(), " vs ",
                                   d.value(k, json()).dump()));
      }
    }
  }
  std::map<std::string, std::string> pl, dl;
  for (const json& l : prom["links"])
    pl[l["a"].get<std::string>() + "<->" + l["b"].get<std::string>()] = l["status"];
  for (const json& l : daemons["links"])
    dl[l["a"].get<std::string>() + "<->" + l["b"].get<std::string>()] = l["status"];
  if (pl != dl) {
    out.push_back(absl::StrCat("links ", json(pl).dump(), " vs ", json(dl).dump()));
  }
  for (const auto& [key, rows] : daemons["matrices"].items()) {
    for (size_t i = 0; i < rows.size(); ++i) {
      for (size_t j = 0; j < rows[i].size(); ++j) {
        const json& d = rows[i][j];
        const json& p = prom["matrices"][key][i][j];
        if (d.is_null() != p.is_null()) {
          out.push_back(absl::StrCat(key, "[", i, "][", j, "] ", p.dump(), " vs ", d.dump()));
          continue;
        }
        std::string why;
        if (!d.is_null() && !Close(key, p.get<double>(), d.get<double>(), &why)) {
          out.push_back(absl::StrCat("[", i, "][", j, "] ", why));
        }
      }
    }
  }
  return out;
}

class PrometheusHealthTest : public ::testing::Test {
 protected:
  // 1 Gbps: loopback transfers exceed it, so link ratios exist (and are
  // compared) without making the verdict depend on the machine's speed.
  PrometheusHealthTest() : cluster_(3, FastLoopbackYaml("1Gbps")), prom_port_(FreePort()) {}

  void SetUp() override {
    if (access(kPrometheus, X_OK) != 0) GTEST_SKIP() << kPrometheus << " is not installed";
    const std::string config = dir_.Write(
        "prometheus.yml", PrometheusYaml(LoopbackTargets({cluster_.node(0).metrics_port,
                                                          cluster_.node(1).metrics_port,
                                                          cluster_.node(2).metrics_port})));
    prometheus_ = StartPrometheus(config, dir_.path(), prom_port_);
    // Prometheus watches the targets before the daemons start (up == 0 for
    // all three), then the daemons start one after another, each once
    // Prometheus has scraped a refused probe from the one before: start-up
    // failures that Prometheus holds. The daemons do not count failures
    // before a peer was first up, and neither must health --prometheus.
    ASSERT_TRUE(WaitFor([&] { return Scalar("count(up{job=\"gloowatch\"} == 0)") == 3; },
                        absl::Seconds(20)))
        << "Prometheus never scraped the (not yet started) targets; log:\n"
        << prometheus_->Log();
    for (int i = 0; i < 3; ++i) {
      cluster_.Start(i);
      if (i == 2) break;
      const std::string failures =
          absl::StrCat("sum(gloowatch_peer_probe_failures_total{job=\"gloowatch\",node=\"",
                       cluster_.node(i).name, "\"})");
      ASSERT_TRUE(WaitFor([&] { return Scalar(failures) > 0; }, absl::Seconds(20)))
          << cluster_.node(i).name << " counted no refused probe to the daemons not started yet";
    }
    std::string last;
    ASSERT_TRUE(WaitFor(
        [&] {
          ProcessResult r = Cli({"health", "--json", "--daemons", Daemons()});
          last = r.out + r.err;
          json j = ParseJson(r);
          if (r.exit_code != 0 || j.is_discarded()) return false;
          for (const auto& [key, rows] : j["matrices"].items()) {
            for (size_t i = 0; i < rows.size(); ++i) {
              for (size_t k = 0; k < rows[i].size(); ++k) {
                if (i != k && rows[i][k].is_null()) return false;
              }
            }
          }
          return true;
        },
        absl::Seconds(30)))
        << "the daemons never reported a healthy, fully measured cluster:\n"
        << last;
  }

  // The value of a PromQL expression that yields one sample, or -1.
  double Scalar(const std::string& promql) {
    absl::StatusOr<json> data = PrometheusQuery(prom_port_, promql);
    if (!data.ok()) return -1;
    const json& result = (*data)["result"];
    if (!result.is_array() || result.size() != 1) return -1;
    return std::stod(result[0]["value"][1].get<std::string>());
  }

  void TearDown() override { prometheus_.reset(); }

  std::string Daemons() const {
    std::vector<std::string> d;
    for (int i = 0; i < 3; ++i) d.push_back(cluster_.grpc(i));
    return absl::StrJoin(d, ",");
  }
  std::string Url() const { return absl::StrCat("http://127.0.0.1:", prom_port_); }

  TempDir dir_;
  LoopbackCluster cluster_;
  int prom_port_;
  std::unique_ptr<Process> prometheus_;
};

// explain-log --prometheus: a training log's failure meets what gloowatch saw
// on the links at that moment. node-c dies; a log line stamped at the kill
// (read in TZ=UTC) names the Gloo symptom; the cluster view around it names
// node-c's links as down. The CLI looks 30 s either side, which on a fresh
// cluster still holds its start-up (links not up yet, refused probes), so
// "and blames nothing else" is asserted on the same view read with a margin
// of kMargin (client::ClusterAt, what the CLI calls), once Prometheus holds
// a clean stretch that long.
TEST_F(PrometheusHealthTest, ExplainLogShowsTheLinksAtTheTimeOfTheFailure) {
  constexpr absl::Duration kMargin = absl::Seconds(10);
  // The stamp is the kill's second, so the window starts up to 1 s earlier.
  const std::string clean_window = absl::StrCat(absl::ToInt64Seconds(kMargin) + 2, "s");
  std::string last;
  ASSERT_TRUE(WaitFor(
      [&] {
        const double up = Scalar(absl::StrCat(
            "count(min_over_time(gloowatch_peer_up{job=\"gloowatch\"}[", clean_window, "]) == 1)"));
        const double failed = Scalar(
            absl::StrCat("sum(increase(gloowatch_peer_probe_failures_total{job=\"gloowatch\"}[",
                         clean_window, "])) or vector(0)"));
        last = absl::StrCat(up, " links up throughout, ", failed, " failures");
        return up == 6 && failed == 0;
      },
      absl::Seconds(60)))
      << "no clean " << clean_window << " in Prometheus: " << last;
  const absl::Time kill = absl::Now();
  cluster_.Kill(2, SIGKILL);
  ASSERT_TRUE(WaitFor(
      [&] {
        return Scalar("gloowatch_peer_up{node=\"node-a\",peer=\"node-c\"}") == 0 &&
               Scalar("gloowatch_peer_up{node=\"node-b\",peer=\"node-c\"}") == 0;
      },
      absl::Seconds(20)));
  const std::string stamp = absl::FormatTime("%Y-%m-%d %H:%M:%S,000", kill, absl::UTCTimeZone());
  const std::string log = dir_.Write(
      "rank0.log", absl::StrCat(stamp, " INFO step 12\n", stamp,
                                " RuntimeError: [../third_party/gloo/gloo/transport/tcp/"
                                "pair.cc:598] Connection closed by peer [127.0.0.1]:40000\n"));

  // The CLI: the root cause, its line's time, the default margin, node-c's
  // links down (the start-up may add more).
  const std::map<std::string, std::string> env = {{"TZ", "UTC"}};
  ProcessResult j = RunProcess({CliPath(), "explain-log", "--json", "--prometheus", Url(), log},
                               env, "", absl::Seconds(20));
  EXPECT_EQ(j.exit_code, 2) << j.err;
  json parsed = ParseJson(j);
  ASSERT_FALSE(parsed.is_discarded()) << j.out << j.err;
  EXPECT_EQ(parsed["root_cause"]["id"], "peer_connection_closed");
  const json& at_failure = parsed["cluster_at_failure"];
  EXPECT_EQ(at_failure["time"], static_cast<double>(absl::ToUnixSeconds(kill))) << at_failure;
  EXPECT_EQ(at_failure["margin_seconds"], 30) << at_failure;
  std::set<std::string> down;
  for (const json& l : at_failure["unhealthy"]) {
    if (l["down"] == true)
      down.insert(l["node"].get<std::string>() + "->" + l["peer"].get<std::string>());
  }
  EXPECT_TRUE(down.count("node-a->node-c") && down.count("node-b->node-c")) << at_failure.dump(1);
  ProcessResult text = RunProcess({CliPath(), "explain-log", "--prometheus", Url(), log}, env, "",
                                  absl::Seconds(20));
  EXPECT_EQ(text.exit_code, 2) << text.err;
  EXPECT_TRUE(absl::StrContains(text.out, "node-a -> node-c: down")) << text.out;
  EXPECT_TRUE(absl::StrContains(text.out, "node-b -> node-c: down")) << text.out;

  // The same view with a margin inside the clean stretch: exactly node-c's
  // two links, all six seen.
  client::PrometheusOptions prometheus;
  prometheus.url = Url();
  client::ClusterAtOptions options;
  options.margin = kMargin;
  absl::StatusOr<client::ClusterAtTime> view =
      client::ClusterAt(prometheus, static_cast<double>(absl::ToUnixSeconds(kill)), options);
  ASSERT_TRUE(view.ok()) << view.status();
  const std::string rendered = client::RenderClusterAt(*view, Url());
  EXPECT_TRUE(absl::StrContains(rendered, "2 of 6 links not healthy")) << rendered;
  EXPECT_TRUE(absl::StrContains(rendered, "node-a -> node-c: down")) << rendered;
  EXPECT_TRUE(absl::StrContains(rendered, "node-b -> node-c: down")) << rendered;
  EXPECT_FALSE(absl::StrContains(rendered, "node-a -> node-b")) << rendered;
  EXPECT_FALSE(absl::StrContains(rendered, "node-b -> node-a")) << rendered;

  // A Prometheus that is not there: a clear error, 69.
  ProcessResult gone = RunProcess({CliPath(), "explain-log", "--prometheus",
                                   absl::StrCat("http://127.0.0.1:", FreePort()), log},
                                  env, "", absl::Seconds(20));
  EXPECT_EQ(gone.exit_code, 69) << gone.err;
  EXPECT_TRUE(absl::StrContains(gone.err, "cannot reach Prometheus")) << gone.err;
}

TEST_F(PrometheusHealthTest, SamePictureAsTheDaemonsAndAKilledDaemonFails) {
  const absl::Time start = absl::Now();
  // Both reads agree once Prometheus has scraped every figure; each attempt
  // reads Prometheus right after the daemons.
  std::vector<std::string> diff = {"never compared"};
  json prom, daemons;
  int attempts = 0;
  absl::Duration daemons_took, prom_took;
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (!diff.empty() && absl::Now() < deadline) {
    ++attempts;
    const absl::Time t0 = absl::Now();
    ProcessResult d = Cli({"health", "--json", "--daemons", Daemons()});
    const absl::Time t1 = absl::Now();
    ProcessResult p = Cli({"health", "--json", "--prometheus", Url()});
    daemons_took = t1 - t0;
    prom_took = absl::Now() - t1;
    daemons = ParseJson(d);
    prom = ParseJson(p);
    if (prom.is_discarded() || daemons.is_discarded()) {
      diff = {"invalid JSON: " + p.err + d.err};
    } else {
      diff = Differences(prom, daemons);
      if (p.exit_code != d.exit_code) diff.push_back("exit codes differ");
    }
    if (!diff.empty()) {
      std::cout << "attempt " << attempts << ": " << diff.size()
                << " differences, first: " << diff[0] << "\n";
      absl::SleepFor(absl::Milliseconds(700));
    }
  }
  ASSERT_TRUE(diff.empty()) << "after " << attempts << " attempts:\n"
                            << absl::StrJoin(diff, "\n") << "\nprometheus:\n"
                            << prom.dump(1) << "\ndaemons:\n"
                            << daemons.dump(1);
  std::cout << "Prometheus and fan-out agree after " << attempts << " attempt(s), "
            << absl::FormatDuration(absl::Now() - start) << "; one health call took "
            << absl::FormatDuration(daemons_took) << " (fan-out), "
            << absl::FormatDuration(prom_took) << " (Prometheus)\n";
  // The start-up failures are in Prometheus (so the comparison above covered
  // them), yet neither picture counts them.
  const double startup_failures =
      Scalar("sum(increase(gloowatch_peer_probe_failures_total{job=\"gloowatch\"}[1h]))");
  EXPECT_GT(startup_failures, 0) << "the test did not produce start-up failures to ignore";
  std::cout << "start-up failures in Prometheus (not counted by either picture): "
            << startup_failures << "\n";
  EXPECT_EQ(prom["verdict"], "healthy");
  EXPECT_EQ(prom["source"], "prometheus");
  EXPECT_EQ(prom["source_url"], Url());
  EXPECT_EQ(prom["links"].size(), 3u);
  EXPECT_EQ(prom["coverage"]["mode"], "full_mesh");
  EXPECT_EQ(prom["coverage"]["measured_pairs"], 3);
  for (const json& n : prom["nodes"]) {
    // The daemons' own thresholds (gloowatch_threshold_*), not client defaults.
    EXPECT_DOUBLE_EQ(n["thresholds"]["latency_seconds"].get<double>(), 0.002) << n.dump();
  }
  ProcessResult text = Cli({"health", "--prometheus", Url(), "--color", "never"});
  EXPECT_EQ(text.exit_code, 0) << text.out << text.err;
  EXPECT_TRUE(absl::StrContains(
      text.out, "cluster: healthy (from Prometheus " + Url() + ", 3 nodes, 3 links)"))
      << text.out;
  EXPECT_TRUE(absl::StrContains(text.out, "coverage: 3 of 3 node pairs measured directly"))
      << text.out;

  // Bad input against a real Prometheus: a job it does not scrape, a
  // selector it cannot parse.
  ProcessResult no_job = Cli({"health", "--prometheus", Url(), "--prometheus_job", "no-such-job"});
  EXPECT_EQ(no_job.exit_code, 69) << no_job.err;
  EXPECT_TRUE(absl::StrContains(no_job.err, "no gloowatch series")) << no_job.err;
  EXPECT_TRUE(absl::StrContains(no_job.err, "no-such-job")) << no_job.err;
  ProcessResult bad_selector =
      Cli({"health", "--prometheus", Url(), "--prometheus_selector", "cluster=~"});
  EXPECT_EQ(bad_selector.exit_code, 69) << bad_selector.err;
  EXPECT_TRUE(absl::StrContains(bad_selector.err, "rejected")) << bad_selector.err;
  EXPECT_TRUE(absl::StrContains(bad_selector.err, "bad_data")) << bad_selector.err;

  // Kill node-c: its target goes down (up == 0) and its series stale; the
  // picture from Prometheus must say so, not keep its last figures.
  const absl::Time kill = absl::Now();
  cluster_.Kill(2, SIGKILL);
  json after;
  int code = -1;
  const bool failed = WaitFor(
      [&] {
        ProcessResult p = Cli({"health", "--json", "--prometheus", Url()});
        after = ParseJson(p);
        code = p.exit_code;
        if (after.is_discarded() || code != 2) return false;
        for (const json& n : after["nodes"]) {
          if (n["name"] == "node-c") return n["reachable"] == false;
        }
        return false;
      },
      absl::Seconds(20));
  ASSERT_TRUE(failed) << "exit " << code << "\n" << after.dump(1);
  std::cout << "node-c unreachable in Prometheus mode " << absl::FormatDuration(absl::Now() - kill)
            << " after the kill\n";
  EXPECT_EQ(after["verdict"], "failed");
  EXPECT_EQ(after["node_names"], json({"node-a", "node-b", "node-c"}));
  for (const json& n : after["nodes"]) {
    if (n["name"] != "node-c") {
      EXPECT_EQ(n["reachable"], true) << n.dump();
      continue;
    }
    EXPECT_EQ(n["status"], "failed");
    EXPECT_TRUE(absl::StrContains(n["error"].get<std::string>(), "up == 0") ||
                absl::StrContains(n["error"].get<std::string>(), "no samples"))
        << n.dump();
    EXPECT_EQ(n["address"], absl::StrCat("127.0.0.1:", cluster_.node(2).metrics_port));
  }
  // The survivors see node-c down once their probes fail (Gloo timeout 2 s).
  const bool links_down = WaitFor(
      [&] {
        ProcessResult p = Cli({"health", "--json", "--prometheus", Url()});
        after = ParseJson(p);
        if (after.is_discarded() || p.exit_code != 2) return false;
        int down = 0;
        for (const json& l : after["links"]) {
          if (l["b"] == "node-c" && l["status"] == "failed" && !l["a_to_b"].is_null() &&
              l["a_to_b"]["state"] == "down")
            ++down;
        }
        return down == 2;
      },
      absl::Seconds(20));
  EXPECT_TRUE(links_down) << after.dump(1);
  ProcessResult text_after = Cli({"health", "--prometheus", Url(), "--color", "never"});
  EXPECT_EQ(text_after.exit_code, 2);
  EXPECT_TRUE(absl::StrContains(text_after.out, "UNREACHABLE")) << text_after.out;
  // The heatmap page from Prometheus: the killed node down across its row.
  ProcessResult page = Cli({"health", "--prometheus", Url(), "--html", "-"});
  EXPECT_EQ(page.exit_code, 2);
  EXPECT_TRUE(absl::StrContains(page.out, "<header id=\"verdict\" class=\"verdict failed\">"));
  EXPECT_TRUE(absl::StrContains(page.out, "<tr class=\"unreachable\" data-node=\""))
      << page.out.substr(0, 4000);
  EXPECT_TRUE(absl::StrContains(page.out, "\" class=\"down\"><th>")) << page.out.substr(0, 4000);
  std::cout << "whole test took " << absl::FormatDuration(absl::Now() - start) << "\n";
}

// https:// with --tls_ca: a real Prometheus serving TLS (web.config.file)
// with a certificate for 127.0.0.1 from a CA the test makes. It scrapes
// nothing, so a working query ends in "no gloowatch series"; without the CA
// the handshake fails and says so.
TEST(PrometheusHealthTlsTest, HttpsWithTheServersCa) {
  if (access(kPrometheus, X_OK) != 0) GTEST_SKIP() << kPrometheus << " is not installed";
  TempDir dir;
  const absl::StatusOr<Pki> pki = MakePki(dir, "prom");
  ASSERT_TRUE(pki.ok()) << pki.status();
  const std::string web =
      dir.Write("web.yml", absl::StrCat("tls_server_config:\n  cert_file: ", pki->cert,
                                        "\n  key_file: ", pki->key, "\n"));
  const std::string config = dir.Write("prometheus.yml", "global:\n  scrape_interval: 1s\n");
  const int port = FreePort();
  PrometheusOptions options;
  options.extra_flags = {"--web.config.file=" + web};
  std::unique_ptr<Process> prometheus = StartPrometheus(config, dir.path(), port, options);
  const std::string url = absl::StrCat("https://127.0.0.1:", port);
  ProcessResult r;
  const bool answered = WaitFor(
      [&] {
        r = Cli({"health", "--prometheus", url, "--tls_ca", pki->ca});
        return r.exit_code == 69 && absl::StrContains(r.err, "no gloowatch series");
      },
      absl::Seconds(20));
  EXPECT_TRUE(answered) << "exit " << r.exit_code << ": " << r.err << "\nPrometheus log:\n"
                        << prometheus->Log();
  r = Cli({"health", "--prometheus", url});  // system CAs do not know the test's CA
  EXPECT_EQ(r.exit_code, 69) << r.err;
  EXPECT_TRUE(absl::StrContains(r.err, "cannot reach Prometheus at " + url)) << r.err;
  EXPECT_TRUE(absl::StrContains(r.err, "certificate")) << r.err;
}

}  // namespace
}  // namespace gloowatch::testing
