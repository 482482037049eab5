// `gloowatch health --prometheus` on bad input: each case a clear message
// naming the problem and its exit code (64 usage, 66 missing file, 69 server
// problem). Servers here are loopback sockets run by the test: one that
// refuses, one that never answers, web servers that are not Prometheus.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/free_port.h"
#include "tests/support/subprocess.h"

namespace gloowatch::testing {
namespace {

using ::testing::HasSubstr;

ProcessResult Cli(std::vector<std::string> args) {
  args.insert(args.begin(), {CliPath(), "health"});
  return RunProcess(args, std::nullopt, "", absl::Seconds(20));
}

// A listening socket on 127.0.0.1 (port chosen by the kernel).
int Listen(int* port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(fd, 16) != 0) {
    close(fd);
    return -1;
  }
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

// Answers every request with one canned HTTP response, until destroyed.
class CannedHttpServer {
 public:
  explicit CannedHttpServer(std::string response) : response_(std::move(response)) {
    fd_ = Listen(&port_);
    thread_ = std::thread([this] { Serve(); });
  }
  ~CannedHttpServer() {
    stop_ = true;
    thread_.join();
    close(fd_);
  }
  std::string Url() const { return absl::StrCat("http://127.0.0.1:", port_); }

 private:
  void Serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      // Read the request head and body (bounded), then answer.
      std::string request;
      char buf[4096];
      const absl::Time until = absl::Now() + absl::Seconds(2);
      while (absl::Now() < until) {
        pollfd q{c, POLLIN, 0};
        if (poll(&q, 1, 50) <= 0) {
          if (request.find("\r\n\r\n") != std::string::npos) break;
          continue;
        }
        const ssize_t n = read(c, buf, sizeof(buf));
        if (n <= 0) break;
        request.append(buf, static_cast<size_t>(n));
      }
      (void)!write(c, response_.data(), response_.size());
      close(c);
    }
  }

  std::string response_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

std::string Response(const std::string& status, const std::string& type, const std::string& body) {
  return absl::StrCat("HTTP/1.1 ", status, "\r\nContent-Type: ", type,
                      "\r\nContent-Length: ", body.size(), "\r\nConnection: close\r\n\r\n", body);
}

TEST(PrometheusCli, UnparsableUrlIsAUsageError) {
  for (const char* url : {"prom:9090", "ftp://prom:9090", "http://", "http://prom:99999",
                          "http://pr om:9090", "http://127.0.0.1:9090/?q=up"}) {
    ProcessResult r = Cli({"--prometheus", url});
    EXPECT_EQ(r.exit_code, 64) << url << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr("--prometheus:")) << url;
    EXPECT_THAT(r.err, HasSubstr(url)) << url;
  }
}

TEST(PrometheusCli, PrometheusAndDaemonsTogetherIsAUsageError) {
  ProcessResult r = Cli({"--prometheus", "http://127.0.0.1:9090", "--daemons", "127.0.0.1:7601"});
  EXPECT_EQ(r.exit_code, 64);
  EXPECT_THAT(r.err, HasSubstr("either --prometheus or one of --daemons"));
}

TEST(PrometheusCli, MissingFilesExit66) {
  ProcessResult r = Cli({"--prometheus", "http://127.0.0.1:9090", "--prometheus_bearer_token_file",
                         "/nonexistent/token"});
  EXPECT_EQ(r.exit_code, 66) << r.err;
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/token"));
  r = Cli({"--prometheus", "https://127.0.0.1:9090", "--tls_ca", "/nonexistent/ca.pem"});
  EXPECT_EQ(r.exit_code, 66) << r.err;
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/ca.pem"));
}

TEST(PrometheusCli, ConnectionRefusedNamesTheServer) {
  const std::string url = absl::StrCat("http://127.0.0.1:", FreePort());  // nothing listens
  ProcessResult r = Cli({"--prometheus", url});
  EXPECT_EQ(r.exit_code, 69) << r.err;
  EXPECT_THAT(r.err, HasSubstr("cannot reach Prometheus at " + url));
}

TEST(PrometheusCli, ServerThatNeverAnswersTimesOutWithinTheDeadline) {
  int port = 0;
  const int fd = Listen(&port);  // the kernel accepts; nobody ever answers
  ASSERT_GE(fd, 0);
  const absl::Time start = absl::Now();
  ProcessResult r =
      Cli({"--prometheus", absl::StrCat("http://127.0.0.1:", port), "--deadline", "1s"});
  const absl::Duration took = absl::Now() - start;
  close(fd);
  EXPECT_EQ(r.exit_code, 69) << r.err;
  EXPECT_THAT(r.err, HasSubstr("no answer within 1s"));
  EXPECT_LT(took, absl::Seconds(5));
}

TEST(PrometheusCli, WebServerThatIsNotPrometheus) {
  CannedHttpServer html(Response("200 OK", "text/html", "<html><body>Grafana</body></html>"));
  ProcessResult r = Cli({"--prometheus", html.Url()});
  EXPECT_EQ(r.exit_code, 69) << r.err;
  EXPECT_THAT(r.err, HasSubstr("without Prometheus query JSON (is this a Prometheus server?)"));
  EXPECT_THAT(r.err, HasSubstr(html.Url() + "/api/v1/query"));

  CannedHttpServer not_found(Response("404 Not Found", "text/plain", "404 page not found\n"));
  r = Cli({"--prometheus", not_found.Url() + "/prometheus"});
  EXPECT_EQ(r.exit_code, 69) << r.err;
  EXPECT_THAT(r.err, HasSubstr("answered HTTP 404"));
  EXPECT_THAT(r.err, HasSubstr("/prometheus/api/v1/query"));

  // JSON, but not the query API's.
  CannedHttpServer other_json(Response("200 OK", "application/json", "{\"status\":\"success\"}"));
  r = Cli({"--prometheus", other_json.Url()});
  EXPECT_EQ(r.exit_code, 69) << r.err;
  EXPECT_THAT(r.err, HasSubstr("instant vector"));
}

TEST(PrometheusCli, HttpErrorWithPrometheusErrorBody) {
  CannedHttpServer unavailable(
      Response("503 Service Unavailable", "application/json",
               R"({"status":"error","errorType":"unavailable","error":"TSDB not ready"})"));
  ProcessResult r = Cli({"--prometheus", unavailable.Url()});
  EXPECT_EQ(r.exit_code, 69) << r.err;
  EXPECT_THAT(r.err, HasSubstr("HTTP 503"));
  EXPECT_THAT(r.err, HasSubstr("TSDB not ready"));
}

TEST(PrometheusCli, EmptyPrometheusHasNoGloowatchSeries) {
  CannedHttpServer empty(
      Response("200 OK", "application/json",
               R"({"status":"success","data":{"resultType":"vector","result":[]}})"));
  ProcessResult r = Cli({"--prometheus", empty.Url()});
  EXPECT_EQ(r.exit_code, 69) << r.err;
  EXPECT_THAT(r.err, HasSubstr("no gloowatch series for {job=\"gloowatch\"}"));
  EXPECT_THAT(r.err, HasSubstr("--prometheus_job"));
}

// `gloowatch job NAME --prometheus` takes the same flags and fails the same way.
TEST(PrometheusCli, JobFromPrometheusHasTheSameErrors) {
  auto job = [](std::vector<std::string> args) {
    args.insert(args.begin(), {CliPath(), "job", "llm"});
    return RunProcess(args, std::nullopt, "", absl::Seconds(20));
  };
  ProcessResult r = job({"--prometheus", "prom:9090"});
  EXPECT_EQ(r.exit_code, 64) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--prometheus: 'prom:9090'"));
  r = job({"--prometheus", "http://127.0.0.1:9090", "--cluster", "c.yaml"});
  EXPECT_EQ(r.exit_code, 64) << r.err;
  EXPECT_THAT(r.err, HasSubstr("either --prometheus or one of --daemons"));
  int port = 0;
  const int fd = Listen(&port);
  ASSERT_GE(fd, 0);
  close(fd);
  const std::string url = absl::StrCat("http://127.0.0.1:", port);
  r = job({"--prometheus", url});
  EXPECT_EQ(r.exit_code, 69) << r.err;
  EXPECT_THAT(r.err, HasSubstr("gloowatch job: cannot reach Prometheus at " + url));
  CannedHttpServer web(Response("200 OK", "text/html", "<html>hello</html>"));
  r = job({"--prometheus", web.Url()});
  EXPECT_EQ(r.exit_code, 69) << r.err;
  EXPECT_THAT(r.err, HasSubstr("is this a Prometheus server?"));
}

}  // namespace
}  // namespace gloowatch::testing
