// Serialized protobuf messages over a SOCK_SEQPACKET socket between the daemon
// and its transport process.
#pragma once

#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "google/protobuf/message_lite.h"

namespace gloowatch {

// Each message goes in one or more packets of at most 64 KiB (a packet must
// fit the socket buffer). Send is thread-safe and blocks while the other side
// does not read; Receive has one caller at a time.
class MessageChannel {
 public:
  explicit MessageChannel(int fd);  // takes ownership
  ~MessageChannel();
  MessageChannel(const MessageChannel&) = delete;
  MessageChannel& operator=(const MessageChannel&) = delete;

  // False when the message is larger than 8 MiB or the socket failed.
  bool Send(const google::protobuf::MessageLite& message);

  enum class Received { kMessage, kTimeout, kClosed };
  // Waits up to `timeout` for the first packet of a message. kClosed at end
  // of stream, on error, on a malformed message, or when a message stops
  // half-way (the stream cannot be resynchronized after that).
  Received Receive(google::protobuf::MessageLite* message,
                   absl::Duration timeout = absl::InfiniteDuration());
  // Wakes a blocked Send or Receive (which then fail) and ends the stream.
  void Shutdown();
  // Whether a packet waits to be read now (any thread; never blocks).
  bool HasUnread() const;

 private:
  // Waits for a packet to read; false when `timeout` passed first.
  bool WaitReadable(absl::Duration timeout) const;

  const int fd_;
  absl::Mutex send_mu_;
  std::vector<char> packet_;  // Receive's buffer
};

}  // namespace gloowatch
