// gloowatch serve: the heatmap page, live over HTTP.
#include <unistd.h>

#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/cli/command.h"
#include "client/cli/support.h"
#include "client/health/page_server.h"
#include "client/health/serve.h"
#include "common/exit_codes.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:8080", "serve: HTTP address host:port of the page.");
ABSL_FLAG(absl::Duration, refresh, absl::Seconds(10),
          "serve: ask the cluster again this often; the page reloads as often.");

namespace gloowatch::client {
namespace {

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

}  // namespace

const Command& ServeCommand() {
  static const auto* command =
      new Command{"serve",
                  "serve [--listen HOST:PORT] [--daemons A,B | --config FILE | --cluster FILE | "
                  "--prometheus URL] [flags]",
                  "serve the heatmap page live over HTTP (GET / and /health.json)", RunServe,
                  With(kSourceFlags, {"listen", "refresh"})};
  return *command;
}

}  // namespace gloowatch::client
