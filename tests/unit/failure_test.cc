#include "common/failure.h"

#include <string>

#include "absl/strings/cord.h"
#include "gtest/gtest.h"

namespace gloowatch {
namespace {

struct MessageCase {
  const char* message;
  FailureReason want;
};

void PrintTo(const MessageCase& c, std::ostream* os) { *os << '"' << c.message << '"'; }

class ClassifyMessageTest : public testing::TestWithParam<MessageCase> {};

TEST_P(ClassifyMessageTest, Classifies) {
  const MessageCase& c = GetParam();
  EXPECT_EQ(ReasonName(ClassifyMessage(c.message)), ReasonName(c.want)) << c.message;
}

constexpr auto kRefused = v1::FAILURE_REASON_REFUSED;
constexpr auto kUnreachable = v1::FAILURE_REASON_UNREACHABLE;
constexpr auto kTimeout = v1::FAILURE_REASON_TIMEOUT;
constexpr auto kReset = v1::FAILURE_REASON_RESET;
constexpr auto kProtocol = v1::FAILURE_REASON_PROTOCOL;
constexpr auto kWrongInterface = v1::FAILURE_REASON_WRONG_INTERFACE;
constexpr auto kOther = v1::FAILURE_REASON_OTHER;

INSTANTIATE_TEST_SUITE_P(
    Refused, ClassifyMessageTest,
    testing::Values(
        MessageCase{"Connection refused", kRefused}, MessageCase{"ECONNREFUSED", kRefused},
        MessageCase{"connect: Connection refused", kRefused},
        MessageCase{"connect [127.0.0.1]:5555: Connection refused", kRefused},
        MessageCase{"[/build/gloo-x/gloo/transport/tcp/pair.cc:799] connect [10.0.0.2]:41235: "
                    "Connection refused",
                    kRefused},
        MessageCase{"failed to connect to all addresses; last error: UNKNOWN: "
                    "ipv4:10.0.0.2:7443: Failed to connect to remote host: Connection refused",
                    kRefused},
        // The errno cause beats the generic "timed out" wrapper.
        MessageCase{"Timed out connecting: SO_ERROR: Connection refused", kRefused},
        MessageCase{"CONNECTION REFUSED", kRefused}));

INSTANTIATE_TEST_SUITE_P(
    Unreachable, ClassifyMessageTest,
    testing::Values(MessageCase{"No route to host", kUnreachable},
                    MessageCase{"connect [10.9.9.9]:5555: No route to host", kUnreachable},
                    MessageCase{"Network is unreachable", kUnreachable},
                    MessageCase{"Address unreachable", kUnreachable},
                    MessageCase{"EHOSTUNREACH", kUnreachable},
                    MessageCase{"ENETUNREACH", kUnreachable},
                    MessageCase{"getaddrinfo node-7: Name or service not known", kUnreachable},
                    MessageCase{
                        "DNS resolution failed for node-7:7443: C-ares status is not ARES_SUCCESS",
                        kUnreachable},
                    MessageCase{"Timed out connecting: SO_ERROR: No route to host", kUnreachable},
                    MessageCase{"failed to connect to all addresses", kUnreachable}));

INSTANTIATE_TEST_SUITE_P(
    Timeout, ClassifyMessageTest,
    testing::Values(
        MessageCase{"timed out", kTimeout}, MessageCase{"Timed out", kTimeout},
        MessageCase{"Deadline Exceeded", kTimeout}, MessageCase{"deadline", kTimeout},
        MessageCase{"Application timeout", kTimeout}, MessageCase{"ETIMEDOUT", kTimeout},
        MessageCase{"Timed out waiting 5000ms for recv operation to complete", kTimeout},
        MessageCase{"[/build/gloo-x/gloo/transport/tcp/unbound_buffer.cc:84] Timed out waiting "
                    "30000ms for send operation to complete",
                    kTimeout},
        // "pair closure" alone would be a reset; the timeout is the cause.
        MessageCase{"[/build/gloo-x/gloo/transport/tcp/pair.cc:598] Application timeout caused "
                    "pair closure",
                    kTimeout},
        MessageCase{"Read timeout [127.0.0.1]:40123", kTimeout},
        MessageCase{"Connect timeout [10.0.0.2]:5555", kTimeout},
        MessageCase{"Read error [10.0.0.2]:5555: Connection timed out", kTimeout}));

INSTANTIATE_TEST_SUITE_P(
    Reset, ClassifyMessageTest,
    testing::Values(MessageCase{"Connection reset by peer", kReset},
                    MessageCase{"Connection closed by peer", kReset},
                    MessageCase{
                        "[/build/gloo-x/gloo/transport/tcp/pair.cc:598] Connection closed by peer "
                        "[127.0.0.1]:40123",
                        kReset},
                    MessageCase{"Read error [127.0.0.1]:5555: Connection reset by peer", kReset},
                    MessageCase{"writev [127.0.0.1]:5555: Broken pipe", kReset},
                    MessageCase{"Broken pipe", kReset}, MessageCase{"ECONNRESET", kReset},
                    MessageCase{"EPIPE", kReset}, MessageCase{"Socket closed", kReset},
                    MessageCase{"Socket closed [127.0.0.1]:5555", kReset},
                    // Contains "unexpected", which would otherwise be protocol.
                    MessageCase{"Socket unexpectedly closed [127.0.0.1]:5555", kReset},
                    MessageCase{"end of file", kReset}, MessageCase{"pair closure", kReset}));

INSTANTIATE_TEST_SUITE_P(Protocol, ClassifyMessageTest,
                         testing::Values(MessageCase{"version mismatch: peer speaks v2", kProtocol},
                                         MessageCase{"unexpected reply type 7", kProtocol}));

// Our own errors carry their reason; the wording never decides.
TEST(FailureReasonOfTest, ThePayloadDecidesThenDataLossThenTheMessage) {
  // A protocol error whose text reads like a reset is still protocol.
  EXPECT_EQ(FailureReasonOf(ProtocolError("peer closed after unexpected frame")), kProtocol);
  EXPECT_EQ(FailureReasonOf(absl::DataLossError("short frame")), kProtocol);
  EXPECT_EQ(FailureReasonOf(WithFailureReason(absl::UnavailableError("Connection refused"),
                                              v1::FAILURE_REASON_WRONG_INTERFACE)),
            kWrongInterface);
  EXPECT_EQ(FailureReasonOf(absl::UnavailableError("Connection refused")),
            v1::FAILURE_REASON_REFUSED);
  // No more control flow on a "protocol:" prefix in a message.
  EXPECT_NE(FailureReasonOf(absl::UnknownError("protocol: bad magic")), kProtocol);
  // A payload that is not a reason is ignored.
  absl::Status odd = absl::UnavailableError("Connection reset by peer");
  odd.SetPayload("gloowatch/reason", absl::Cord("999"));
  EXPECT_EQ(FailureReasonOf(odd), v1::FAILURE_REASON_RESET);
}

INSTANTIATE_TEST_SUITE_P(
    WrongInterface, ClassifyMessageTest,
    testing::Values(MessageCase{"Cannot assign requested address", kWrongInterface},
                    MessageCase{"bind: Cannot assign requested address", kWrongInterface},
                    MessageCase{"EADDRNOTAVAIL", kWrongInterface},
                    MessageCase{"Unable to find address for: eth9", kWrongInterface},
                    MessageCase{"Unable to find address for: ^lo", kWrongInterface},
                    MessageCase{
                        "Unable to find address for node-3; bind(2) for 10.1.2.3:0 failed with: "
                        "Cannot assign requested address",
                        kWrongInterface},
                    MessageCase{"Unable to find interface for: [10.1.2.3]:0", kWrongInterface},
                    MessageCase{"SO_BINDTODEVICE: No such device", kWrongInterface},
                    MessageCase{"interface eth1 has no IPv4 address", kWrongInterface}));

INSTANTIATE_TEST_SUITE_P(Other, ClassifyMessageTest,
                         testing::Values(MessageCase{"", kOther},
                                         MessageCase{"something odd happened", kOther},
                                         MessageCase{"Permission denied", kOther}));

TEST(ReasonNameTest, AllNames) {
  EXPECT_EQ(ReasonName(v1::FAILURE_REASON_REFUSED), "refused");
  EXPECT_EQ(ReasonName(v1::FAILURE_REASON_UNREACHABLE), "unreachable");
  EXPECT_EQ(ReasonName(v1::FAILURE_REASON_TIMEOUT), "timeout");
  EXPECT_EQ(ReasonName(v1::FAILURE_REASON_RESET), "reset");
  EXPECT_EQ(ReasonName(v1::FAILURE_REASON_PROTOCOL), "protocol");
  EXPECT_EQ(ReasonName(v1::FAILURE_REASON_WRONG_INTERFACE), "wrong_interface");
  EXPECT_EQ(ReasonName(v1::FAILURE_REASON_OTHER), "other");
  EXPECT_EQ(ReasonName(v1::FAILURE_REASON_UNSPECIFIED), "other");
  EXPECT_EQ(ReasonName(static_cast<FailureReason>(99)), "other");
}

struct GrpcCase {
  int code;
  const char* message;
  FailureReason want;
};

void PrintTo(const GrpcCase& c, std::ostream* os) { *os << c.code << " \"" << c.message << '"'; }

class ClassifyGrpcTest : public testing::TestWithParam<GrpcCase> {};

TEST_P(ClassifyGrpcTest, Classifies) {
  const GrpcCase& c = GetParam();
  EXPECT_EQ(ReasonName(ClassifyGrpc(c.code, c.message)), ReasonName(c.want))
      << c.code << " " << c.message;
}

// grpc::StatusCode values, spelled out so the table reads like the wire.
constexpr int kOk = 0, kUnknown = 2, kInvalidArgument = 3, kDeadlineExceeded = 4,
              kPermissionDenied = 7, kFailedPrecondition = 9, kUnimplemented = 12,
              kUnavailable = 14, kUnauthenticated = 16;

INSTANTIATE_TEST_SUITE_P(
    Codes, ClassifyGrpcTest,
    testing::Values(
        GrpcCase{kDeadlineExceeded, "Deadline Exceeded", kTimeout},
        GrpcCase{kDeadlineExceeded, "", kTimeout},
        // The code decides even if the text names something else.
        GrpcCase{kDeadlineExceeded, "Connection refused", kTimeout},
        GrpcCase{kUnavailable,
                 "failed to connect to all addresses; last error: UNKNOWN: ipv4:10.0.0.2:7443: "
                 "Failed to connect to remote host: Connection refused",
                 kRefused},
        GrpcCase{kUnavailable,
                 "failed to connect to all addresses; last error: UNKNOWN: "
                 "ipv4:10.9.9.9:7443: No route to host",
                 kUnreachable},
        GrpcCase{kUnavailable, "Connection reset by peer", kReset},
        GrpcCase{kUnavailable, "Socket closed", kReset},
        GrpcCase{kUnavailable, "DNS resolution failed for node-9:7443", kUnreachable},
        GrpcCase{kUnavailable, "failed to connect to all addresses", kUnreachable},
        GrpcCase{kUnavailable, "", kUnreachable},
        GrpcCase{kUnavailable, "unexpected frame", kUnreachable},
        GrpcCase{kFailedPrecondition, "cluster name mismatch", kProtocol},
        GrpcCase{kInvalidArgument, "bad request", kProtocol},
        GrpcCase{kUnimplemented, "", kProtocol}, GrpcCase{kUnauthenticated, "bad token", kProtocol},
        GrpcCase{kPermissionDenied, "", kProtocol},
        GrpcCase{kUnknown, "Connection reset by peer", kReset}, GrpcCase{kUnknown, "weird", kOther},
        GrpcCase{kOk, "", v1::FAILURE_REASON_UNSPECIFIED}));

TEST(ClassifyGrpcTest, OkIsNotAFailure) {
  EXPECT_EQ(ClassifyGrpc(kOk, ""), v1::FAILURE_REASON_UNSPECIFIED);
}

}  // namespace
}  // namespace gloowatch
