#include "client/core/channel.h"

#include <chrono>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace gloowatch::client {

std::shared_ptr<grpc::Channel> DaemonChannel(
    const Endpoint& daemon, const std::shared_ptr<grpc::ChannelCredentials>& credentials) {
  grpc::ChannelArguments args;
  // Without this a refused connection is retried with backoff until the
  // deadline; we want "refused" reported as such, fast.
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  // Daemons are reached directly; an http_proxy in the environment must not
  // turn "unreachable" into a proxy error.
  args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
  return grpc::CreateCustomChannel(
      daemon.ToString(), credentials ? credentials : grpc::InsecureChannelCredentials(), args);
}

void SetDeadline(grpc::ClientContext* ctx, absl::Duration d) {
  ctx->set_deadline(std::chrono::system_clock::now() +
                    std::chrono::microseconds(absl::ToInt64Microseconds(d)));
}

const char* StatusCodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    default:
      return "ERROR";
  }
}

std::string ShortRpcError(const grpc::Status& status, absl::Duration deadline) {
  if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    return absl::StrCat("timeout: no answer within ", absl::FormatDuration(deadline));
  }
  const std::string message = status.error_message();  // a copy: it returns by value
  absl::string_view detail = message;
  detail = detail.substr(0, detail.find('\n'));
  // gRPC's connect failures end with the subchannel's error, behind the
  // address the caller already names: only the cause is news.
  if (const size_t last = detail.find("last error: "); last != absl::string_view::npos) {
    detail.remove_prefix(last + 12);
    // The subchannel's own status code ("UNKNOWN: ", "UNAVAILABLE: ").
    const size_t code_end = detail.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ_");
    if (code_end > 0 && code_end != absl::string_view::npos && detail.substr(code_end, 2) == ": ") {
      detail.remove_prefix(code_end + 2);
    }
    if (absl::StartsWith(detail, "ipv4:") || absl::StartsWith(detail, "ipv6:") ||
        absl::StartsWith(detail, "unix:")) {
      if (const size_t colon = detail.find(": "); colon != absl::string_view::npos) {
        detail.remove_prefix(colon + 2);
      }
    }
    absl::ConsumePrefix(&detail, "Failed to connect to remote host: ");
  }
  constexpr size_t kMaxDetail = 200;
  std::string out =
      absl::StrCat(StatusCodeName(status.error_code()), ": ", detail.substr(0, kMaxDetail));
  if (detail.size() > kMaxDetail) out += "...";
  return out;
}

}  // namespace gloowatch::client
