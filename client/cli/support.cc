#include "client/cli/support.h"

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/cli/command.h"
#include "client/core/plural.h"
#include "client/sources/fetch.h"
#include "common/exit_codes.h"
#include "common/tls.h"

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
ABSL_FLAG(std::string, ifname, "",
          "diagnose, preflight: the job's Gloo interface(s), comma-separated (default: "
          "GLOO_SOCKET_IFNAME).");

namespace gloowatch::client {

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

std::string DumpJson(const nlohmann::json& j) {
  // replace: log excerpts may hold invalid UTF-8.
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

// --color=auto follows no-color.org (NO_COLOR set and not empty) and
// TERM=dumb; --color was validated by RunCli.
bool UseColor(int fd) {
  const std::string c = absl::GetFlag(FLAGS_color);
  if (c != "auto") return c == "always";
  const char* no_color = std::getenv("NO_COLOR");
  const char* term = std::getenv("TERM");
  return isatty(fd) && (no_color == nullptr || *no_color == '\0') &&
         !(term != nullptr && std::string(term) == "dumb");
}

std::string ThisHost() {
  char name[256] = {0};
  if (gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

absl::StatusOr<std::vector<DaemonTarget>> ExplicitDaemonTargets() {
  const int given = !absl::GetFlag(FLAGS_daemons).empty() + !absl::GetFlag(FLAGS_config).empty() +
                    !absl::GetFlag(FLAGS_cluster).empty();
  if (given > 1)
    return absl::InvalidArgumentError("give only one of --daemons, --config, --cluster");
  if (!absl::GetFlag(FLAGS_daemons).empty()) return ParseDaemonList(absl::GetFlag(FLAGS_daemons));
  if (!absl::GetFlag(FLAGS_config).empty()) {
    return LoadDaemonConfig(absl::GetFlag(FLAGS_config), ThisHost());
  }
  if (!absl::GetFlag(FLAGS_cluster).empty()) return LoadClusterFile(absl::GetFlag(FLAGS_cluster));
  return std::vector<DaemonTarget>{};
}

std::optional<std::string> DefaultConfigPath() {
  if (const char* env = std::getenv(kConfigEnv); env != nullptr) {
    if (*env == '\0') return std::nullopt;  // set but empty: no default
    return std::string(env);
  }
  if (access(kDefaultConfig, F_OK) == 0) return std::string(kDefaultConfig);
  return std::nullopt;
}

absl::StatusOr<std::vector<DaemonTarget>> DefaultDaemonTargets() {
  const std::optional<std::string> path = DefaultConfigPath();
  if (!path) return std::vector<DaemonTarget>{};
  const bool from_env = std::getenv(kConfigEnv) != nullptr;
  absl::StatusOr<std::vector<DaemonTarget>> targets = LoadDaemonConfig(*path, ThisHost());
  if (!targets.ok()) {
    return absl::Status(targets.status().code(),
                        absl::StrCat(targets.status().message(),
                                     from_env ? absl::StrCat(" (", kConfigEnv, ")") : ""));
  }
  // Which file decided is not obvious from the command line: say it.
  std::cerr << "gloowatch: asking the " << Counted(targets->size(), "daemon") << " of " << *path
            << (from_env ? absl::StrCat(" (", kConfigEnv, ")") : "") << "\n";
  return targets;
}

absl::StatusOr<std::vector<DaemonTarget>> DaemonTargets(bool required) {
  absl::StatusOr<std::vector<DaemonTarget>> targets = ExplicitDaemonTargets();
  if (!targets.ok() || !targets->empty()) return targets;
  targets = DefaultDaemonTargets();
  if (!targets.ok() || !targets->empty() || !required) return targets;
  if (std::getenv(kConfigEnv) != nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("need --daemons, --config or --cluster (",
                                                   kConfigEnv, " is empty: no default config)"));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("need --daemons, --config or --cluster: there is no ", kDefaultConfig,
                   " on this host (", kConfigEnv, " may name another daemon config)"));
}

int InputError(const absl::Status& s) {
  std::cerr << "gloowatch: " << s.message() << "\n";
  if (absl::IsNotFound(s)) return kExitNoInput;
  return absl::IsInvalidArgument(s) && absl::StrContains(s.message(), "--") ? kExitUsage
                                                                            : kExitDataErr;
}

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

}  // namespace gloowatch::client
