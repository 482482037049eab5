// /metrics with TLS and basic auth (metrics_web), scraped by a real
// Prometheus: the right credentials and client certificate get the metrics,
// a wrong password gets 401, a client without a certificate is refused, and
// plain HTTP on the TLS port is dropped without stalling the endpoint.
#include <crypt.h>
#include <unistd.h>

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/config.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/daemon_process.h"
#include "tests/support/free_port.h"
#include "tests/support/prometheus.h"

namespace gloowatch::testing {
namespace {

using json = nlohmann::json;

std::string Bcrypt(const std::string& password) {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  if (crypt_gensalt_rn("$2y$", 4, nullptr, 0, salt, sizeof(salt)) == nullptr) return "";
  crypt_data data{};
  const char* hash = crypt_r(password.c_str(), salt, &data);
  return hash == nullptr ? "" : hash;
}

TEST(MetricsWebConfigTest, HalfConfiguredTlsOrAuthIsAnErrorNamingTheKeys) {
  const std::string base = "node: a\ngrpc_listen: 127.0.0.1:1\nmetrics_listen: 127.0.0.1:2\n";
  struct Case {
    std::string yaml, error;
  } cases[] = {
      {"metrics_web:\n  tls_cert: /x.pem\n", "metrics_web.tls_cert and metrics_web.tls_key"},
      {"metrics_web:\n  tls_client_ca: /ca.pem\n", "metrics_web.tls_client_ca"},
      {"metrics_web:\n  basic_auth_user: prom\n", "basic_auth_password_hash"},
      {"metrics_web:\n  basic_auth_user: prom\n  basic_auth_password_hash: plaintext\n",
       "metrics_web.basic_auth_password_hash: is not a bcrypt hash"},
      {"metrics_web:\n  tls: {cert: /x}\n", "metrics_web.tls"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Config> config = ParseConfig(base + c.yaml, "t.yaml");
    ASSERT_FALSE(config.ok()) << c.yaml;
    EXPECT_TRUE(absl::StrContains(config.status().message(), c.error))
        << c.yaml << " -> " << config.status();
  }
  absl::StatusOr<Config> good = ParseConfig(
      base +
          "metrics_web:\n  tls_cert: /c.pem\n  tls_key: /c.key\n  basic_auth_user: prom\n"
          "  basic_auth_password_hash: '" +
          Bcrypt("pw") + "'\n",
      "t.yaml");
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_TRUE(good->metrics_web.tls());
  EXPECT_TRUE(good->metrics_web.basic_auth());
}

TEST(MetricsWebTest, DaemonRefusesToStartWithAnUnreadableCertificateAndNamesIt) {
  TempDir dir;
  const NodeSpec self{"node-a", FreePort(), FreePort()};
  const std::string config =
      dir.Write("a.yaml", LoopbackConfig(self, {self},
                                         "metrics_web:\n  tls_cert: /nonexistent/metrics.pem\n"
                                         "  tls_key: /nonexistent/metrics.key\n"));
  Process daemon({BinaryPath("gloowatchd"), "--config", config}, dir.path() + "/a.log");
  const std::optional<int> exit = daemon.Wait(absl::Seconds(20));
  ASSERT_TRUE(exit.has_value()) << "gloowatchd did not exit:\n" << daemon.Log();
  EXPECT_NE(*exit, 0);
  EXPECT_TRUE(absl::StrContains(daemon.Log(), "/nonexistent/metrics.pem")) << daemon.Log();
}

class MetricsWebPrometheusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kPrometheus, X_OK) != 0) GTEST_SKIP() << kPrometheus << " is not installed";
    absl::StatusOr<Pki> server = MakePki(dir_, "metrics");
    absl::StatusOr<Pki> scraper = MakePki(dir_, "scraper");
    ASSERT_TRUE(server.ok() && scraper.ok()) << server.status() << scraper.status();
    server_ = *server;
    scraper_ = *scraper;
    const std::string hash = Bcrypt("right password");
    ASSERT_EQ(hash.size(), 60u);
    cluster_ = std::make_unique<LoopbackCluster>(
        1, absl::StrCat(FastLoopbackYaml(), "metrics_web:\n  tls_cert: ", server_.cert,
                        "\n  tls_key: ", server_.key, "\n  tls_client_ca: ", scraper_.ca,
                        "\n  basic_auth_user: prometheus\n  basic_auth_password_hash: '", hash,
                        "'\n"));
    cluster_->Start(0);
  }

  // A scrape job of the daemon over https; `cert` adds the client
  // certificate.
  std::string Job(const std::string& name, const std::string& password, bool cert) const {
    return absl::StrCat("  - job_name: ", name,
                        "\n    scheme: https\n    tls_config:\n      ca_file: ", server_.ca, "\n",
                        cert ? absl::StrCat("      cert_file: ", scraper_.cert,
                                            "\n      key_file: ", scraper_.key, "\n")
                             : "",
                        "    basic_auth:\n      username: prometheus\n      password: '", password,
                        "'\n    static_configs:\n      - targets: ['127.0.0.1:",
                        cluster_->node(0).metrics_port, "']\n");
  }

  TempDir dir_;
  Pki server_, scraper_;
  std::unique_ptr<LoopbackCluster> cluster_;
};

TEST_F(MetricsWebPrometheusTest, OnlyTheAuthenticatedScraperGetsTheMetrics) {
  // Plain HTTP on the TLS port: the handshake fails and the connection is
  // dropped at once (the request timeout at the latest), never answered.
  EXPECT_FALSE(HttpGet(cluster_->node(0).metrics_port, "/metrics").ok());

  const int port = FreePort();
  const std::string config = dir_.Write(
      "prometheus.yml",
      absl::StrCat("global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n"
                   "scrape_configs:\n",
                   Job("good", "right password", true), Job("badpass", "wrong password", true),
                   Job("nocert", "right password", false)));
  std::unique_ptr<Process> prometheus = StartPrometheus(config, dir_.path(), port);

  // /api/v1/targets: every job scraped at least once, with its health and error.
  std::map<std::string, std::pair<std::string, std::string>> health;
  auto all_scraped = [&] {
    absl::StatusOr<std::string> body = HttpGet(port, "/api/v1/targets");
    if (!body.ok()) return false;
    const json reply = json::parse(*body, nullptr, /*allow_exceptions=*/false);
    if (reply.is_discarded()) return false;
    health.clear();
    for (const json& t : reply["data"]["activeTargets"]) {
      const std::string h = t.value("health", "");
      if (h == "unknown") continue;
      health[t["labels"].value("job", "")] = {h, t.value("lastError", "")};
    }
    return health.size() == 3;
  };
  ASSERT_TRUE(WaitFor(all_scraped, absl::Seconds(30)))
      << "Prometheus did not scrape every job; log:\n"
      << prometheus->Log();
  EXPECT_EQ(health["good"].first, "up") << health["good"].second;
  EXPECT_EQ(health["badpass"].first, "down");
  EXPECT_TRUE(absl::StrContains(health["badpass"].second, "401")) << health["badpass"].second;
  // Refused in the handshake, before any HTTP: Go reports the TLS alert, or
  // a reset when the alert races the close of a socket with unread data.
  EXPECT_EQ(health["nocert"].first, "down");
  EXPECT_FALSE(absl::StrContains(health["nocert"].second, "401")) << health["nocert"].second;
  EXPECT_TRUE(absl::StrContains(health["nocert"].second, "certificate") ||
              absl::StrContains(health["nocert"].second, "tls") ||
              absl::StrContains(health["nocert"].second, "reset"))
      << health["nocert"].second;

  // The metrics themselves came through TLS: the daemon's and its
  // transport's series, as scraped by job "good".
  auto has_series = [&] {
    absl::StatusOr<json> data =
        PrometheusQuery(port,
                        "count(gloowatch_build_info{job=\"good\"}) + "
                        "count(process_open_fds{job=\"good\",process=\"transport\"})");
    return data.ok() && !(*data)["result"].empty() && (*data)["result"][0]["value"][1] == "2";
  };
  EXPECT_TRUE(WaitFor(has_series, absl::Seconds(15))) << prometheus->Log();
}

}  // namespace
}  // namespace gloowatch::testing
