// How every client command reaches a daemon over gRPC: one channel set-up
// (no retries, no proxy) and one deadline rule.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>

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

}  // namespace gloowatch::client
