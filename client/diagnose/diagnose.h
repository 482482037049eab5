// diagnose: connectivity and configuration checks, each PASS/WARN/FAIL with
// evidence and a remediation. Check builders are pure (data in, Check out);
// RunDiagnose gathers the data (scans, daemon calls, local interfaces).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "client/diagnose/env_audit.h"
#include "client/diagnose/netcheck.h"
#include "client/diagnose/port_scan.h"
#include "client/preflight/preflight_report.h"
#include "client/sources/fetch.h"
#include "nlohmann/json.hpp"

namespace gloowatch::client {

struct Check {
  std::string id;  // stable, e.g. "port_scan:10.0.0.2"
  Severity status = Severity::kPass;
  std::string summary;
  std::vector<std::string> evidence;
  std::string remediation;  // empty on PASS
};

struct HostScan {
  std::string host;
  std::optional<std::string> error;  // resolution failure
  std::vector<PortResult> ports;
};

Check CheckDaemonsReachable(const std::vector<FetchResult>& daemons);
Check CheckPortScan(const HostScan& scan);
// Ephemeral range size per daemon, and peers that are not UP although the
// scanned (rendezvous) ports on their host answer.
Check CheckEphemeralPorts(const std::vector<FetchResult>& daemons,
                          const std::vector<HostScan>& scans);
// `ifnames` from --ifname or GLOO_SOCKET_IFNAME (comma-separated); empty means
// Gloo uses the host name's address.
// `found`: those of them the host has (LookupInterface).
Check CheckInterface(const std::vector<std::string>& ifnames,
                     const std::vector<InterfaceFacts>& found, const HostnameInfo& hostname,
                     bool remote_peers);
Check CheckMtu(const std::vector<FetchResult>& daemons);
Check CheckThresholds(const std::vector<FetchResult>& daemons);
Check CheckEnvironment(const std::vector<EnvFinding>& findings);
Check CheckConsistency(const std::vector<FetchResult>& daemons);
// MASTER_ADDR / MASTER_PORT as the c10d store will use them: a port or scheme
// in the address, a port that is no number, a name that does not resolve, or
// loopback while the peers are remote.
Check CheckMasterAddr(const std::map<std::string, std::string>& env, bool remote_peers);
// The job's Gloo address on every daemon's host, resolved by the daemon as
// ProcessGroupGloo would for `ifname` (Preflight.Resolve): a host where it
// fails, an IPv4/IPv6 mix, a loopback address while other hosts are remote,
// and (when the host name decides) a host name that resolves to loopback.
Check CheckJobResolution(const std::vector<PreflightHost>& hosts, const std::string& ifname);
Check CheckTrainingConfig(const std::string& path, const std::vector<FetchResult>& daemons);

struct DiagnoseOptions {
  std::vector<DaemonTarget> daemons;
  std::vector<std::string> targets;
  uint16_t port_low = 29500, port_high = 29600;
  std::string ifname;  // --ifname; empty: GLOO_SOCKET_IFNAME from env
  std::string training_config;
  absl::Duration deadline = absl::Seconds(3);
  std::shared_ptr<grpc::ChannelCredentials> credentials;  // plaintext when null
  ScanOptions scan;
  std::map<std::string, std::string> env;
};

struct DiagnoseReport {
  std::vector<Check> checks;
  int pass = 0, warn = 0, fail = 0;
  int ExitCode() const;  // 0 all pass, 1 warnings, 2 failures
};

DiagnoseReport RunDiagnose(const DiagnoseOptions& options);
DiagnoseReport MakeReport(std::vector<Check> checks);

nlohmann::json ReportToJson(const DiagnoseReport& report, const DiagnoseOptions& options);
std::string RenderReportText(const DiagnoseReport& report, bool color);

// "29500-29502,29510" from a sorted list of ports.
std::string CompressPorts(const std::vector<uint16_t>& ports);

}  // namespace gloowatch::client
