#include "client/fetch.h"

#include <grpcpp/grpcpp.h>

#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "proto/gloowatch.grpc.pb.h"

namespace gloowatch::client {
namespace {

const char* CodeName(grpc::StatusCode code) {
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

std::unique_ptr<v1::Status::Stub> MakeStub(
    const Endpoint& ep, const std::shared_ptr<grpc::ChannelCredentials>& credentials) {
  grpc::ChannelArguments args;
  // Without this a refused connection is retried with backoff until the
  // deadline; we want "refused" reported as such, fast.
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  // Daemons are reached directly; an http_proxy in the environment must not
  // turn "unreachable" into a proxy error.
  args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
  return v1::Status::NewStub(grpc::CreateCustomChannel(
      ep.ToString(), credentials ? credentials : grpc::InsecureChannelCredentials(), args));
}

void SetDeadline(grpc::ClientContext* ctx, absl::Duration d) {
  ctx->set_deadline(std::chrono::system_clock::now() +
                    std::chrono::microseconds(absl::ToInt64Microseconds(d)));
}

}  // namespace

std::vector<FetchResult> FetchAll(const std::vector<DaemonTarget>& targets, absl::Duration deadline,
                                  const std::shared_ptr<grpc::ChannelCredentials>& credentials) {
  std::vector<FetchResult> results(targets.size());
  std::vector<std::thread> threads;
  threads.reserve(targets.size());
  for (size_t i = 0; i < targets.size(); ++i) {
    threads.emplace_back([&, i] {
      FetchResult& r = results[i];
      r.target = targets[i];
      const absl::Time start = absl::Now();
      auto stub = MakeStub(targets[i].endpoint, credentials);
      grpc::ClientContext ctx;
      SetDeadline(&ctx, deadline);
      v1::NodeStatus status;
      grpc::Status s = stub->GetStatus(&ctx, v1::GetStatusRequest(), &status);
      r.elapsed = absl::Now() - start;
      if (s.ok()) {
        r.status = std::move(status);
      } else {
        r.error_code = CodeName(s.error_code());
        r.error = s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED
                      ? absl::StrCat("timeout: no answer within ", absl::FormatDuration(deadline))
                      : absl::StrCat(r.error_code, ": ", s.error_message());
      }
    });
  }
  for (auto& t : threads) t.join();
  return results;
}

absl::Status SendReportStep(const Endpoint& daemon, const v1::ReportStepRequest& request,
                            absl::Duration deadline,
                            const std::shared_ptr<grpc::ChannelCredentials>& credentials) {
  auto stub = MakeStub(daemon, credentials);
  grpc::ClientContext ctx;
  SetDeadline(&ctx, deadline);
  v1::ReportStepResponse response;
  grpc::Status s = stub->ReportStep(&ctx, request, &response);
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      absl::StrCat(CodeName(s.error_code()), ": ", s.error_message()));
}

}  // namespace gloowatch::client
