// The verdict of a job preflight from what every host's daemon answered:
// per host, per pair and for the store, with findings, text and JSON
// (gloowatch.preflight.v1). Pure: client/preflight.h asks the daemons.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "client/core/targets.h"
#include "nlohmann/json.hpp"
#include "proto/gloowatch.pb.h"

namespace gloowatch::client {

// One host of the mesh (its rank is its index) and what its daemon said.
struct PreflightHost {
  DaemonTarget target;
  std::string resolve_error;  // the Resolve call failed (daemon down, refused ...)
  std::optional<v1::PreflightResolveResponse> resolved;
  std::string connect_error;  // the Connect call failed
  std::optional<v1::PreflightConnectResponse> connected;
};

struct PreflightInput {
  std::vector<PreflightHost> hosts;
  int world_size = 0;         // 0: not given
  std::string socket_ifname;  // GLOO_SOCKET_IFNAME of the job, "" unset
  std::string master_addr;    // "" not checked
  uint16_t master_port = 0;
  absl::Duration timeout;
  absl::Duration elapsed;
};

// One direction of a pair: `from` connects, `to` accepts.
struct PreflightDirection {
  bool tried = false;
  bool ok = false;      // the TCP connection formed
  bool gloo = false;    // the job's own direction (Gloo's pair); else the reverse round
  std::string reason;   // failure reason name when tried and not ok
  std::string message;  // what each side saw
  double seconds = 0;
};

struct PreflightPair {
  int a = 0, b = 0;  // ranks, a < b
  // The Gloo pair, as the job's would connect: one message each way.
  bool tried = false;
  bool ok = false;
  std::string reason;   // failure reason name ("timeout", ...) when not ok
  std::string message;  // why, naming the side that saw it
  double seconds = 0;   // the slower side's connect plus exchange
  // The rank that listened by Gloo's rule (the lower address); -1 when the
  // daemons did not say (older ones), and then no direction is known.
  int listener = -1;
  PreflightDirection a_to_b, b_to_a;
};

struct PreflightFinding {
  std::string severity;  // "fail", "warn" or "info"
  // daemon, resolve, inbound, outbound, isolated, pair, direction, store,
  // address_family, loopback, ...
  std::string check;
  std::string message;
  std::vector<std::string> hosts;  // the hosts it is about (for a pair, both ends)
};

struct PreflightReport {
  PreflightInput input;
  std::vector<PreflightPair> pairs;
  std::vector<PreflightFinding> findings;
  std::string verdict;  // "go", "degraded", "do_not_start"
  int exit_code = 0;    // 0, 1, 2
};

PreflightReport BuildPreflightReport(PreflightInput input);
nlohmann::json PreflightToJson(const PreflightReport& report);
std::string RenderPreflightText(const PreflightReport& report);

}  // namespace gloowatch::client
