#include "client/sources/fetch.h"

#include <grpcpp/grpcpp.h>

#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/core/channel.h"
#include "proto/gloowatch.grpc.pb.h"

namespace gloowatch::client {

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
      auto stub = v1::Status::NewStub(DaemonChannel(targets[i].endpoint, credentials));
      grpc::ClientContext ctx;
      SetDeadline(&ctx, deadline);
      v1::NodeStatus status;
      grpc::Status s = stub->GetStatus(&ctx, v1::GetStatusRequest(), &status);
      r.elapsed = absl::Now() - start;
      if (s.ok()) {
        r.status = std::move(status);
      } else {
        r.error_code = StatusCodeName(s.error_code());
        r.error = ShortRpcError(s, deadline);
      }
    });
  }
  for (auto& t : threads) t.join();
  return results;
}

absl::Status SendReportStep(const Endpoint& daemon, const v1::ReportStepRequest& request,
                            absl::Duration deadline,
                            const std::shared_ptr<grpc::ChannelCredentials>& credentials) {
  auto stub = v1::Status::NewStub(DaemonChannel(daemon, credentials));
  grpc::ClientContext ctx;
  SetDeadline(&ctx, deadline);
  v1::ReportStepResponse response;
  grpc::Status s = stub->ReportStep(&ctx, request, &response);
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      absl::StrCat(StatusCodeName(s.error_code()), ": ", s.error_message()));
}

}  // namespace gloowatch::client
