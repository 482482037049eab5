// Real Gloo pairs and a real gRPC Peer service on loopback, in one process.
#include "transport/probe_link.h"

#include <sys/prctl.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "daemon/api/peer_service.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/support/simulated_clock.h"
#include "transport/gloo_boundary.h"
#include "transport/peer_prober.h"
#include "transport/responder_registry.h"
#include "transport/tcp_stats.h"

namespace gloowatch {
namespace {

// The real clock shifted by a fixed amount, as a peer with a wrong clock.
class ShiftedClock final : public Clock {
 public:
  explicit ShiftedClock(absl::Duration shift) : shift_(shift) {}
  absl::Time Now() const override { return absl::Now() + shift_; }
  absl::Duration Monotonic() const override { return RealClock::Get()->Monotonic(); }

 private:
  absl::Duration shift_;
};

// The real monotonic clock, except that the first round trip a session times
// looks a second long (its end, the 2nd reading, is a second late): a cold
// first round trip, exaggerated.
class SlowFirstRoundTripClock final : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
  absl::Duration Monotonic() const override {
    const absl::Duration now = RealClock::Get()->Monotonic();
    return ++readings_ == 2 ? now + absl::Seconds(1) : now;
  }

 private:
  mutable std::atomic<int> readings_{0};
};

std::shared_ptr<gloo::transport::Device> LoopbackDevice() {
  auto device = CreateGlooDevice("127.0.0.1");
  EXPECT_TRUE(device.ok()) << device.status();
  return device.ok() ? *device : nullptr;
}

std::set<std::string> ThreadIds() {
  std::set<std::string> ids;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    ids.insert(task.path().filename().string());
  }
  return ids;
}

v1::ProbeParameters SmallParameters() {
  v1::ProbeParameters p;
  p.set_latency_message_bytes(8);
  p.set_bandwidth_message_bytes(256 << 10);
  p.set_bandwidth_messages(8);
  p.set_skew_burst(8);
  p.set_gloo_timeout_ms(2000);
  return p;
}

class ProbeLinkTest : public ::testing::Test {
 protected:
  // `liveness`: what the responders say of the server's daemon (null: nothing,
  // as a responder of an older version).
  void StartServer(const Clock* server_clock, const DaemonLiveness* liveness = nullptr) {
    registry_ = std::make_unique<ResponderRegistry>("server", "test", LoopbackDevice(),
                                                    &server_gate_, server_clock, liveness);
    service_ = std::make_unique<PeerService>("server", "test", std::set<std::string>{"client"},
                                             registry_.get());
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = v1::Peer::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  }

  void TearDown() override {
    if (registry_) registry_->StopAll();
    if (server_) server_->Shutdown(std::chrono::system_clock::now());
  }

  v1::OpenProbePairRequest Request(const ProbeSession& session) {
    v1::OpenProbePairRequest r;
    r.set_protocol_version(kProbeProtocolVersion);
    r.set_from_node("client");
    r.set_to_node("server");
    r.set_gloo_address(session.command_address());
    r.set_bulk_gloo_address(session.bulk_address());
    for (const std::string& address : session.flow_addresses()) r.add_flow_gloo_addresses(address);
    *r.mutable_parameters() = session.params();
    return r;
  }

  grpc::Status Open(const v1::OpenProbePairRequest& request, v1::OpenProbePairResponse* response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    return stub_->OpenProbePair(&context, request, response);
  }

  bool WaitForResponders(size_t count, absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    while (registry_->active_responders() != count && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(20));
    }
    return registry_->active_responders() == count;
  }

  std::unique_ptr<ProbeSession> Connected(const Clock* clock = RealClock::Get(),
                                          const v1::ProbeParameters& params = SmallParameters()) {
    auto session = ProbeSession::Create(client_device_, params, clock);
    EXPECT_TRUE(session.ok()) << session.status();
    v1::OpenProbePairResponse response;
    grpc::Status status = Open(Request(**session), &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.node(), "server");
    absl::Status connected = (*session)->Connect(
        response.gloo_address(), response.bulk_gloo_address(),
        {response.flow_gloo_addresses().begin(), response.flow_gloo_addresses().end()});
    EXPECT_TRUE(connected.ok()) << connected;
    return *std::move(session);
  }

  std::shared_ptr<gloo::transport::Device> client_device_ = LoopbackDevice();
  // When the server's daemon last ticked, for the tests that give it one:
  // members, so that they outlive the responders, which end with registry_.
  SimulatedClock daemon_time_;
  DaemonLiveness liveness_{&daemon_time_};
  BandwidthGate server_gate_{RealClock::Get()};
  BandwidthGate client_gate_{RealClock::Get()};
  std::unique_ptr<ResponderRegistry> registry_;
  std::unique_ptr<PeerService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::Peer::Stub> stub_;
};

v1::ProbeParameters EchoedPingParameters() {
  v1::ProbeParameters p = SmallParameters();
  p.set_latency_message_bytes(kTimestampReplyBytes + 1);
  return p;
}

TEST_F(ProbeLinkTest, PingDoesNotCountItsWarmUpRoundTrip) {
  StartServer(RealClock::Get());
  // Both kinds of ping: answered with timestamps, and echoed.
  for (const v1::ProbeParameters& params : {SmallParameters(), EchoedPingParameters()}) {
    SCOPED_TRACE(params.latency_message_bytes());
    SlowFirstRoundTripClock clock;
    std::unique_ptr<ProbeSession> session = Connected(&clock, params);
    ASSERT_NE(session, nullptr);
    auto burst = session->Ping(5);
    ASSERT_TRUE(burst.ok()) << burst.status();
    ASSERT_EQ(burst->rtts.size(), 5u);
    for (absl::Duration rtt : burst->rtts) EXPECT_LT(rtt, absl::Milliseconds(500));
  }
}

// With the default 8-byte latency message, the pings' replies carry the
// peer's timestamps: skew comes from the latency probe. A message longer than
// the timestamp reply is echoed whole and carries none.
TEST_F(ProbeLinkTest, PingsMeasureAShiftedPeerClockUnlessTheirMessageIsEchoed) {
  const absl::Duration shift = absl::Milliseconds(420);
  ShiftedClock shifted(shift);
  StartServer(&shifted);
  std::unique_ptr<ProbeSession> session = Connected();
  ASSERT_NE(session, nullptr);
  ASSERT_TRUE(session->pings_carry_timestamps());
  auto burst = session->Ping(5);
  ASSERT_TRUE(burst.ok()) << burst.status();
  ASSERT_EQ(burst->samples.size(), 5u);
  std::optional<OffsetEstimate> best = BestOffset(burst->samples);
  ASSERT_TRUE(best.has_value());
  EXPECT_LE(absl::AbsDuration(best->offset - shift), best->error + absl::Microseconds(50));
  EXPECT_LT(absl::AbsDuration(best->offset - shift), absl::Milliseconds(2));

  std::unique_ptr<ProbeSession> echoed = Connected(RealClock::Get(), EchoedPingParameters());
  ASSERT_NE(echoed, nullptr);
  EXPECT_FALSE(echoed->pings_carry_timestamps());
  auto plain = echoed->Ping(5);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->rtts.size(), 5u);
  EXPECT_TRUE(plain->samples.empty());
}

TEST_F(ProbeLinkTest, PingSyncAndBandwidthOverRealPairs) {
  StartServer(RealClock::Get());
  std::unique_ptr<ProbeSession> session = Connected();
  ASSERT_NE(session, nullptr);

  auto burst = session->Ping(20);
  ASSERT_TRUE(burst.ok()) << burst.status();
  ASSERT_EQ(burst->rtts.size(), 20u);
  for (absl::Duration rtt : burst->rtts) {
    EXPECT_GT(rtt, absl::ZeroDuration());
    EXPECT_LT(rtt, absl::Milliseconds(100));
  }

  auto samples = session->SyncBurst(8);
  ASSERT_TRUE(samples.ok()) << samples.status();
  std::optional<OffsetEstimate> best = BestOffset(*samples);
  ASSERT_TRUE(best.has_value());
  EXPECT_LT(absl::AbsDuration(best->offset), absl::Milliseconds(5));

  for (BandwidthDirection d : {BandwidthDirection::kTx, BandwidthDirection::kRx}) {
    auto sample = session->Bandwidth(d, client_gate_);
    ASSERT_TRUE(sample.ok()) << sample.status();
    EXPECT_EQ(sample->bytes, 8u * (256 << 10));
    // Loopback moves far more than 10 MB/s; anything less is a broken transfer.
    EXPECT_GT(sample->bytes_per_second, 10e6);
  }
  // The session stays usable after transfers.
  EXPECT_TRUE(session->Ping(3).ok());
}

// The responder's 32-byte replies say how long its daemon has been silent
// (whole seconds, saturating), on every kind of command that gets one.
TEST_F(ProbeLinkTest, RepliesCarryHowLongTheRespondersDaemonHasBeenSilent) {
  StartServer(RealClock::Get(), &liveness_);
  std::unique_ptr<ProbeSession> session = Connected();
  ASSERT_NE(session, nullptr);
  EXPECT_FALSE(session->TakePeerDaemon().has_value()) << "no reply yet";
  auto silence = [&]() -> std::optional<uint32_t> {
    std::optional<PeerDaemonReport> report = session->TakePeerDaemon();
    if (!report.has_value()) {
      ADD_FAILURE() << "no reply said anything of the daemon";
      return std::nullopt;
    }
    return report->silent_seconds;
  };

  ASSERT_TRUE(session->Ping(3).ok());
  EXPECT_EQ(silence(), std::optional<uint32_t>(0));
  EXPECT_FALSE(session->TakePeerDaemon().has_value()) << "taken once";

  // The daemon stops ticking: 7.9 s later every reply says 7.
  daemon_time_.Advance(absl::Milliseconds(7900));
  ASSERT_TRUE(session->Ping(3).ok());
  EXPECT_EQ(silence(), std::optional<uint32_t>(7));
  ASSERT_TRUE(session->SyncBurst(2).ok());
  EXPECT_EQ(silence(), std::optional<uint32_t>(7));
  for (BandwidthDirection d : {BandwidthDirection::kTx, BandwidthDirection::kRx}) {
    ASSERT_TRUE(session->Bandwidth(d, client_gate_).ok());
    EXPECT_EQ(silence(), std::optional<uint32_t>(7));
  }
  // Saturates instead of wrapping.
  daemon_time_.Advance(absl::Hours(20));
  ASSERT_TRUE(session->Ping(1).ok());
  EXPECT_EQ(silence(), std::optional<uint32_t>(65535));
  // A tick: 0 again.
  liveness_.Heard();
  ASSERT_TRUE(session->Ping(1).ok());
  EXPECT_EQ(silence(), std::optional<uint32_t>(0));
}

// A responder of an older version sends the daemon bytes as zero: unknown,
// not "0 s". An echoed latency message gets no 32-byte reply: nothing.
TEST_F(ProbeLinkTest, AnOlderResponderSaysNothingOfItsDaemonAndEchoesCarryNothing) {
  StartServer(RealClock::Get());
  std::unique_ptr<ProbeSession> session = Connected();
  ASSERT_NE(session, nullptr);
  ASSERT_TRUE(session->Ping(3).ok());
  std::optional<PeerDaemonReport> report = session->TakePeerDaemon();
  ASSERT_TRUE(report.has_value());
  EXPECT_FALSE(report->silent_seconds.has_value());

  std::unique_ptr<ProbeSession> echoed = Connected(RealClock::Get(), EchoedPingParameters());
  ASSERT_NE(echoed, nullptr);
  ASSERT_TRUE(echoed->Ping(3).ok());
  EXPECT_FALSE(echoed->TakePeerDaemon().has_value());
}

TEST_F(ProbeLinkTest, ReadsTheKernelTcpStatisticsOfBothOwnPairs) {
  StartServer(RealClock::Get());
  std::unique_ptr<ProbeSession> session = Connected();
  ASSERT_NE(session, nullptr);
  ASSERT_TRUE(session->Ping(20).ok());
  ASSERT_TRUE(session->Bandwidth(BandwidthDirection::kTx, client_gate_).ok());

  // Both ends of both pairs live in this process: each read must find our
  // socket, never the responder's end of the same connection.
  std::vector<TcpConnection> connections = session->tcp_connections();
  ASSERT_EQ(connections.size(), 2u);
  auto source = NewSockDiagTcpStats();
  uint64_t sent[2] = {0, 0};
  for (size_t i = 0; i < 2; ++i) {
    TcpConnection& c = connections[i];
    SCOPED_TRACE(i == 0 ? "command pair" : "bulk pair");
    absl::StatusOr<TcpCounters> counters = source->Read(c);
    ASSERT_TRUE(counters.ok()) << counters.status();
    ASSERT_TRUE(c.resolved.has_value());
    EXPECT_TRUE(c.resolved->local == c.local || c.resolved->remote == c.remote)
        << c.resolved->local.ToString() << " -> " << c.resolved->remote.ToString();
    sent[i] = counters->sent_segments;
  }
  // 21 commands at least; on the bulk pair our 2 MiB (32 segments of
  // loopback's 64 KiB MSS or more), where the responder's end sent ~nothing.
  EXPECT_GE(sent[0], 21u);
  EXPECT_GE(sent[1], (8u * (256 << 10)) / 65536);
  // Exact lookups from now on, and the numbers only grow.
  ASSERT_TRUE(session->Ping(5).ok());
  absl::StatusOr<TcpCounters> again = source->Read(connections[0]);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_GE(again->sent_segments, sent[0] + 6);
}

TEST_F(ProbeLinkTest, MeasuresAShiftedPeerClockWithinItsErrorBound) {
  const absl::Duration shift = absl::Milliseconds(-250);
  ShiftedClock shifted(shift);
  StartServer(&shifted);
  std::unique_ptr<ProbeSession> session = Connected();
  ASSERT_NE(session, nullptr);
  auto samples = session->SyncBurst(16);
  ASSERT_TRUE(samples.ok()) << samples.status();
  std::optional<OffsetEstimate> best = BestOffset(*samples);
  ASSERT_TRUE(best.has_value());
  EXPECT_LE(absl::AbsDuration(best->offset - shift), best->error + absl::Microseconds(50));
  EXPECT_LT(absl::AbsDuration(best->offset - shift), absl::Milliseconds(2));
}

TEST_F(ProbeLinkTest, BusyGateDefersTransfersOnEitherSide) {
  StartServer(RealClock::Get());
  std::unique_ptr<ProbeSession> session = Connected();
  ASSERT_NE(session, nullptr);
  {
    auto lease = client_gate_.TryAcquire();
    ASSERT_TRUE(lease.has_value());
    auto sample = session->Bandwidth(BandwidthDirection::kTx, client_gate_);
    EXPECT_TRUE(absl::IsResourceExhausted(sample.status())) << sample.status();
  }
  {
    auto lease = server_gate_.TryAcquire();
    ASSERT_TRUE(lease.has_value());
    auto sample = session->Bandwidth(BandwidthDirection::kRx, client_gate_);
    EXPECT_TRUE(absl::IsResourceExhausted(sample.status()));
    EXPECT_NE(sample.status().message().find("peer"), absl::string_view::npos);
  }
  // A refused transfer leaves the session in step.
  EXPECT_TRUE(session->Ping(2).ok());
  EXPECT_TRUE(session->Bandwidth(BandwidthDirection::kTx, client_gate_).ok());
}

TEST_F(ProbeLinkTest, BothSidesAccountATransferAndTheServersBudgetDefersTheNext) {
  StartServer(RealClock::Get());
  std::unique_ptr<ProbeSession> session = Connected();
  ASSERT_NE(session, nullptr);
  // A budget so small that the server's gate stays closed for the test.
  server_gate_.SetBudget(1e-6);
  auto sample = session->Bandwidth(BandwidthDirection::kTx, client_gate_);
  ASSERT_TRUE(sample.ok()) << sample.status();
  // Each side counts the transfer from its own start to its own end. The
  // requester's lease wraps its measurement, so it counts at least the
  // elapsed time; the responder releases its lease after sending its last
  // reply, so it may count a moment later. The upper bound only catches a
  // transfer counted twice; how closely the gates account is the budget
  // benchmark's figure, not a timed assert.
  const absl::Time deadline = absl::Now() + absl::Seconds(2);
  while (server_gate_.transfer_time() == absl::ZeroDuration() && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_GE(client_gate_.transfer_time(), sample->elapsed);
  EXPECT_GT(server_gate_.transfer_time(), absl::ZeroDuration());
  for (BandwidthGate* gate : {&client_gate_, &server_gate_}) {
    EXPECT_LT(gate->transfer_time(), sample->elapsed + absl::Milliseconds(250));
  }
  const absl::Duration client_counted = client_gate_.transfer_time();
  const absl::Duration server_counted = server_gate_.transfer_time();
  auto refused = session->Bandwidth(BandwidthDirection::kRx, client_gate_);
  EXPECT_TRUE(absl::IsResourceExhausted(refused.status())) << refused.status();
  EXPECT_NE(refused.status().message().find("peer"), absl::string_view::npos);
  // A refusal is free: neither side counted it.
  EXPECT_EQ(client_gate_.transfer_time(), client_counted);
  EXPECT_EQ(server_gate_.transfer_time(), server_counted);
  EXPECT_TRUE(session->Ping(2).ok());
}

TEST_F(ProbeLinkTest, ResponderEndsWhenTheRequesterGoes) {
  StartServer(RealClock::Get());
  std::unique_ptr<ProbeSession> session = Connected();
  ASSERT_NE(session, nullptr);
  ASSERT_TRUE(session->Ping(1).ok());
  EXPECT_EQ(registry_->active_responders(), 1u);
  session.reset();
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (registry_->active_responders() > 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_EQ(registry_->active_responders(), 0u);
}

v1::ProbeParameters FlowParameters(uint32_t flows) {
  v1::ProbeParameters p = SmallParameters();
  p.set_flows(flows);
  return p;
}

TEST_F(ProbeLinkTest, ProbesOverEveryFlowEachItsOwnConnection) {
  StartServer(RealClock::Get(), &liveness_);
  std::unique_ptr<ProbeSession> session = Connected(RealClock::Get(), FlowParameters(4));
  ASSERT_NE(session, nullptr);
  ASSERT_EQ(session->flows(), 4u);
  // Command, bulk, then flows 1..3: five connections, on five local ports.
  std::vector<TcpConnection> connections = session->tcp_connections();
  ASSERT_EQ(connections.size(), 5u);
  auto source = NewSockDiagTcpStats();
  std::set<uint16_t> ports;
  std::vector<uint64_t> before;
  for (TcpConnection& c : connections) {
    absl::StatusOr<TcpCounters> counters = source->Read(c);
    ASSERT_TRUE(counters.ok()) << counters.status();
    ports.insert(c.resolved->local.port);
    before.push_back(counters->sent_segments);
  }
  EXPECT_EQ(ports.size(), 5u);
  // Each flow in turn: its pings (and timestamps) go over its own
  // connection, and the peer's replies come back over it.
  for (size_t flow : {2u, 0u, 3u, 1u}) {
    SCOPED_TRACE(absl::StrCat("flow ", flow));
    ASSERT_TRUE(session->UseFlow(flow).ok());
    EXPECT_EQ(session->current_flow(), flow);
    absl::StatusOr<PingBurst> burst = session->Ping(10);
    ASSERT_TRUE(burst.ok()) << burst.status();
    EXPECT_EQ(burst->rtts.size(), 10u);
    EXPECT_EQ(burst->samples.size(), 10u);
    const size_t index = TcpConnectionOfFlow(flow);
    EXPECT_EQ(FlowOfTcpConnection(index), std::optional<size_t>(flow));
    absl::StatusOr<TcpCounters> counters = source->Read(connections[index]);
    ASSERT_TRUE(counters.ok()) << counters.status();
    // 11 round trips (one warm-up); the move command went over the flow before.
    EXPECT_GE(counters->sent_segments, before[index] + 11);
    EXPECT_LE(counters->sent_segments, before[index] + 13);
    before[index] = counters->sent_segments;
  }
  EXPECT_EQ(FlowOfTcpConnection(1), std::nullopt);  // the bulk pair
  // Commands keep working on whichever flow is current, a transfer too.
  ASSERT_TRUE(session->Keepalive().ok());
  ASSERT_TRUE(session->Bandwidth(BandwidthDirection::kTx, client_gate_).ok());
  EXPECT_TRUE(session->TakePeerDaemon().has_value());
  EXPECT_FALSE(session->UseFlow(4).ok());
}

TEST_F(ProbeLinkTest, APeerThatNamesNoFlowsIsProbedOverOne) {
  StartServer(RealClock::Get());
  auto session = ProbeSession::Create(client_device_, FlowParameters(4), RealClock::Get());
  ASSERT_TRUE(session.ok()) << session.status();
  // A responder of an older version: it reads neither parameters.flows nor
  // the flow addresses, and serves the command and bulk pairs alone.
  v1::OpenProbePairRequest request = Request(**session);
  request.mutable_parameters()->clear_flows();
  request.clear_flow_gloo_addresses();
  v1::OpenProbePairResponse response;
  ASSERT_TRUE(Open(request, &response).ok());
  EXPECT_EQ(response.flow_gloo_addresses_size(), 0);
  ASSERT_TRUE((*session)->Connect(response.gloo_address(), response.bulk_gloo_address(), {}).ok());
  EXPECT_EQ((*session)->flows(), 1u);
  EXPECT_EQ((*session)->tcp_connections().size(), 2u);
  ASSERT_TRUE((*session)->Ping(5).ok());
}

TEST_F(ProbeLinkTest, FlowCountsThatDisagreeAreRefused) {
  StartServer(RealClock::Get());
  auto session = ProbeSession::Create(client_device_, FlowParameters(3), RealClock::Get());
  ASSERT_TRUE(session.ok()) << session.status();
  v1::OpenProbePairResponse response;
  // Fewer addresses than parameters.flows says.
  v1::OpenProbePairRequest short_request = Request(**session);
  short_request.mutable_flow_gloo_addresses()->RemoveLast();
  grpc::Status s = Open(short_request, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(absl::StrContains(s.error_message(), "flow_gloo_addresses")) << s.error_message();
  // More flows than the protocol allows.
  v1::OpenProbePairRequest too_many = Request(**session);
  too_many.mutable_parameters()->set_flows(kMaxProbeFlows + 1);
  s = Open(too_many, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(absl::StrContains(s.error_message(), "flows must be in [0, 8]")) << s.error_message();
  // A peer that answers with some flows but not all broke the protocol.
  ASSERT_TRUE(Open(Request(**session), &response).ok());
  ASSERT_EQ(response.flow_gloo_addresses_size(), 2);
  absl::Status connected = (*session)->Connect(
      response.gloo_address(), response.bulk_gloo_address(), {response.flow_gloo_addresses(0)});
  EXPECT_FALSE(connected.ok());
  EXPECT_TRUE(absl::StrContains(connected.message(), "2 probe flows, expected 3")) << connected;
}

TEST_F(ProbeLinkTest, RejectsStrangersAndNonsense) {
  StartServer(RealClock::Get());
  auto session = ProbeSession::Create(client_device_, SmallParameters(), RealClock::Get());
  ASSERT_TRUE(session.ok());
  v1::OpenProbePairResponse response;

  v1::OpenProbePairRequest stranger = Request(**session);
  stranger.set_from_node("mallory");
  EXPECT_EQ(Open(stranger, &response).error_code(), grpc::StatusCode::PERMISSION_DENIED);

  v1::OpenProbePairRequest wrong_node = Request(**session);
  wrong_node.set_to_node("elsewhere");
  grpc::Status s = Open(wrong_node, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(s.error_message().find("this is node 'server'"), std::string::npos);

  v1::OpenProbePairRequest old_protocol = Request(**session);
  old_protocol.set_protocol_version(99);
  EXPECT_EQ(Open(old_protocol, &response).error_code(), grpc::StatusCode::FAILED_PRECONDITION);

  v1::OpenProbePairRequest huge = Request(**session);
  huge.mutable_parameters()->set_bandwidth_message_bytes(uint64_t{1} << 40);
  s = Open(huge, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("bandwidth_message_bytes"), std::string::npos);

  v1::OpenProbePairRequest garbage = Request(**session);
  garbage.set_gloo_address(std::string(4096, 'x'));
  EXPECT_EQ(Open(garbage, &response).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  v1::OpenProbePairRequest short_address = Request(**session);
  short_address.set_gloo_address("xyz");
  // Accepted by the RPC, but the responder's connect fails on the bad
  // address and it ends by itself.
  Open(short_address, &response);
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (registry_->active_responders() > 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_EQ(registry_->active_responders(), 0u);
}

TEST_F(ProbeLinkTest, AnOpenClaimingAPeersNameNeitherBreaksItsLinkNorPilesUp) {
  StartServer(RealClock::Get());
  std::unique_ptr<ProbeSession> session = Connected();
  ASSERT_NE(session, nullptr);
  // Strangers open pairs under the client's name and never connect them.
  v1::ProbeParameters quick = SmallParameters();
  quick.set_gloo_timeout_ms(300);
  std::vector<std::unique_ptr<ProbeSession>> strangers;
  int exhausted = 0;
  for (int i = 0; i < 4; ++i) {
    auto stranger = ProbeSession::Create(client_device_, quick, RealClock::Get());
    ASSERT_TRUE(stranger.ok());
    v1::OpenProbePairResponse response;
    grpc::Status s = Open(Request(**stranger), &response);
    if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) ++exhausted;
    strangers.push_back(*std::move(stranger));
  }
  // The live responder plus two pending ones fill the per-peer quota.
  EXPECT_EQ(exhausted, 2);
  EXPECT_EQ(registry_->active_responders(), ResponderRegistry::kMaxRespondersPerPeer);
  auto rtts = session->Ping(5);
  EXPECT_TRUE(rtts.ok()) << rtts.status();
  strangers.clear();
  // The pending ones give up at their own (short) connect timeout.
  EXPECT_TRUE(WaitForResponders(1, absl::Seconds(10)));
  EXPECT_TRUE(session->Ping(1).ok());
}

TEST(GlooDeviceTest, OnlyTheEventLoopThreadGetsTheTimerSlack) {
  const int own_slack = prctl(PR_GET_TIMERSLACK);
  const std::set<std::string> before = ThreadIds();
  auto device = CreateGlooDevice("127.0.0.1");
  ASSERT_TRUE(device.ok()) << device.status();
  EXPECT_EQ(prctl(PR_GET_TIMERSLACK), own_slack);
  std::vector<int64_t> new_slacks;
  for (const std::string& id : ThreadIds()) {
    if (before.count(id) > 0) continue;
    std::ifstream in(absl::StrCat("/proc/", id, "/timerslack_ns"));
    int64_t slack = 0;
    if (in >> slack) new_slacks.push_back(slack);
  }
  // Gloo's loop is the device's only thread.
  EXPECT_EQ(new_slacks, std::vector<int64_t>{absl::ToInt64Nanoseconds(kGlooLoopTimerSlack)});

  // Not a valid host name, so the resolver refuses it without asking DNS
  // (a name like "x.invalid" would send a query to the machine's resolver).
  auto bad = CreateGlooDevice("not an address");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "not an address")) << bad.status();
  EXPECT_EQ(prctl(PR_GET_TIMERSLACK), own_slack);
}

TEST(GlooAddressTest, RendersIpAndPortOfRealPairs) {
  auto device = LoopbackDevice();
  auto session = ProbeSession::Create(device, SmallParameters(), RealClock::Get());
  ASSERT_TRUE(session.ok());
  const std::string text = GlooAddressToString((*session)->command_address());
  EXPECT_TRUE(absl::StartsWith(text, "127.0.0.1:")) << text;
  int port = 0;
  EXPECT_TRUE(absl::SimpleAtoi(text.substr(10), &port));
  EXPECT_GT(port, 0);
  EXPECT_TRUE(GlooAddressIsLoopback((*session)->command_address()));
  EXPECT_EQ(GlooAddressToString("garbage"), "");
  EXPECT_FALSE(GlooAddressIsLoopback(""));
}

TEST(ProbeScheduleTest, RunsEachKindAtItsIntervalAndKeepsTheLinkAlive) {
  ScheduleConfig config;
  config.latency_interval = absl::Seconds(5);
  config.skew_interval = absl::Seconds(10);
  config.bandwidth_interval = absl::Seconds(60);
  config.jitter = 0;
  ProbeSchedule schedule(config, absl::Seconds(2), 1);
  absl::Duration now = absl::Seconds(100);
  schedule.Reset(now);
  int counts[4] = {0, 0, 0, 0};
  const absl::Duration end = now + absl::Seconds(600);
  while (true) {
    absl::Duration at;
    ProbeSchedule::Kind kind = schedule.Next(&at);
    ASSERT_GE(at, now);
    EXPECT_LE(at - now, absl::Seconds(2)) << "a gap longer than the keepalive";
    if (at > end) break;
    now = at;
    counts[static_cast<int>(kind)]++;
    schedule.Done(kind, now);
  }
  EXPECT_NEAR(counts[0], 120, 1);  // latency every 5 s
  EXPECT_NEAR(counts[1], 60, 1);   // skew every 10 s
  EXPECT_NEAR(counts[2], 10, 1);   // bandwidth every 60 s
  EXPECT_GT(counts[3], 0);
}

}  // namespace
}  // namespace gloowatch
