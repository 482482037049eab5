// gloowatch: operator CLI for gloowatchd clusters (client/cli/cli.h).
#include <cstdlib>
#include <iostream>

#include "absl/strings/match.h"
#include "client/cli/cli.h"
#include "grpc/support/log.h"

namespace {

// Every failed call becomes one line of ours ("UNAVAILABLE: Connection
// refused"); gRPC's own log lines about it would only come first and say it
// at length. They show when asked for with GRPC_VERBOSITY, and an assertion
// (gRPC aborts next) always does.
void LogGrpc(gpr_log_func_args* args) {
  static const bool asked = std::getenv("GRPC_VERBOSITY") != nullptr;
  if (!asked && !absl::StartsWith(args->message, "assertion failed")) return;
  std::cerr << "gloowatch: grpc: " << args->message << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  gpr_set_log_function(&LogGrpc);
  return gloowatch::client::RunCli(argc, argv);
}
