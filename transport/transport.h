// The transport: everything that touches Gloo, apart from the daemon
// (daemon/supervisor/transport_supervisor.h says why). One object owns what it runs: the
// channel to the daemon, the heartbeat thread, the Gloo device, the
// BandwidthGate, the responders, the probers, the preflight meshes and the
// TCP statistics source. RunTransport (transport_main.h) runs one as the
// transport process; tests run them as threads in one process.
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "channel/message_channel.h"
#include "common/clock.h"
#include "proto/transport.pb.h"
#include "transport/preflight_mesh.h"
#include "transport/probe_link.h"
#include "transport/responder_registry.h"
#include "transport/tcp_stats.h"

namespace gloo::transport {
class Device;
}

namespace gloowatch {

class ProberSet;

class Transport {
 public:
  // `fd`: this side of the socketpair to the daemon, owned from here on.
  Transport(std::string gloo_address, int fd, const Clock* clock);
  // Stops (if Run still runs, it must have returned first), then waits for
  // every thread it started: the heartbeat thread, the preflight meshes, the
  // probers and the responders (each ends within its Gloo timeout once
  // stopped, a mesh within its job's timeout).
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // Takes its config from the daemon, probes the peers the daemon selects
  // from `gloo_address` and serves the responders it asks for, until the
  // channel closes (the daemon stopped it or went away) or Stop(). Returns
  // the exit code: kExitOk, or why it could not start (kExitConfig,
  // kExitUnavailable) once it told the daemon. Called once.
  int Run();
  // Ends Run and the heartbeats from any thread; the daemon sees the channel
  // close.
  void Stop();

 private:
  // Every second from the start (parsing a large config takes a while, and
  // the daemon kills a transport that stays silent) until the channel fails
  // or Stop.
  void SendHeartbeats();
  transport::v1::FromTransport Heartbeat();
  // Tells the daemon why we cannot start; returns `exit_code`.
  int FailStart(const absl::Status& why, int exit_code);
  // Answers the daemon's messages until the channel closes.
  void Serve();

  const std::string gloo_address_;
  const Clock* const clock_;
  // When the daemon last ticked (a DaemonTick), for the responders' replies.
  DaemonLiveness liveness_{clock_};
  MessageChannel channel_;
  std::thread heartbeat_;
  // Set up by Run, in this order; freed in the reverse order, each after the
  // threads that use the ones before it.
  std::shared_ptr<gloo::transport::Device> device_;
  std::unique_ptr<BandwidthGate> gate_;
  std::unique_ptr<TcpStatsSource> tcp_stats_;
  std::unique_ptr<ResponderRegistry> registry_;
  std::unique_ptr<ProberSet> probers_;
  std::unique_ptr<PreflightMeshes> meshes_;

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // What the heartbeat reports on, once Run has set it up.
  ProberSet* reported_probers_ ABSL_GUARDED_BY(mu_) = nullptr;
  const BandwidthGate* reported_gate_ ABSL_GUARDED_BY(mu_) = nullptr;
};

}  // namespace gloowatch
