// What several commands share: the flags that choose the daemons or the
// Prometheus to read, TLS, colour and JSON output, and the way a flag or
// input error becomes an exit code.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/core/targets.h"
#include "client/health/cluster.h"
#include "client/sources/prometheus_source.h"
#include "grpcpp/security/credentials.h"
#include "nlohmann/json.hpp"

ABSL_DECLARE_FLAG(bool, json);
ABSL_DECLARE_FLAG(std::string, color);
ABSL_DECLARE_FLAG(std::string, daemons);
ABSL_DECLARE_FLAG(std::string, config);
ABSL_DECLARE_FLAG(std::string, cluster);
ABSL_DECLARE_FLAG(absl::Duration, deadline);
ABSL_DECLARE_FLAG(std::string, prometheus);
ABSL_DECLARE_FLAG(std::string, ifname);

namespace gloowatch::client {

// The flags that name the daemons to ask, and the ones that add Prometheus.
extern const std::vector<std::string> kDaemonFlags;
extern const std::vector<std::string> kSourceFlags;
std::vector<std::string> With(std::vector<std::string> a, const std::vector<std::string>& b);

std::string DumpJson(const nlohmann::json& j);

// Whether to colour output on `fd` (--color; auto follows no-color.org and
// TERM=dumb on a TTY).
bool UseColor(int fd);

// The daemon config a command reads when no flag names its daemons:
// $GLOOWATCH_CONFIG (set but empty: none), else /etc/gloowatch/gloowatchd.yaml
// when it exists.
inline constexpr char kDefaultConfig[] = "/etc/gloowatch/gloowatchd.yaml";
inline constexpr char kConfigEnv[] = "GLOOWATCH_CONFIG";
std::optional<std::string> DefaultConfigPath();

// This host's name, as systemd's %H has it (the fleet file's drop-in starts
// gloowatchd with --node %H).
std::string ThisHost();

// Daemons from exactly one of --daemons / --config / --cluster; an empty
// list when none is given.
absl::StatusOr<std::vector<DaemonTarget>> ExplicitDaemonTargets();
// The daemons of the default config (saying on stderr which file it read);
// an empty list when there is none.
absl::StatusOr<std::vector<DaemonTarget>> DefaultDaemonTargets();
// The explicit ones, else the default config's; none is an error when
// `required`.
absl::StatusOr<std::vector<DaemonTarget>> DaemonTargets(bool required);

// Prints the error; 66 for a missing file, 64 for a flag's error, else 65.
int InputError(const absl::Status& s);

// --tls_ca/--tls_cert/--tls_key: all three for mutual TLS, or none.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> Credentials();

// --prometheus and its companions; nullopt with *exit set on a bad flag.
std::optional<PrometheusOptions> PrometheusFlags(absl::Duration deadline, int* exit);

// Where health, serve and job read the cluster from, from the flags.
struct ClusterSource {
  std::optional<PrometheusOptions> prometheus;
  std::vector<DaemonTarget> targets;
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  absl::Duration deadline;
};
// nullopt with *exit set when a flag is wrong.
std::optional<ClusterSource> SourceFromFlags(int* exit);

// The cluster as the source sees it now.
absl::StatusOr<ClusterPicture> Observe(const ClusterSource& s);

// `text` to `path` (- = stdout), replacing it whole: a reader (or a browser
// reloading it under --watch) never sees half a page. 0 or 73.
int WriteOutput(const std::string& path, const std::string& text);

}  // namespace gloowatch::client
