#include "channel/message_channel.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

namespace gloowatch {
namespace {

// A message may span several packets: a SOCK_SEQPACKET packet must fit the
// socket's send buffer (about 208 KiB by default), and the config of a
// 10,000-node cluster is larger. Each packet starts with a byte that says
// whether more of the same message follow.
constexpr size_t kMaxPacketPayload = 64 << 10;
// Far above any message we send (a 1 MiB config and the peers to probe).
constexpr size_t kMaxMessageBytes = 8 << 20;
// The packets of one message are sent back to back; one that takes longer
// than this after the first means a stopped or broken sender.
constexpr absl::Duration kPacketGap = absl::Seconds(5);

}  // namespace

MessageChannel::MessageChannel(int fd) : fd_(fd), packet_(kMaxPacketPayload + 1) {}

MessageChannel::~MessageChannel() { close(fd_); }

bool MessageChannel::Send(const google::protobuf::MessageLite& message) {
  const std::string bytes = message.SerializeAsString();
  if (bytes.size() > kMaxMessageBytes) return false;
  std::string packet;
  // The packets of one message must not interleave with another's.
  absl::MutexLock lock(&send_mu_);
  size_t offset = 0;
  do {
    const size_t n = std::min(kMaxPacketPayload, bytes.size() - offset);
    packet.assign(1, offset + n < bytes.size() ? 1 : 0);
    packet.append(bytes, offset, n);
    ssize_t sent;
    do {
      sent = send(fd_, packet.data(), packet.size(), MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    if (sent != static_cast<ssize_t>(packet.size())) return false;
    offset += n;
  } while (offset < bytes.size());
  return true;
}

bool MessageChannel::WaitReadable(absl::Duration timeout) const {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    int wait_ms = -1;
    if (timeout != absl::InfiniteDuration()) {
      wait_ms = static_cast<int>(std::max<int64_t>(
          0, absl::ToInt64Milliseconds(absl::Ceil(deadline - absl::Now(), absl::Milliseconds(1)))));
    }
    pollfd p{fd_, POLLIN, 0};
    const int ready = poll(&p, 1, wait_ms);
    if (ready > 0) return true;  // readable, or an error/hang-up recv will report
    if (ready == 0) return false;
    if (errno != EINTR) return true;
  }
}

bool MessageChannel::HasUnread() const {
  pollfd p{fd_, POLLIN, 0};
  return poll(&p, 1, 0) > 0 && (p.revents & POLLIN) != 0;
}

MessageChannel::Received MessageChannel::Receive(google::protobuf::MessageLite* message,
                                                 absl::Duration timeout) {
  std::string bytes;
  bool started = false;
  while (true) {
    if (!WaitReadable(started ? kPacketGap : timeout)) {
      return started ? Received::kClosed : Received::kTimeout;
    }
    const ssize_t n = recv(fd_, packet_.data(), packet_.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Received::kClosed;
    started = true;
    bytes.append(packet_.data() + 1, static_cast<size_t>(n) - 1);
    if (bytes.size() > kMaxMessageBytes) return Received::kClosed;
    if (packet_[0] == 0) break;
  }
  return message->ParseFromString(bytes) ? Received::kMessage : Received::kClosed;
}

void MessageChannel::Shutdown() { shutdown(fd_, SHUT_RDWR); }

}  // namespace gloowatch
