// gloowatch probe A B: one link tested now through A's daemon (Status.
// ProbeLink), as iperf3 -c tests one path: latency, then with --bandwidth a
// transfer each way, each phase announced before it runs and its figure
// printed as it completes.
#include <algorithm>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/cli/command.h"
#include "client/cli/support.h"
#include "client/core/channel.h"
#include "common/exit_codes.h"
#include "proto/gloowatch.grpc.pb.h"

ABSL_FLAG(int, pings, 20, "probe: latency round trips (1..1000).");
ABSL_FLAG(bool, bandwidth, false,
          "probe: also one timed transfer each way (the node's probe.bandwidth_bytes), through "
          "its bandwidth gate.");

namespace gloowatch::client {
namespace {

// EX_TEMPFAIL: refused by a limit now; the same call may pass later.
constexpr int kExitTryLater = 75;

double Percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

std::string Rate(double bytes_per_second) {
  return absl::StrFormat("%.1f MB/s (%.2f Gbit/s)", bytes_per_second / 1e6,
                         bytes_per_second * 8 / 1e9);
}

// The exit code of a failed call, after printing why.
int Failed(const grpc::Status& s, const std::string& a, const std::string& b) {
  std::cerr << "gloowatch probe: " << a << " -> " << b << ": " << StatusCodeName(s.error_code())
            << ": " << s.error_message() << "\n";
  switch (s.error_code()) {
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return kExitTryLater;  // a limit: the message names it
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::NOT_FOUND:
      return kExitUsage;
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::UNIMPLEMENTED:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      // A's daemon did not answer (or is older), or the link itself failed:
      // the message says which (a link's failure names its reason).
      return absl::StrContains(s.error_message(), "OpenProbePair") ||
                     absl::StrContains(s.error_message(), "Gloo")
                 ? kExitFailed
                 : kExitUnavailable;
    default:
      return kExitFailed;  // the link failed: timeout, refused, reset...
  }
}

int RunProbe(const std::vector<std::string>& args) {
  if (args.size() != 2) return Usage("probe takes two nodes: gloowatch probe A B");
  const std::string& a = args[0];
  const std::string& b = args[1];
  const int pings = absl::GetFlag(FLAGS_pings);
  if (pings < 1 || pings > 1000) return Usage("--pings must be in [1, 1000]");
  absl::StatusOr<std::vector<DaemonTarget>> targets = DaemonTargets(/*required=*/false);
  if (!targets.ok()) return InputError(targets.status());
  // A's daemon: a node of the daemons given, else A as host:port.
  std::optional<Endpoint> daemon;
  for (const DaemonTarget& t : *targets) {
    if (t.name == a) daemon = t.endpoint;
  }
  if (!daemon) {
    absl::StatusOr<Endpoint> e = ParseEndpoint(a);
    if (!e.ok()) {
      return Usage(absl::StrCat("'", a, "' is neither a node of --daemons/--config/--cluster ",
                                "nor a daemon's host:port"));
    }
    daemon = *e;
  }
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials = Credentials();
  if (!credentials.ok()) return InputError(credentials.status());
  const absl::Duration deadline = absl::GetFlag(FLAGS_deadline);
  auto stub = v1::Status::NewStub(DaemonChannel(*daemon, *credentials));

  std::cout << "probing " << a << " -> " << b << " now, through " << a << "'s daemon at "
            << daemon->ToString() << " (a fresh session of Gloo pairs)" << std::endl;
  std::cout << "latency: " << pings << " round trips..." << std::endl;
  v1::ProbeLinkRequest request;
  request.set_peer(b);
  request.set_pings(static_cast<uint32_t>(pings));
  v1::ProbeLinkResponse latency;
  grpc::ClientContext ctx;
  // The daemon bounds the probe by its Gloo timeouts; --deadline is the
  // caller's own bound on top.
  SetDeadline(&ctx, deadline + absl::Seconds(30));
  if (grpc::Status s = stub->ProbeLink(&ctx, request, &latency); !s.ok()) return Failed(s, a, b);
  std::vector<double> rtts(latency.rtt_seconds().begin(), latency.rtt_seconds().end());
  std::cout << absl::StrFormat("  connected in %.1f ms\n", latency.connect_seconds() * 1e3);
  if (!rtts.empty()) {
    std::cout << absl::StrFormat(
        "  %d round trips: min %.3f ms, p50 %.3f ms, p99 %.3f ms, max %.3f ms\n", rtts.size(),
        *std::min_element(rtts.begin(), rtts.end()) * 1e3, Percentile(rtts, 0.5) * 1e3,
        Percentile(rtts, 0.99) * 1e3, *std::max_element(rtts.begin(), rtts.end()) * 1e3);
  }
  if (absl::GetFlag(FLAGS_bandwidth)) {
    std::cout << "bandwidth: one transfer each way through " << a
              << "'s bandwidth gate (waiting up to 30 s for its budget)" << std::endl;
    // One call a direction: each is printed as it completes, and a refused
    // or failed rx leaves the tx's figure on the screen.
    for (const auto transfers :
         {v1::ProbeLinkRequest::TRANSFERS_TX_ONLY, v1::ProbeLinkRequest::TRANSFERS_RX_ONLY}) {
      const bool tx = transfers == v1::ProbeLinkRequest::TRANSFERS_TX_ONLY;
      std::cout << "  " << (tx ? "tx (" + a : "rx (" + b) << " sends): " << std::flush;
      v1::ProbeLinkRequest bw = request;
      bw.set_pings(1);
      bw.set_bandwidth(true);
      bw.set_transfers(transfers);
      v1::ProbeLinkResponse transfer;
      grpc::ClientContext bw_ctx;
      SetDeadline(&bw_ctx, deadline + absl::Minutes(5));
      if (grpc::Status s = stub->ProbeLink(&bw_ctx, bw, &transfer); !s.ok()) {
        std::cout << "not measured" << std::endl;
        return Failed(s, a, b);
      }
      std::cout << Rate(tx ? transfer.tx_bytes_per_second() : transfer.rx_bytes_per_second())
                << absl::StrFormat(", %.1f MiB",
                                   static_cast<double>(transfer.bandwidth_bytes()) / (1 << 20))
                << std::endl;
    }
  }
  std::cout << "done" << std::endl;
  return kExitOk;
}

}  // namespace

const Command& ProbeCommand() {
  static const auto* command = new Command{
      "probe",
      "probe A B [--bandwidth] [--pings 20] [--daemons A:7601,... | --config FILE | --cluster "
      "FILE]",
      "test one link now through A's daemon: latency, and bandwidth with --bandwidth", RunProbe,
      With(kDaemonFlags, {"pings", "bandwidth"})};
  return *command;
}

}  // namespace gloowatch::client
