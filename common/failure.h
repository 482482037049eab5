// Turns error text from Gloo, the kernel and gRPC into a small set of causes
// an operator can act on.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "proto/gloowatch.pb.h"

namespace gloowatch {

using v1::FailureReason;

// Every reason a failure can have (not UNSPECIFIED), in the order of the
// `reason` label's series.
inline constexpr FailureReason kFailureReasons[] = {
    v1::FAILURE_REASON_REFUSED, v1::FAILURE_REASON_UNREACHABLE, v1::FAILURE_REASON_TIMEOUT,
    v1::FAILURE_REASON_RESET,   v1::FAILURE_REASON_PROTOCOL,    v1::FAILURE_REASON_WRONG_INTERFACE,
    v1::FAILURE_REASON_OTHER,
};

// Lower-case short name used as the Prometheus `reason` label and JSON value:
// refused, unreachable, timeout, reset, protocol, wrong_interface, other.
absl::string_view ReasonName(FailureReason reason);

// Classifies an error message (Gloo IoException text, strerror text, gRPC
// status message), case-insensitively. Unknown text is OTHER. A concrete
// errno cause wins over a generic "timed out" wrapper ("Timed out
// connecting: SO_ERROR: Connection refused" is REFUSED), except Gloo's own
// op timeouts ("Timed out waiting ...", "Application timeout caused pair
// closure"), which are TIMEOUT.
FailureReason ClassifyMessage(absl::string_view message);

// Classifies a failed gRPC call: DEADLINE_EXCEEDED -> timeout; UNAVAILABLE by
// its message (refused / unreachable / reset / timeout / wrong_interface,
// else unreachable); FAILED_PRECONDITION, INVALID_ARGUMENT, UNIMPLEMENTED,
// UNAUTHENTICATED, PERMISSION_DENIED -> protocol; other codes by message.
// OK is UNSPECIFIED (not a failure).
FailureReason ClassifyGrpc(int grpc_status_code, absl::string_view message);

// The one way a failure's reason travels with an error: a payload on the
// status, so no code decides on the wording of a message.
absl::Status WithFailureReason(absl::Status status, FailureReason reason);
// A status's reason: its payload; else PROTOCOL for DATA_LOSS (what our own
// framing reports, see ProtocolError); else classified from its message
// (Gloo's and the kernel's text).
FailureReason FailureReasonOf(const absl::Status& status);
// A peer that broke the probe protocol: DATA_LOSS carrying PROTOCOL.
absl::Status ProtocolError(absl::string_view message);

}  // namespace gloowatch
