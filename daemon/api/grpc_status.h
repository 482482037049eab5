// absl::Status to grpc::Status, for the services' answers: the codes are the
// same numbers in both.
#pragma once

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace gloowatch {

grpc::Status ToGrpc(const absl::Status& status);

}  // namespace gloowatch
