#include "common/failure.h"

#include <initializer_list>

#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/support/status_code_enum.h"

namespace gloowatch {
namespace {

constexpr char kReasonPayload[] = "gloowatch/reason";

bool ContainsAny(absl::string_view lower, std::initializer_list<absl::string_view> needles) {
  for (absl::string_view n : needles) {
    if (absl::StrContains(lower, n)) return true;
  }
  return false;
}

}  // namespace

absl::string_view ReasonName(FailureReason reason) {
  switch (reason) {
    case v1::FAILURE_REASON_REFUSED:
      return "refused";
    case v1::FAILURE_REASON_UNREACHABLE:
      return "unreachable";
    case v1::FAILURE_REASON_TIMEOUT:
      return "timeout";
    case v1::FAILURE_REASON_RESET:
      return "reset";
    case v1::FAILURE_REASON_PROTOCOL:
      return "protocol";
    case v1::FAILURE_REASON_WRONG_INTERFACE:
      return "wrong_interface";
    default:
      return "other";
  }
}

FailureReason ClassifyMessage(absl::string_view message) {
  const std::string m = absl::AsciiStrToLower(message);

  if (absl::StrContains(m, "version mismatch")) return v1::FAILURE_REASON_PROTOCOL;

  // Gloo's own timeouts. Checked before "pair closure" (reset) because Gloo
  // reports a timed-out op as "Application timeout caused pair closure".
  if (ContainsAny(m, {"application timeout", "timed out waiting"})) {
    return v1::FAILURE_REASON_TIMEOUT;
  }

  // Our bind address / device is wrong. Before the errno causes below since
  // Gloo wraps these as "Unable to find address for X; bind(2) ... failed".
  if (ContainsAny(m,
                  {"cannot assign requested address", "eaddrnotavail", "unable to find address for",
                   "unable to find interface for", "no such device"})) {
    return v1::FAILURE_REASON_WRONG_INTERFACE;
  }

  // A concrete errno cause beats a generic "timed out" wrapper such as
  // "Timed out connecting: SO_ERROR: Connection refused".
  if (ContainsAny(m, {"connection refused", "econnrefused"})) {
    return v1::FAILURE_REASON_REFUSED;
  }
  if (ContainsAny(
          m, {"no route to host", "network is unreachable", "host is unreachable",
              "address unreachable", "ehostunreach", "enetunreach", "name or service not known",
              "temporary failure in name resolution", "dns resolution failed"})) {
    return v1::FAILURE_REASON_UNREACHABLE;
  }
  if (ContainsAny(m, {"connection reset by peer", "connection closed by peer", "broken pipe",
                      "econnreset", "epipe", "socket closed", "socket unexpectedly closed",
                      "end of file", "pair closure"})) {
    return v1::FAILURE_REASON_RESET;
  }

  // Gloo says "Read timeout", "Connect timeout", ...; the kernel "Connection
  // timed out"; gRPC "Deadline Exceeded".
  if (ContainsAny(m, {"timed out", "timeout", "deadline", "etimedout"})) {
    return v1::FAILURE_REASON_TIMEOUT;
  }

  // gRPC's summary when it gave no errno; nothing answered.
  if (absl::StrContains(m, "failed to connect to all addresses")) {
    return v1::FAILURE_REASON_UNREACHABLE;
  }

  // After reset so that Gloo's "Socket unexpectedly closed" stays a reset.
  if (absl::StrContains(m, "unexpected")) return v1::FAILURE_REASON_PROTOCOL;

  // Loosest match last: any other complaint naming an interface.
  if (absl::StrContains(m, "interface")) return v1::FAILURE_REASON_WRONG_INTERFACE;

  return v1::FAILURE_REASON_OTHER;
}

FailureReason ClassifyGrpc(int grpc_status_code, absl::string_view message) {
  switch (static_cast<grpc::StatusCode>(grpc_status_code)) {
    case grpc::StatusCode::OK:
      return v1::FAILURE_REASON_UNSPECIFIED;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return v1::FAILURE_REASON_TIMEOUT;
    case grpc::StatusCode::UNAVAILABLE: {
      // The channel never got an answer; keep a concrete transport cause if
      // the message names one.
      const FailureReason r = ClassifyMessage(message);
      switch (r) {
        case v1::FAILURE_REASON_REFUSED:
        case v1::FAILURE_REASON_UNREACHABLE:
        case v1::FAILURE_REASON_RESET:
        case v1::FAILURE_REASON_TIMEOUT:
        case v1::FAILURE_REASON_WRONG_INTERFACE:
          return r;
        default:
          return v1::FAILURE_REASON_UNREACHABLE;
      }
    }
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::UNIMPLEMENTED:
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED:
      // Something answered, so the network is fine; the peer disagrees.
      return v1::FAILURE_REASON_PROTOCOL;
    default:
      return ClassifyMessage(message);
  }
}

absl::Status WithFailureReason(absl::Status status, FailureReason reason) {
  status.SetPayload(kReasonPayload, absl::Cord(absl::StrCat(static_cast<int>(reason))));
  return status;
}

FailureReason FailureReasonOf(const absl::Status& status) {
  if (auto payload = status.GetPayload(kReasonPayload)) {
    int value = 0;
    if (absl::SimpleAtoi(std::string(*payload), &value) && v1::FailureReason_IsValid(value)) {
      return static_cast<FailureReason>(value);
    }
  }
  if (status.code() == absl::StatusCode::kDataLoss) return v1::FAILURE_REASON_PROTOCOL;
  return ClassifyMessage(status.message());
}

absl::Status ProtocolError(absl::string_view message) {
  return WithFailureReason(absl::DataLossError(message), v1::FAILURE_REASON_PROTOCOL);
}

}  // namespace gloowatch
