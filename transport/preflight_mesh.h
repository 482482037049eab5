// The transport's side of a job preflight (gloowatch.v1.Preflight): a Gloo
// device on the address the job would use, one context of the job's host
// count with a pair per other host, connected as
// gloo::rendezvous::Context::connectFullMesh does, the reverse round (each
// pair the other way, transport/preflight_reverse.h) and a TCP connect to
// the job's rendezvous store. Meshes run on their own threads, never on the
// transport's message loop, and at most kMaxMeshes exist at once.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "proto/transport.pb.h"

namespace gloowatch {

class PreflightMeshes {
 public:
  using Reply = std::function<void(const transport::v1::PreflightReply&)>;
  static constexpr size_t kMaxMeshes = 2;
  static constexpr uint32_t kMaxHosts = 1024;
  // Connects in flight per mesh: each may wait a whole timeout.
  static constexpr size_t kMaxConnectThreads = 32;

  PreflightMeshes(const Clock* clock, Reply reply) : clock_(clock), reply_(std::move(reply)) {}
  // Waits for the meshes' threads, each within its job's timeout.
  ~PreflightMeshes();

  // Answers every step through `reply`, from another thread; never blocks.
  void Handle(const transport::v1::PreflightStep& step);

  struct Mesh;

 private:
  void Prepare(uint64_t id, const std::string& session,
               const transport::v1::PreflightPrepare& prepare);
  void Connect(uint64_t id, const std::string& session, const v1::PreflightConnectRequest& connect);
  void Fail(uint64_t id, const absl::Status& status);
  // Drops meshes prepared but never connected within their time.
  void DropStale() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Clock* const clock_;
  const Reply reply_;
  absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<Mesh>> meshes_ ABSL_GUARDED_BY(mu_);
  // Threads preparing or connecting a mesh; each uses this object until the
  // end (under mu_, its last use).
  size_t threads_ ABSL_GUARDED_BY(mu_) = 0;
};

// A TCP connect to host:port (resolved as the job's store client would,
// every address in getaddrinfo order) within `timeout`.
v1::PreflightMasterResult CheckStore(const std::string& host, uint32_t port,
                                     absl::Duration timeout);

}  // namespace gloowatch
