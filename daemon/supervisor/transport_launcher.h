// How the daemon starts its transport (transport/transport.h): as a process
// of its own in production, for the reason daemon/supervisor/transport_supervisor.h
// gives; tests may start it otherwise (tests/inprocess runs it as a thread).
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace gloowatch {

// One transport a launcher started. The supervisor ends it with Kill, then
// Wait, exactly once each.
class LaunchedTransport {
 public:
  virtual ~LaunchedTransport() = default;
  // What the daemon's messages call it: "process 1234", "thread".
  virtual std::string name() const = 0;
  // Its process id, for the transport's process metrics; -1 when it is no
  // process of its own (its threads then count in the daemon's figures).
  virtual pid_t pid() const = 0;
  // Ends it whatever state it is in: a process is killed; a thread is told to
  // stop (its channel closes) and ends within its probers' Gloo timeouts.
  virtual void Kill() = 0;
  // Waits until it has ended and freed what it held; how it ended ("exited
  // with code 0", "was killed by signal 9 (Killed)").
  virtual std::string Wait() = 0;
};

class TransportLauncher {
 public:
  virtual ~TransportLauncher() = default;
  // Starts a transport that talks to the daemon over `fd` (one end of a
  // SOCK_SEQPACKET socketpair; the launcher owns it from here on, started or
  // not) and binds its Gloo device to `gloo_address`.
  virtual absl::StatusOr<std::unique_ptr<LaunchedTransport>> Launch(
      int fd, const std::string& gloo_address) = 0;
};

// The production launcher: `executable` (gloowatchd) re-executed with
// --transport_fd=3, a child process that dies with the daemon.
std::unique_ptr<TransportLauncher> NewProcessLauncher(std::string executable,
                                                      std::string log_level);

}  // namespace gloowatch
