// The training ranks' sockets, read by inode from the real kernel table:
// loopback connections made here stand in for a rank's Gloo pairs and its
// store connection.
#include "daemon/training/job_sockets.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "common/proto_time.h"
#include "gtest/gtest.h"
#include "tests/support/simulated_clock.h"

namespace gloowatch {
namespace {

uint16_t Port(int fd, bool peer) {
  sockaddr_in a{};
  socklen_t len = sizeof(a);
  if (peer) {
    getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len);
  } else {
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  }
  return ntohs(a.sin_port);
}

uint64_t Inode(int fd) {
  struct stat st {};
  fstat(fd, &st);
  return st.st_ino;
}

// A connected pair on 127.0.0.1: client and accepted server ends.
struct Connection {
  int listener = -1, client = -1, server = -1;
  Connection() {
    listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    listen(listener, 4);
    socklen_t len = sizeof(a);
    getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len);
    client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    connect(client, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    server = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  }
  ~Connection() {
    for (int fd : {listener, client, server}) {
      if (fd >= 0) close(fd);
    }
  }
};

TEST(JobSocketsTest, ReadsListedSocketsByInodeAndTellsTheStoreApart) {
  SimulatedClock clock(absl::FromUnixSeconds(1000));
  auto table = NewSockDiagSocketTable();
  Connection pair, store, unlisted;
  ASSERT_GE(pair.server, 0);
  ASSERT_GE(store.server, 0);
  const uint16_t store_port = Port(store.client, /*peer=*/true);
  JobSockets sockets(&clock, table.get(), {});
  std::unordered_map<uint64_t, JobSockets::Wanted> wanted = {{Inode(pair.client), {store_port}},
                                                             {Inode(store.client), {store_port}}};
  ASSERT_TRUE(sockets.Read(wanted).ok());
  EXPECT_EQ(sockets.size(), 2u);
  std::optional<v1::JobSocket> p = sockets.Find(Inode(pair.client));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->kind(), "pair");
  EXPECT_EQ(p->state(), "established");
  EXPECT_EQ(p->local(), absl::StrCat("127.0.0.1:", Port(pair.client, false)));
  EXPECT_EQ(p->remote(), absl::StrCat("127.0.0.1:", Port(pair.client, true)));
  std::optional<v1::JobSocket> s = sockets.Find(Inode(store.client));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->kind(), "store");
  EXPECT_FALSE(sockets.Find(Inode(unlisted.client)).has_value());
  EXPECT_FALSE(sockets.Find(Inode(pair.server)).has_value());
}

TEST(JobSocketsTest, DataNobodyReadsIsUnreadSinceTheFirstReadThatSawIt) {
  SimulatedClock clock(absl::FromUnixSeconds(1000));
  auto table = NewSockDiagSocketTable();
  Connection c;
  ASSERT_GE(c.server, 0);
  JobSockets sockets(&clock, table.get(), {});
  const std::unordered_map<uint64_t, JobSockets::Wanted> wanted = {{Inode(c.server), {}},
                                                                   {Inode(c.client), {}}};
  const std::string data(3000, 'x');
  ASSERT_EQ(send(c.client, data.data(), data.size(), 0), static_cast<ssize_t>(data.size()));
  usleep(20000);  // loopback delivers at once; leave the softirq a moment
  ASSERT_TRUE(sockets.Read(wanted).ok());
  std::optional<v1::JobSocket> r = sockets.Find(Inode(c.server));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->receive_queue_bytes(), 3000u);
  EXPECT_FALSE(r->has_unread_since()) << "one read cannot tell";
  const absl::Time first = clock.Now();
  clock.Advance(absl::Seconds(5));
  ASSERT_TRUE(sockets.Read(wanted).ok());
  r = sockets.Find(Inode(c.server));
  ASSERT_TRUE(r.has_value());
  ASSERT_TRUE(r->has_unread_since());
  EXPECT_EQ(FromProtoTimestamp(r->unread_since()), first);
  // The sender's side: everything acknowledged, nothing unacked.
  std::optional<v1::JobSocket> w = sockets.Find(Inode(c.client));
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->unacked_bytes(), 0u);
  EXPECT_EQ(w->bytes_sent(), 3000u);
  EXPECT_EQ(w->backoff(), 0u);
  EXPECT_FALSE(w->zero_window());

  // The process reads: no longer unread.
  char buf[4096];
  ASSERT_EQ(recv(c.server, buf, sizeof(buf), 0), 3000);
  clock.Advance(absl::Seconds(5));
  ASSERT_TRUE(sockets.Read(wanted).ok());
  r = sockets.Find(Inode(c.server));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->receive_queue_bytes(), 0u);
  EXPECT_FALSE(r->has_unread_since());
  EXPECT_EQ(r->bytes_received(), 3000u);
}

TEST(JobSocketsTest, TheDaemonsOwnPortsAreNotTheJobsAndClosedSocketsAreForgotten) {
  SimulatedClock clock(absl::FromUnixSeconds(1000));
  auto table = NewSockDiagSocketTable();
  auto c = std::make_unique<Connection>();
  ASSERT_GE(c->server, 0);
  JobSockets sockets(&clock, table.get(), {Port(c->client, /*peer=*/true)});
  const std::unordered_map<uint64_t, JobSockets::Wanted> wanted = {{Inode(c->client), {}},
                                                                   {Inode(c->server), {}}};
  ASSERT_TRUE(sockets.Read(wanted).ok());
  EXPECT_FALSE(sockets.Find(Inode(c->client)).has_value()) << "a channel to our own port";
  EXPECT_TRUE(sockets.Find(Inode(c->server)).has_value());
  const uint64_t server = Inode(c->server);
  c.reset();
  ASSERT_TRUE(sockets.Read(wanted).ok());
  EXPECT_FALSE(sockets.Find(server).has_value());
  EXPECT_EQ(sockets.size(), 0u);
}

// The real table, counting its walks by family.
class CountingTable : public TcpSocketTable {
 public:
  absl::Status Visit(int family, const std::function<bool(uint64_t)>& keep,
                     const std::function<void(const TcpDiagEntry&)>& visit) const override {
    ++(family == AF_INET6 ? ipv6_walks : ipv4_walks);
    return real_->Visit(family, keep, visit);
  }
  mutable int ipv4_walks = 0, ipv6_walks = 0;

 private:
  std::unique_ptr<TcpSocketTable> real_ = NewSockDiagSocketTable();
};

TEST(JobSocketsTest, TheIpv6TableIsWalkedOnlyForInodesNotSeenBefore) {
  SimulatedClock clock(absl::FromUnixSeconds(1000));
  CountingTable table;
  Connection c;
  ASSERT_GE(c.server, 0);
  const int unix_socket = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(unix_socket, 0);
  JobSockets sockets(&clock, &table, {});
  // An IPv4 pair and a Unix socket, as a rank lists them.
  std::unordered_map<uint64_t, JobSockets::Wanted> wanted = {
      {Inode(c.client), {}}, {Inode(c.server), {}}, {Inode(unix_socket), {}}};
  ASSERT_TRUE(sockets.Read(wanted).ok());
  EXPECT_EQ(table.ipv4_walks, 1);
  EXPECT_EQ(table.ipv6_walks, 1) << "the Unix socket's inode is new: looked for once";
  ASSERT_TRUE(sockets.Read(wanted).ok());
  EXPECT_EQ(table.ipv4_walks, 2);
  EXPECT_EQ(table.ipv6_walks, 1) << "known absent from both tables";
  EXPECT_EQ(sockets.size(), 2u);
  // A new connection of the rank: both tables again, once.
  Connection more;
  wanted[Inode(more.client)] = {};
  ASSERT_TRUE(sockets.Read(wanted).ok());
  ASSERT_TRUE(sockets.Read(wanted).ok());
  EXPECT_EQ(table.ipv4_walks, 4);
  EXPECT_EQ(table.ipv6_walks, 1) << "found in the IPv4 table: no IPv6 walk needed";
  EXPECT_EQ(sockets.size(), 3u);
  close(unix_socket);
}

}  // namespace
}  // namespace gloowatch
