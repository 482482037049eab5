// gloowatch preflight: can the job's Gloo full mesh form, now.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/cli/command.h"
#include "client/cli/support.h"
#include "client/preflight/preflight.h"
#include "common/exit_codes.h"

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

namespace gloowatch::client {
namespace {

// The preflight's hosts, from exactly one of its sources.
absl::StatusOr<std::vector<DaemonTarget>> PreflightHosts() {
  const std::string hosts = absl::GetFlag(FLAGS_hosts);
  const std::string hostfile = absl::GetFlag(FLAGS_hostfile);
  std::string nodelist = absl::GetFlag(FLAGS_nodelist);
  auto daemons = ExplicitDaemonTargets();
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
        // Outside a Slurm job: the fleet of this host's daemon config.
        auto fleet = DefaultDaemonTargets();
        if (!fleet.ok() || !fleet->empty()) return fleet;
        return absl::InvalidArgumentError(
            absl::StrCat("preflight needs the job's hosts: --hosts, --hostfile, --nodelist (or "
                         "SLURM_JOB_NODELIST), --daemons, --config or --cluster (there is no ",
                         kDefaultConfig, " on this host)"));
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

}  // namespace

const Command& PreflightCommand() {
  static const auto* command = new Command{
      "preflight",
      "preflight [--hosts A,B | --hostfile F | --nodelist node[01-04] | --daemons A,B | ...] "
      "[--world_size N] [--ifname IF] [--master ADDR:PORT] [--timeout 10s] [--json]",
      "before a job: each host's Gloo address, a real Gloo full mesh at the job's timeout, "
      "and the store; exit 0 go, 1 degraded, 2 do not start",
      RunPreflightCommand,
      With(kDaemonFlags, {"json", "hosts", "hostfile", "nodelist", "daemon_port", "world_size",
                          "ifname", "master", "timeout"})};
  return *command;
}

}  // namespace gloowatch::client
