// The daemon <-> transport channel carries messages larger than a
// SOCK_SEQPACKET packet may be (the config of a 10,000-node cluster) intact,
// and does not mix up concurrent senders.
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "channel/message_channel.h"
#include "channel/peer_events.h"
#include "gtest/gtest.h"
#include "proto/transport.pb.h"
#include "tests/support/wait_for.h"

namespace gloowatch {
namespace {

using transport::v1::FromTransport;
using transport::v1::ToTransport;
constexpr MessageChannel::Received kMessage = MessageChannel::Received::kMessage;

class ChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int fds[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds), 0);
    a_ = std::make_unique<MessageChannel>(fds[0]);
    b_ = std::make_unique<MessageChannel>(fds[1]);
  }
  std::unique_ptr<MessageChannel> a_, b_;
};

ToTransport BigConfigure(size_t peers) {
  ToTransport m;
  std::string yaml = "node: n0\npeers:\n";
  for (size_t i = 0; i < peers; ++i) {
    absl::StrAppend(&yaml, "  - name: n", i + 1, "\n    grpc: 127.0.", i / 250, ".", i % 250 + 1,
                    ":7601\n    group: rack", i / 40, "\n");
    if (i % 100 == 0) m.mutable_configure()->add_probe_peers(absl::StrCat("n", i + 1));
  }
  m.mutable_configure()->set_yaml(yaml);
  m.mutable_configure()->set_source("big.yaml");
  return m;
}

TEST_F(ChannelTest, CarriesAConfigFarLargerThanTheSocketBuffer) {
  const ToTransport sent = BigConfigure(10000);
  ASSERT_GT(sent.ByteSizeLong(), 500u << 10);  // the default socket buffer is ~208 KiB
  std::thread sender([&] { EXPECT_TRUE(a_->Send(sent)); });
  ToTransport received;
  ASSERT_EQ(b_->Receive(&received), kMessage);
  sender.join();
  EXPECT_EQ(received.configure().yaml(), sent.configure().yaml());
  EXPECT_EQ(received.configure().probe_peers_size(), 100);
  EXPECT_EQ(received.configure().probe_peers(99), "n9901");

  // Small messages still work after it, both ways.
  FromTransport heartbeat;
  heartbeat.mutable_heartbeat()->set_stalled(true);
  ASSERT_TRUE(b_->Send(heartbeat));
  FromTransport got;
  ASSERT_EQ(a_->Receive(&got), kMessage);
  EXPECT_TRUE(got.heartbeat().stalled());
}

TEST_F(ChannelTest, ConcurrentSendersDoNotInterleave) {
  const ToTransport big = BigConfigure(3000);  // ~200 KiB: four packets
  constexpr int kBig = 20, kSmall = 2000;
  std::thread big_sender([&] {
    for (int i = 0; i < kBig; ++i) ASSERT_TRUE(a_->Send(big));
  });
  std::thread small_sender([&] {
    for (int i = 0; i < kSmall; ++i) {
      ToTransport m;
      m.mutable_open()->set_id(i);
      ASSERT_TRUE(a_->Send(m));
    }
  });
  int bigs = 0, smalls = 0;
  uint64_t next_id = 0;
  while (bigs < kBig || smalls < kSmall) {
    ToTransport m;
    ASSERT_EQ(b_->Receive(&m), kMessage);
    if (m.has_configure()) {
      ASSERT_EQ(m.configure().yaml(), big.configure().yaml());
      ++bigs;
    } else {
      ASSERT_EQ(m.open().id(), next_id++);  // in order, none lost
      ++smalls;
    }
  }
  big_sender.join();
  small_sender.join();
}

TEST_F(ChannelTest, RefusesMessagesOverTheLimitAndEndsOnShutdown) {
  ToTransport huge;
  huge.mutable_configure()->set_yaml(std::string(9 << 20, 'x'));
  EXPECT_FALSE(a_->Send(huge));
  std::thread closer([&] { a_->Shutdown(); });
  ToTransport m;
  EXPECT_EQ(b_->Receive(&m), MessageChannel::Received::kClosed);
  closer.join();
}

TEST_F(ChannelTest, ReceiveTimesOutWithoutLosingTheNextMessage) {
  ToTransport m;
  EXPECT_EQ(b_->Receive(&m, absl::Milliseconds(50)), MessageChannel::Received::kTimeout);
  m.mutable_open()->set_id(7);
  ASSERT_TRUE(a_->Send(m));
  ToTransport got;
  ASSERT_EQ(b_->Receive(&got, absl::Seconds(10)), kMessage);
  EXPECT_EQ(got.open().id(), 7u);
}

TEST_F(ChannelTest, AMessageCutOffHalfWayEndsTheStream) {
  // The first packet of a two-packet message, and nothing after it.
  const char first[] = {1, 'x'};
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds), 0);
  MessageChannel reader(fds[0]);
  ASSERT_EQ(send(fds[1], first, sizeof(first), 0), 2);
  close(fds[1]);
  ToTransport m;
  EXPECT_EQ(reader.Receive(&m, absl::Seconds(10)), MessageChannel::Received::kClosed);
}

// Whether thread `tid` of this process sleeps inside a send system call: the
// kernel's own account (/proc/self/task/TID/syscall names the call a blocked
// thread is in, and says "running" for one on a CPU).
bool BlockedInSend(pid_t tid) {
  std::ifstream in(absl::StrCat("/proc/self/task/", tid, "/syscall"));
  long call = -1;
  if (!(in >> call)) return false;
  return call == SYS_sendto || call == SYS_sendmsg
#ifdef SYS_send
         || call == SYS_send
#endif
      ;
}

TEST_F(ChannelTest, ShutdownWakesASenderBlockedOnAFullSocket) {
  ToTransport big = BigConfigure(20000);  // several MiB: far more than the buffer holds
  std::atomic<pid_t> sender_tid{0};
  std::atomic<bool> sent{true};
  std::thread sender([&] {
    sender_tid = gettid();
    sent = a_->Send(big);
  });
  // Shut down only once the sender is provably asleep in send() on the full
  // socket: a Shutdown that came first would fail the Send without testing
  // the wake-up.
  const bool blocked =
      testing::WaitFor([&] { return sender_tid.load() != 0 && BlockedInSend(sender_tid.load()); },
                       absl::Seconds(10), absl::Milliseconds(1));
  a_->Shutdown();
  sender.join();  // returns: no reader needed
  EXPECT_TRUE(blocked) << "the sender never blocked in send()";
  EXPECT_FALSE(sent);
}

// One probe's measurements cost the daemon one message: they wait for the
// prober's Flush, a state change takes them along at once, and a bandwidth due
// time alone waits for company (the newest replaces an older one).
TEST_F(ChannelTest, PeerEventsTravelInBatches) {
  ChannelObserver observer("node-b", a_.get());
  FromTransport m;
  observer.RecordRtts({absl::Microseconds(20), absl::Microseconds(30)});
  observer.RecordOffset({absl::Milliseconds(3), absl::Microseconds(40), absl::Microseconds(20)});
  TcpSample tcp;
  tcp.sent_segments = 12;
  observer.RecordTcp(tcp);
  observer.RecordBandwidthDue(absl::FromUnixSeconds(100));
  observer.RecordBandwidthDue(absl::FromUnixSeconds(160));
  EXPECT_EQ(b_->Receive(&m, absl::Milliseconds(50)), MessageChannel::Received::kTimeout);

  observer.Flush();
  ASSERT_EQ(b_->Receive(&m, absl::Seconds(10)), kMessage);
  ASSERT_TRUE(m.has_peer());
  EXPECT_EQ(m.peer().peer(), "node-b");
  ASSERT_EQ(m.peer().events_size(), 4);
  EXPECT_EQ(m.peer().events(0).rtts().nanos_size(), 2);
  EXPECT_EQ(m.peer().events(1).offset().offset_nanos(), 3000000);
  EXPECT_EQ(m.peer().events(2).tcp().sent_segments(), 12u);
  EXPECT_EQ(m.peer().events(3).bandwidth_due().unix_nanos(), 160000000000);

  observer.Flush();  // nothing waits: no message
  observer.RecordBandwidthDue(absl::FromUnixSeconds(200));
  observer.Flush();  // a due time alone waits
  EXPECT_EQ(b_->Receive(&m, absl::Milliseconds(50)), MessageChannel::Received::kTimeout);

  observer.RecordRtts({absl::Microseconds(25)});
  observer.RecordFailure(v1::FAILURE_REASON_TIMEOUT, "timed out");
  ASSERT_EQ(b_->Receive(&m, absl::Seconds(10)), kMessage);
  ASSERT_EQ(m.peer().events_size(), 3);
  EXPECT_TRUE(m.peer().events(0).has_rtts());
  EXPECT_EQ(m.peer().events(1).failure().reason(), v1::FAILURE_REASON_TIMEOUT);
  EXPECT_EQ(m.peer().events(2).bandwidth_due().unix_nanos(), 200000000000);
  EXPECT_EQ(b_->Receive(&m, absl::Milliseconds(50)), MessageChannel::Received::kTimeout);
}

}  // namespace
}  // namespace gloowatch
