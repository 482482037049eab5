// gloowatch: operator CLI for gloowatchd clusters. Subcommand dispatch and
// flag plumbing only; the work lives in the modules.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/marshalling.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/cluster.h"
#include "client/cluster_at.h"
#include "client/diagnose.h"
#include "client/exit_codes.h"
#include "client/explain_log.h"
#include "client/fetch.h"
#include "client/html_page.h"
#include "client/job_prometheus.h"
#include "client/job_view.h"
#include "client/log_input.h"
#include "client/preflight.h"
#include "client/prometheus_source.h"
#include "client/render.h"
#include "client/serve.h"
#include "client/targets.h"
#include "common/flags.h"
#include "common/tls.h"
#include "common/version.h"

ABSL_FLAG(bool, json, false, "Print JSON instead of a table.");
ABSL_FLAG(std::string, color, "auto", "Colour: auto (only on a TTY), always, never.");
ABSL_FLAG(std::string, daemons, "", "Comma-separated daemon gRPC addresses host:port.");
ABSL_FLAG(std::string, config, "", "Daemon config YAML: ask the node and all its peers.");
ABSL_FLAG(std::string, cluster, "", "Cluster YAML: nodes: [{name, grpc}].");
ABSL_FLAG(absl::Duration, deadline, absl::Seconds(3),
          "Per-call deadline (gRPC, or each Prometheus query).");
ABSL_FLAG(std::string, prometheus, "",
          "health: read the cluster from this Prometheus server (http(s)://host:port[/prefix]) "
          "instead of asking every daemon.");
ABSL_FLAG(std::string, prometheus_job, "gloowatch",
          "health --prometheus: scrape job of the daemons' /metrics.");
ABSL_FLAG(std::string, prometheus_selector, "",
          "health --prometheus: extra label matchers for every query, e.g. cluster=\"eu1\".");
ABSL_FLAG(absl::Duration, prometheus_lookback, absl::Minutes(10),
          "health --prometheus: list nodes whose series stopped within this long as unreachable.");
ABSL_FLAG(std::string, prometheus_bearer_token_file, "",
          "health --prometheus: file holding a bearer token to send.");
ABSL_FLAG(std::vector<std::string>, prometheus_header, {},
          "health --prometheus: extra HTTP header 'Name: value' (repeatable), e.g. "
          "X-Scope-OrgID for Mimir.");
ABSL_FLAG(std::string, tls_ca, "", "CA bundle (PEM) that signed the daemons' certificates.");
ABSL_FLAG(std::string, tls_cert, "", "Client certificate (PEM) for daemons that run mutual TLS.");
ABSL_FLAG(std::string, tls_key, "", "Private key (PEM) of --tls_cert.");
ABSL_FLAG(std::string, html, "",
          "health: also write the heatmap page (one self-contained HTML file) to FILE; - = "
          "stdout, instead of the table.");
ABSL_FLAG(std::string, listen, "127.0.0.1:8080", "serve: HTTP address host:port of the page.");
ABSL_FLAG(absl::Duration, refresh, absl::Seconds(10),
          "serve: ask the cluster again this often; the page reloads as often.");
ABSL_FLAG(double, watch, 0, "Repeat every SECONDS (health); 0 = once.");
ABSL_FLAG(int, watch_count, 0, "Stop --watch after N rounds; 0 = until interrupted.");
ABSL_FLAG(std::string, report_path, "", "diagnose: where to write the JSON report (required).");
ABSL_FLAG(std::string, ports, "29500-29600", "diagnose: port range to scan on each peer host.");
ABSL_FLAG(std::string, ifname, "",
          "diagnose, preflight: the job's Gloo interface(s), comma-separated (default: "
          "GLOO_SOCKET_IFNAME).");
ABSL_FLAG(std::string, hosts, "",
          "preflight: the job's hosts, comma-separated, Slurm ranges allowed (node[01-04]); "
          "host:port for a daemon on another port.");
ABSL_FLAG(std::string, hostfile, "",
          "preflight: file with one host per line (Slurm ranges, '#' comments, 'host slots=N').");
ABSL_FLAG(std::string, nodelist, "",
          "preflight: a Slurm node list (default: SLURM_JOB_NODELIST when no other host list is "
          "given).");
ABSL_FLAG(int, daemon_port, 7601, "preflight: the daemons' gRPC port for hosts given without one.");
ABSL_FLAG(int, world_size, 0, "preflight: the job's world size (ranks); 0 = not checked.");
ABSL_FLAG(std::string, master, "",
          "preflight: the rendezvous store ADDR:PORT (default: MASTER_ADDR:MASTER_PORT).");
ABSL_FLAG(absl::Duration, timeout, absl::Seconds(10),
          "preflight: the job's Gloo timeout; pairs that do not connect within it fail.");
ABSL_FLAG(std::vector<std::string>, target, {}, "diagnose: extra host to scan (repeatable).");
ABSL_FLAG(std::string, training_config, "", "diagnose: training config YAML to audit.");
ABSL_FLAG(absl::Duration, connect_timeout, absl::Seconds(1), "diagnose: per-port connect timeout.");
ABSL_FLAG(absl::Duration, scan_timeout, absl::Seconds(30),
          "diagnose: total time bound per host scan.");
ABSL_FLAG(int, scan_concurrency, 64, "diagnose: connects in flight.");
ABSL_FLAG(std::string, daemon, "127.0.0.1:7601", "report-step: the local daemon.");
ABSL_FLAG(std::string, job, "", "report-step: job name.");
ABSL_FLAG(int, rank, -1, "report-step: rank (>= 0).");
ABSL_FLAG(int64_t, step, -1, "report-step: step number (>= 0).");
// NaN = not given: a negative value is given, and rejected by the daemon with
// its own message.
ABSL_FLAG(double, step_seconds, std::numeric_limits<double>::quiet_NaN(),
          "report-step: wall time of the step.");
ABSL_FLAG(double, comm_seconds, std::numeric_limits<double>::quiet_NaN(),
          "report-step: time spent in collectives during the step.");

namespace gloowatch::client {
namespace {

std::string ProgramUsage();

int Usage(const std::string& message) {
  std::cerr << "gloowatch: " << message << "\n" << ProgramUsage();
  return kExitUsage;
}

std::string DumpJson(const nlohmann::json& j) {
  // replace: log excerpts may hold invalid UTF-8.
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<PrometheusOptions> PrometheusFlags(absl::Duration deadline, int* exit);

int RunExplainLog(const std::vector<std::string>& args) {
  if (args.empty()) return Usage("explain-log takes FILE... (files, directories, or - for stdin)");
  // The flags first: a bad --prometheus is refused before any log is read.
  int exit = kExitOk;
  std::optional<PrometheusOptions> prometheus;
  if (!absl::GetFlag(FLAGS_prometheus).empty()) {
    prometheus = PrometheusFlags(absl::GetFlag(FLAGS_deadline), &exit);
    if (!prometheus) return exit;
  }
  absl::StatusOr<std::vector<std::string>> paths = ExpandLogPaths(args);
  if (!paths.ok() || paths->empty()) {
    std::cerr << "gloowatch explain-log: "
              << (paths.ok() ? "no files in the given directories" : paths.status().message())
              << "\n";
    return kExitNoInput;
  }
  std::vector<LogExplanation> logs;
  for (const std::string& path : *paths) {
    if (path == "-") {
      logs.push_back(ExplainLog(std::cin, "-"));
      continue;
    }
    absl::StatusOr<std::unique_ptr<std::istream>> in = OpenLog(path);
    if (!in.ok()) {
      std::cerr << "gloowatch explain-log: " << in.status().message() << "\n";
      return kExitNoInput;
    }
    logs.push_back(ExplainLog(**in, path));
  }
  // One log keeps the single-log output; several are explained as one job.
  const bool single = logs.size() == 1;
  const JobExplanation job = ExplainJob(std::move(logs));
  // What gloowatch saw on the links when the root cause was logged.
  std::optional<ClusterAtTime> cluster;
  std::string skipped;
  if (prometheus) {
    const SignatureHit* root =
        job.root.log < 0 ? nullptr : &job.logs[job.root.log].hits[job.root.hit];
    if (root == nullptr || root->time_kind != LogTimeKind::kDated) {
      skipped =
          root == nullptr ? "no error to look up" : "the root cause's line has no dated timestamp";
    } else {
      absl::StatusOr<ClusterAtTime> at = ClusterAt(*prometheus, root->time_seconds);
      if (!at.ok()) {
        std::cerr << "gloowatch explain-log: " << at.status().message() << "\n";
        return kExitUnavailable;
      }
      cluster = *std::move(at);
    }
  }
  if (absl::GetFlag(FLAGS_json)) {
    nlohmann::json out = single ? ExplanationToJson(job.logs[0]) : JobToJson(job);
    if (prometheus) {
      out["cluster_at_failure"] =
          cluster ? ClusterAtToJson(*cluster) : nlohmann::json{{"skipped", skipped}};
    }
    std::cout << DumpJson(out) << "\n";
  } else {
    std::cout << (single ? RenderExplanationText(job.logs[0]) : RenderJobText(job));
    if (prometheus) {
      std::cout << "\n"
                << (cluster ? RenderClusterAt(*cluster, prometheus->url)
                            : absl::StrCat("cluster view: ", skipped, "\n"));
    }
  }
  return JobExitCode(job);
}

// --color=auto follows no-color.org (NO_COLOR set and not empty) and
// TERM=dumb; --color was validated by Main.
bool UseColor(int fd) {
  const std::string c = absl::GetFlag(FLAGS_color);
  if (c != "auto") return c == "always";
  const char* no_color = std::getenv("NO_COLOR");
  const char* term = std::getenv("TERM");
  return isatty(fd) && (no_color == nullptr || *no_color == '\0') &&
         !(term != nullptr && std::string(term) == "dumb");
}

// Daemons from exactly one of --daemons / --config / --cluster.
absl::StatusOr<std::vector<DaemonTarget>> DaemonTargets(bool required) {
  const int given = !absl::GetFlag(FLAGS_daemons).empty() + !absl::GetFlag(FLAGS_config).empty() +
                    !absl::GetFlag(FLAGS_cluster).empty();
  if (given > 1)
    return absl::InvalidArgumentError("give only one of --daemons, --config, --cluster");
  if (given == 0) {
    if (required) return absl::InvalidArgumentError("need --daemons, --config or --cluster");
    return std::vector<DaemonTarget>{};
  }
  if (!absl::GetFlag(FLAGS_daemons).empty()) return ParseDaemonList(absl::GetFlag(FLAGS_daemons));
  if (!absl::GetFlag(FLAGS_config).empty()) return LoadDaemonConfig(absl::GetFlag(FLAGS_config));
  return LoadClusterFile(absl::GetFlag(FLAGS_cluster));
}

int InputError(const absl::Status& s) {
  std::cerr << "gloowatch: " << s.message() << "\n";
  if (absl::IsNotFound(s)) return kExitNoInput;
  return absl::IsInvalidArgument(s) && absl::StrContains(s.message(), "--") ? kExitUsage
                                                                            : kExitDataErr;
}

// --tls_ca/--tls_cert/--tls_key: all three for mutual TLS, or none.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> Credentials() {
  TlsConfig files{absl::GetFlag(FLAGS_tls_ca), absl::GetFlag(FLAGS_tls_cert),
                  absl::GetFlag(FLAGS_tls_key)};
  const int set = !files.ca_file.empty() + !files.cert_file.empty() + !files.key_file.empty();
  if (set != 0 && set != 3) {
    return absl::InvalidArgumentError("give all of --tls_ca, --tls_cert and --tls_key, or none");
  }
  absl::StatusOr<TlsMaterial> tls = LoadTls(files);
  if (!tls.ok()) return tls.status();
  return MakeChannelCredentials(*tls);
}

int RunDiagnoseCommand(const std::vector<std::string>& args) {
  if (!args.empty()) return Usage(absl::StrCat("diagnose takes no arguments, got '", args[0], "'"));
  DiagnoseOptions o;
  const std::string report_path = absl::GetFlag(FLAGS_report_path);
  if (report_path.empty()) return Usage("diagnose needs --report-path FILE");
  auto daemons = DaemonTargets(false);
  if (!daemons.ok()) return InputError(daemons.status());
  o.daemons = *daemons;
  o.targets = absl::GetFlag(FLAGS_target);
  auto range = ParsePortRange(absl::GetFlag(FLAGS_ports));
  if (!range.ok()) return Usage(std::string(range.status().message()));
  std::tie(o.port_low, o.port_high) = *range;
  o.ifname = absl::GetFlag(FLAGS_ifname);
  o.training_config = absl::GetFlag(FLAGS_training_config);
  o.deadline = absl::GetFlag(FLAGS_deadline);
  auto credentials = Credentials();
  if (!credentials.ok()) return InputError(credentials.status());
  o.credentials = *credentials;
  o.scan.connect_timeout = absl::GetFlag(FLAGS_connect_timeout);
  o.scan.total_timeout = absl::GetFlag(FLAGS_scan_timeout);
  o.scan.concurrency = absl::GetFlag(FLAGS_scan_concurrency);
  if (o.scan.concurrency < 1 || o.scan.concurrency > 1024) {
    return Usage("--scan_concurrency must be 1..1024");
  }
  o.env = CurrentEnvironment();
  DiagnoseReport report = RunDiagnose(o);
  if (report_path == "-") {
    // The JSON on stdout for a pipe; the human report moves to stderr.
    std::cout << DumpJson(ReportToJson(report, o)) << "\n";
    std::cerr << RenderReportText(report, UseColor(STDERR_FILENO));
    return report.ExitCode();
  }
  {
    std::ofstream out(report_path, std::ios::trunc);
    out << DumpJson(ReportToJson(report, o)) << "\n";
    if (!out) {
      std::cerr << "gloowatch diagnose: cannot write '" << report_path
                << "': " << std::strerror(errno) << "\n";
      return kExitCantCreate;
    }
  }
  std::cout << RenderReportText(report, UseColor(STDOUT_FILENO)) << "report: " << report_path
            << "\n";
  return report.ExitCode();
}

// --prometheus and its companions (health, explain-log); exit code in *exit
// on error.
std::optional<PrometheusOptions> PrometheusFlags(absl::Duration deadline, int* exit) {
  PrometheusOptions o;
  o.url = absl::GetFlag(FLAGS_prometheus);
  o.job = absl::GetFlag(FLAGS_prometheus_job);
  o.selector = absl::GetFlag(FLAGS_prometheus_selector);
  o.lookback = absl::GetFlag(FLAGS_prometheus_lookback);
  o.http.timeout = deadline;
  o.http.ca_file = absl::GetFlag(FLAGS_tls_ca);
  o.http.cert_file = absl::GetFlag(FLAGS_tls_cert);
  o.http.key_file = absl::GetFlag(FLAGS_tls_key);
  o.http.headers = absl::GetFlag(FLAGS_prometheus_header);
  if (!absl::GetFlag(FLAGS_daemons).empty() || !absl::GetFlag(FLAGS_config).empty() ||
      !absl::GetFlag(FLAGS_cluster).empty()) {
    *exit = Usage("give either --prometheus or one of --daemons, --config, --cluster");
    return std::nullopt;
  }
  if (absl::Status s = ValidateHttpUrl(o.url); !s.ok()) {
    *exit = Usage(absl::StrCat("--prometheus: ", s.message()));
    return std::nullopt;
  }
  if (o.job.empty()) {
    *exit = Usage("--prometheus_job must not be empty");
    return std::nullopt;
  }
  if (o.lookback < absl::Seconds(1) || o.lookback > absl::Hours(24 * 7)) {
    *exit = Usage("--prometheus_lookback must be in [1s, 7d]");
    return std::nullopt;
  }
  if (o.http.cert_file.empty() != o.http.key_file.empty()) {
    *exit = Usage("give both --tls_cert and --tls_key, or neither");
    return std::nullopt;
  }
  for (const std::string& h : o.http.headers) {
    if (h.find(':') == std::string::npos || h.find_first_of("\r\n") != std::string::npos) {
      *exit = Usage(absl::StrCat("--prometheus_header '", h, "' is not 'Name: value'"));
      return std::nullopt;
    }
  }
  for (const std::string& f : {o.http.ca_file, o.http.cert_file, o.http.key_file}) {
    if (!f.empty() && access(f.c_str(), R_OK) != 0) {
      std::cerr << "gloowatch: cannot read '" << f << "': " << std::strerror(errno) << "\n";
      *exit = kExitNoInput;
      return std::nullopt;
    }
  }
  if (const std::string path = absl::GetFlag(FLAGS_prometheus_bearer_token_file); !path.empty()) {
    std::ifstream in(path);
    if (!in) {
      std::cerr << "gloowatch: cannot read --prometheus_bearer_token_file '" << path
                << "': " << std::strerror(errno) << "\n";
      *exit = kExitNoInput;
      return std::nullopt;
    }
    std::getline(in, o.http.bearer_token);
    while (!o.http.bearer_token.empty() &&
           std::isspace(static_cast<unsigned char>(o.http.bearer_token.back()))) {
      o.http.bearer_token.pop_back();
    }
  }
  return o;
}

// Where health and serve read the cluster from, from the flags.
struct ClusterSource {
  std::optional<PrometheusOptions> prometheus;
  std::vector<DaemonTarget> targets;
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  absl::Duration deadline;
};

// nullopt with *exit set when a flag is wrong.
std::optional<ClusterSource> SourceFromFlags(int* exit) {
  ClusterSource s;
  s.deadline = absl::GetFlag(FLAGS_deadline);
  if (s.deadline <= absl::ZeroDuration() || s.deadline > absl::Minutes(10)) {
    *exit = Usage("--deadline must be in (0, 10m]");
    return std::nullopt;
  }
  if (!absl::GetFlag(FLAGS_prometheus).empty()) {
    s.prometheus = PrometheusFlags(s.deadline, exit);
    if (!s.prometheus) return std::nullopt;
    return s;
  }
  absl::StatusOr<std::vector<DaemonTarget>> targets = DaemonTargets(true);
  if (!targets.ok()) {
    *exit = InputError(targets.status());
    return std::nullopt;
  }
  s.targets = *std::move(targets);
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials = Credentials();
  if (!credentials.ok()) {
    *exit = InputError(credentials.status());
    return std::nullopt;
  }
  s.credentials = *credentials;
  return s;
}

absl::StatusOr<ClusterPicture> Observe(const ClusterSource& s) {
  if (!s.prometheus) return BuildCluster(FetchAll(s.targets, s.deadline, s.credentials));
  absl::StatusOr<std::vector<FetchResult>> nodes = FetchFromPrometheus(*s.prometheus);
  if (!nodes.ok()) return nodes.status();
  ClusterPicture c = BuildCluster(*std::move(nodes));
  c.source = "prometheus";
  c.source_url = s.prometheus->url;
  return c;
}

// `text` to `path` (- = stdout), replacing it whole: a reader (or a browser
// reloading it under --watch) never sees half a page. 0 or 73.
int WriteOutput(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::cout << text << std::flush;
    return kExitOk;
  }
  const std::string tmp = absl::StrCat(path, ".tmp");
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (out.flush() && std::rename(tmp.c_str(), path.c_str()) == 0) return kExitOk;
  }
  std::cerr << "gloowatch: cannot write '" << path << "': " << std::strerror(errno) << "\n";
  std::remove(tmp.c_str());
  return kExitCantCreate;
}

int RunHealth(const std::vector<std::string>& args) {
  if (!args.empty()) return Usage(absl::StrCat("health takes no arguments, got '", args[0], "'"));
  int exit = kExitUsage;
  std::optional<ClusterSource> source = SourceFromFlags(&exit);
  if (!source) return exit;
  const double watch = absl::GetFlag(FLAGS_watch);
  if (watch < 0 || std::isnan(watch)) return Usage("--watch must be >= 0 seconds");
  const int rounds = absl::GetFlag(FLAGS_watch_count);
  const bool color = UseColor(STDOUT_FILENO);
  const std::string html = absl::GetFlag(FLAGS_html);
  int code = kExitOk;
  for (int round = 0;; ++round) {
    const absl::Time start = absl::Now();
    absl::StatusOr<ClusterPicture> c = Observe(*source);
    if (!c.ok()) {
      std::cerr << "gloowatch health: " << c.status().message() << "\n";
      return absl::IsInvalidArgument(c.status()) ? kExitUsage : kExitUnavailable;
    }
    code = c->ExitCode();
    if (!html.empty()) {
      if (int w = WriteOutput(html, RenderHealthHtml(*c)); w != kExitOk) return w;
    }
    if (html == "-") {
      // The page is stdout's only content.
    } else if (absl::GetFlag(FLAGS_json)) {
      std::cout << HealthToJson(*c).dump(watch > 0 ? -1 : 2) << std::endl;  // NDJSON when watching
    } else {
      if (watch > 0 && isatty(STDOUT_FILENO)) std::cout << "\033[H\033[2J";
      std::cout << RenderHealthText(*c, color) << std::flush;
    }
    if (watch <= 0 || (rounds > 0 && round + 1 >= rounds)) break;
    absl::SleepFor(absl::Seconds(watch) - (absl::Now() - start));
  }
  return code;
}

int RunServe(const std::vector<std::string>& args) {
  if (!args.empty()) return Usage(absl::StrCat("serve takes no arguments, got '", args[0], "'"));
  int exit = kExitUsage;
  std::optional<ClusterSource> source = SourceFromFlags(&exit);
  if (!source) return exit;
  const absl::Duration refresh = absl::GetFlag(FLAGS_refresh);
  if (refresh < absl::Seconds(1) || refresh > absl::Hours(1)) {
    return Usage("--refresh must be in [1s, 1h]");
  }
  absl::StatusOr<Endpoint> listen = ParseEndpoint(absl::GetFlag(FLAGS_listen));
  if (!listen.ok()) return Usage(absl::StrCat("--listen: ", listen.status().message()));
  absl::StatusOr<std::unique_ptr<PageServer>> server = PageServer::Listen(*listen, {});
  if (!server.ok()) {
    std::cerr << "gloowatch serve: " << server.status().message() << "\n";
    return absl::IsInvalidArgument(server.status()) ? kExitUsage : kExitUnavailable;
  }
  std::cerr << "gloowatch serve: http://"
            << Endpoint{listen->host, static_cast<uint16_t>((*server)->port())}.ToString()
            << "/ (refresh " << absl::FormatDuration(refresh) << ")" << std::endl;
  absl::Status s = ServeHealth(
      **server, [&] { return Observe(*source); }, refresh);
  if (!s.ok()) {
    std::cerr << "gloowatch serve: " << s.message() << "\n";
    return kExitUnavailable;
  }
  return kExitOk;
}

int RunReportStep(const std::vector<std::string>& args) {
  if (!args.empty())
    return Usage(absl::StrCat("report-step takes no arguments, got '", args[0], "'"));
  auto daemon = ParseEndpoint(absl::GetFlag(FLAGS_daemon));
  if (!daemon.ok()) return Usage(absl::StrCat("--daemon: ", daemon.status().message()));
  // Only presence is checked here; the daemon validates values and its
  // INVALID_ARGUMENT message is shown as is.
  if (absl::GetFlag(FLAGS_job).empty()) return Usage("report-step needs --job");
  if (absl::GetFlag(FLAGS_rank) < 0) return Usage("report-step needs --rank >= 0");
  if (absl::GetFlag(FLAGS_step) < 0) return Usage("report-step needs --step >= 0");
  if (std::isnan(absl::GetFlag(FLAGS_step_seconds)))
    return Usage("report-step needs --step-seconds");
  if (std::isnan(absl::GetFlag(FLAGS_comm_seconds)))
    return Usage("report-step needs --comm-seconds");
  v1::ReportStepRequest r;
  r.set_job(absl::GetFlag(FLAGS_job));
  r.set_rank(absl::GetFlag(FLAGS_rank));
  r.set_step(static_cast<uint64_t>(absl::GetFlag(FLAGS_step)));
  r.set_step_seconds(absl::GetFlag(FLAGS_step_seconds));
  r.set_communication_seconds(absl::GetFlag(FLAGS_comm_seconds));
  auto credentials = Credentials();
  if (!credentials.ok()) return InputError(credentials.status());
  absl::Status s = SendReportStep(*daemon, r, absl::GetFlag(FLAGS_deadline), *credentials);
  if (s.ok()) return kExitOk;
  std::cerr << "gloowatch report-step: " << daemon->ToString() << ": " << s.message() << "\n";
  return absl::IsInvalidArgument(s) || absl::IsResourceExhausted(s) ? kExitDataErr
                                                                    : kExitUnavailable;
}

int RunJob(const std::vector<std::string>& args) {
  if (args.size() != 1) return Usage("job takes one training job name");
  int exit = kExitUsage;
  std::optional<ClusterSource> source = SourceFromFlags(&exit);
  if (!source) return exit;
  absl::StatusOr<std::vector<FetchResult>> nodes =
      source->prometheus ? FetchJobFromPrometheus(*source->prometheus, args[0])
                         : FetchAll(source->targets, source->deadline, source->credentials);
  if (!nodes.ok()) {
    std::cerr << "gloowatch job: " << nodes.status().message() << "\n";
    return absl::IsInvalidArgument(nodes.status()) ? kExitUsage : kExitUnavailable;
  }
  absl::StatusOr<JobView> view = BuildJobView(*nodes, args[0]);
  if (!view.ok()) {
    std::cerr << "gloowatch job: " << view.status().message() << "\n";
    return kExitNoInput;
  }
  std::cout << (absl::GetFlag(FLAGS_json) ? JobToJson(*view).dump(2) + "\n" : RenderJobText(*view));
  return view->ExitCode();
}

// The preflight's hosts, from exactly one of its sources.
absl::StatusOr<std::vector<DaemonTarget>> PreflightHosts() {
  const std::string hosts = absl::GetFlag(FLAGS_hosts);
  const std::string hostfile = absl::GetFlag(FLAGS_hostfile);
  std::string nodelist = absl::GetFlag(FLAGS_nodelist);
  auto daemons = DaemonTargets(false);
  if (!daemons.ok()) return daemons.status();
  const int given = !hosts.empty() + !hostfile.empty() + !nodelist.empty() + !daemons->empty();
  if (given > 1) {
    return absl::InvalidArgumentError(
        "give only one of --hosts, --hostfile, --nodelist, --daemons, --config, --cluster");
  }
  if (!daemons->empty()) return daemons;
  const int port = absl::GetFlag(FLAGS_daemon_port);
  if (port < 1 || port > 65535) return absl::InvalidArgumentError("--daemon_port must be 1..65535");
  std::vector<std::string> lines;
  if (!hostfile.empty()) {
    auto read = ReadHostfile(hostfile);
    if (!read.ok()) return read.status();
    lines = *std::move(read);
  } else {
    if (given == 0) {
      const char* env = std::getenv("SLURM_JOB_NODELIST");
      if (env == nullptr || *env == '\0') {
        return absl::InvalidArgumentError(
            "preflight needs the job's hosts: --hosts, --hostfile, --nodelist (or "
            "SLURM_JOB_NODELIST), --daemons, --config or --cluster");
      }
      nodelist = env;
    }
    lines.push_back(hosts.empty() ? nodelist : hosts);
  }
  auto parsed = ParsePreflightHosts(lines, static_cast<uint16_t>(port));
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--hosts: ", parsed.status().message()));
  }
  return parsed;
}

int RunPreflightCommand(const std::vector<std::string>& args) {
  if (!args.empty())
    return Usage(absl::StrCat("preflight takes no arguments, got '", args[0], "'"));
  PreflightOptions o;
  auto hosts = PreflightHosts();
  if (!hosts.ok()) {
    if (absl::IsNotFound(hosts.status())) return InputError(hosts.status());
    return Usage(std::string(hosts.status().message()));
  }
  o.hosts = *std::move(hosts);
  if (o.hosts.size() < 2) return Usage("preflight needs at least two hosts");
  o.world_size = absl::GetFlag(FLAGS_world_size);
  if (o.world_size < 0 || (o.world_size > 0 && o.world_size < static_cast<int>(o.hosts.size()))) {
    return Usage(
        absl::StrCat("--world_size ", o.world_size, " is below the ", o.hosts.size(), " hosts"));
  }
  o.socket_ifname = absl::GetFlag(FLAGS_ifname);
  if (o.socket_ifname.empty()) {
    if (const char* env = std::getenv("GLOO_SOCKET_IFNAME")) o.socket_ifname = env;
  }
  std::string master = absl::GetFlag(FLAGS_master);
  if (master.empty()) {
    const char* addr = std::getenv("MASTER_ADDR");
    const char* port = std::getenv("MASTER_PORT");
    const bool have_addr = addr != nullptr && *addr != '\0';
    const bool have_port = port != nullptr && *port != '\0';
    if (have_addr != have_port) {
      return Usage(absl::StrCat(have_addr ? "MASTER_ADDR" : "MASTER_PORT", " is set but ",
                                have_addr ? "MASTER_PORT" : "MASTER_ADDR",
                                " is not; give --master ADDR:PORT"));
    }
    if (have_addr) {
      master = std::string(addr).find(':') != std::string::npos
                   ? absl::StrCat("[", addr, "]:", port)
                   : absl::StrCat(addr, ":", port);
    }
  }
  if (!master.empty()) {
    auto ep = ParseEndpoint(master);
    if (!ep.ok()) return Usage(absl::StrCat("--master: ", ep.status().message()));
    o.master_addr = ep->host;
    o.master_port = ep->port;
  }
  o.timeout = absl::GetFlag(FLAGS_timeout);
  if (o.timeout < absl::Milliseconds(1) || o.timeout > absl::Hours(1)) {
    return Usage("--timeout must be in [1ms, 1h]");
  }
  o.deadline = std::max(absl::GetFlag(FLAGS_deadline), absl::Seconds(10));
  auto credentials = Credentials();
  if (!credentials.ok()) return InputError(credentials.status());
  o.credentials = *credentials;
  PreflightReport report = RunPreflight(o);
  std::cout << (absl::GetFlag(FLAGS_json) ? PreflightToJson(report).dump(2) + "\n"
                                          : RenderPreflightText(report));
  return report.exit_code;
}

struct Command {
  const char* name;
  const char* usage;  // after "gloowatch "
  const char* summary;
  int (*run)(const std::vector<std::string>& args);
  std::vector<std::string> flags;
};

const std::vector<std::string> kDaemonFlags = {"daemons", "config",   "cluster", "deadline",
                                               "tls_ca",  "tls_cert", "tls_key"};

std::vector<std::string> With(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Where health and serve read the cluster from.
const std::vector<std::string> kSourceFlags = With(
    kDaemonFlags, {"prometheus", "prometheus_job", "prometheus_selector", "prometheus_lookback",
                   "prometheus_bearer_token_file", "prometheus_header"});

const std::vector<Command>& Commands() {
  static const auto* commands = new std::vector<Command>{
      {"health",
       "health (--daemons A,B | --config FILE | --cluster FILE | --prometheus URL) [flags]",
       "cluster health: matrices, worst links, verdict", RunHealth,
       With(kSourceFlags, {"json", "color", "watch", "watch_count", "html"})},
      {"serve",
       "serve [--listen HOST:PORT] (--daemons A,B | --config FILE | --cluster FILE | "
       "--prometheus URL) [flags]",
       "serve the heatmap page live over HTTP (GET / and /health.json)", RunServe,
       With(kSourceFlags, {"listen", "refresh"})},
      {"diagnose", "diagnose --report-path FILE|- [flags]",
       "connectivity and environment checks of a Gloo setup", RunDiagnoseCommand,
       With(kDaemonFlags, {"color", "report_path", "ports", "ifname", "target", "training_config",
                           "connect_timeout", "scan_timeout", "scan_concurrency"})},
      {"preflight",
       "preflight (--hosts A,B | --hostfile F | --nodelist node[01-04] | --daemons A,B | ...) "
       "[--world_size N] [--ifname IF] [--master ADDR:PORT] [--timeout 10s] [--json]",
       "before a job: each host's Gloo address, a real Gloo full mesh at the job's timeout, "
       "and the store; exit 0 go, 1 degraded, 2 do not start",
       RunPreflightCommand,
       With(kDaemonFlags, {"json", "hosts", "hostfile", "nodelist", "daemon_port", "world_size",
                           "ifname", "master", "timeout"})},
      {"explain-log",
       "explain-log [--json] [--prometheus URL] FILE|DIR|- [FILE|DIR ...]",
       "explain Gloo / PyTorch failures in logs (.gz and .zst too)",
       RunExplainLog,
       {"json", "prometheus", "prometheus_job", "prometheus_selector",
        "prometheus_bearer_token_file", "prometheus_header", "deadline", "tls_ca"}},
      {"job",
       "job NAME (--daemons A,B | --config FILE | --cluster FILE | --prometheus URL) [--json]",
       "which ranks of a training job wait in which collective, and for whom, and the links "
       "between them",
       RunJob, With(kSourceFlags, {"json"})},
      {"report-step",
       "report-step --job J --rank R --step N --step-seconds S --comm-seconds C [flags]",
       "send one training-step report to the local daemon",
       RunReportStep,
       {"daemon", "job", "rank", "step", "step_seconds", "comm_seconds", "deadline", "tls_ca",
        "tls_cert", "tls_key"}},
  };
  return *commands;
}

constexpr char kExitCodes[] =
    "exit codes: 0 healthy / nothing found, 1 degraded / warnings, 2 failed / errors,\n"
    "  64 usage, 65 bad data, 66 input missing, 69 unavailable, 73 cannot create output\n";

std::string ProgramUsage() {
  std::string out =
      "usage: gloowatch COMMAND [flags]   (gloowatch COMMAND --help for its flags)\n"
      "commands:\n";
  for (const Command& c : Commands()) {
    absl::StrAppend(&out, "  ", absl::StrFormat("%-12s", c.name), " ", c.summary, "\n");
  }
  absl::StrAppend(&out, "  --version    print the version\n", kExitCodes,
                  "see docs/client.md for every flag, exit code and JSON schema\n");
  return out;
}

int Main(int argc, char** argv) {
  if (argc < 2) return Usage("missing command");
  const std::string command = argv[1];
  if (command == "help" || command == "--help" || command == "-h") {
    std::cout << ProgramUsage();
    return kExitOk;
  }
  if (command == "--version" || command == "version") {
    std::cout << "gloowatch " << GLOOWATCH_VERSION << "\n";
    return kExitOk;
  }
  for (const Command& c : Commands()) {
    if (command != c.name) continue;
    if (WantsHelp(argc, argv, 2)) {
      std::cout << "usage: gloowatch " << c.usage << "\n"
                << c.summary << "\n\nflags:\n"
                << DescribeFlags(c.flags) << kExitCodes;
      return kExitOk;
    }
    auto args = ParseFlags(argc, argv, 2, {{"target", "prometheus_header"}, c.flags});
    if (!args.ok()) {
      return Usage(
          absl::StrCat(c.name, ": ", args.status().message(), " (gloowatch ", c.name, " --help)"));
    }
    const std::string color = absl::GetFlag(FLAGS_color);
    if (color != "auto" && color != "always" && color != "never") {
      return Usage(absl::StrCat("--color must be auto, always or never, got '", color, "'"));
    }
    return c.run(*args);
  }
  return Usage(absl::StrCat("unknown command '", command, "'"));
}

}  // namespace
}  // namespace gloowatch::client

int main(int argc, char** argv) { return gloowatch::client::Main(argc, argv); }
