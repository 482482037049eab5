#include "daemon/api/status_service.h"

#include "absl/strings/str_cat.h"
#include "daemon/api/grpc_status.h"

namespace gloowatch {

grpc::ServerUnaryReactor* StatusService::GetStatus(grpc::CallbackServerContext* context,
                                                   const v1::GetStatusRequest*,
                                                   v1::NodeStatus* response) {
  *response = status_();
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* StatusService::ReportStep(grpc::CallbackServerContext* context,
                                                    const v1::ReportStepRequest* request,
                                                    v1::ReportStepResponse*) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::StatusOr<std::string> client = admit_(context->peer());
  reactor->Finish(ToGrpc(client.ok() ? report_(*request, *client) : client.status()));
  return reactor;
}

grpc::ServerUnaryReactor* StatusService::ReportSteps(grpc::CallbackServerContext* context,
                                                     const v1::ReportStepsRequest* request,
                                                     v1::ReportStepsResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::StatusOr<std::string> client = admit_(context->peer());
  if (!client.ok()) {
    reactor->Finish(ToGrpc(client.status()));
    return reactor;
  }
  const int n = request->steps_size();
  if ((n == 0 && !request->has_collective()) || n > kMaxStepsPerBatch) {
    reactor->Finish(
        grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                     absl::StrCat("steps: ", n, " in the batch, want 1 to ", kMaxStepsPerBatch,
                                  " (0 only with a collective report)")));
    return reactor;
  }
  for (int i = 0; i < n; ++i) {
    absl::Status s = report_(request->steps(i), *client);
    if (s.ok()) {
      response->set_accepted(response->accepted() + 1);
      continue;
    }
    v1::RejectedStep* rejected = response->add_rejected();
    rejected->set_index(static_cast<uint32_t>(i));
    rejected->set_error(std::string(s.message()));
  }
  if (request->has_collective()) {
    absl::Status s = collective_(request->collective(), *client);
    if (!s.ok()) response->set_collective_error(std::string(s.message()));
  }
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace gloowatch
