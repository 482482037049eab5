// How every client command reaches a daemon over gRPC: one channel set-up
// (no retries, no proxy) and one deadline rule.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "client/core/targets.h"

namespace gloowatch::client {

// A channel to `daemon`; plaintext when `credentials` is null (see
// MakeChannelCredentials).
std::shared_ptr<grpc::Channel> DaemonChannel(
    const Endpoint& daemon, const std::shared_ptr<grpc::ChannelCredentials>& credentials);

// The call ends `d` from now.
void SetDeadline(grpc::ClientContext* ctx, absl::Duration d);

// "DEADLINE_EXCEEDED", "UNAVAILABLE", ... ("ERROR" for codes we never expect).
const char* StatusCodeName(grpc::StatusCode code);

// A failed call in one short line: "timeout: no answer within 3s", or the
// code and the cause gRPC ends its message with ("UNAVAILABLE: Connection
// refused" for "failed to connect to all addresses; last error: UNKNOWN:
// ipv4:10.0.0.2:7601: Failed to connect to remote host: Connection
// refused"), at most about 200 characters.
std::string ShortRpcError(const grpc::Status& status, absl::Duration deadline);

}  // namespace gloowatch::client
