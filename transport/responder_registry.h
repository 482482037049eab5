// The serving side of probe pairs in the transport process.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "channel/responder_opener.h"
#include "common/clock.h"
#include "transport/probe_link.h"

namespace gloo::transport {
class Device;
}

namespace gloowatch {

// Responders in this process. Each peer has at most kMaxRespondersPerPeer
// serving threads. A new open never stops a live responder (a caller merely
// claiming a peer's name must not break that peer's link); responders whose
// requester went away end at their own timeout.
class ResponderRegistry final : public ResponderOpener {
 public:
  static constexpr size_t kMaxRespondersPerPeer = 3;

  // `liveness`: what the responders' replies say of this node's daemon (null:
  // nothing, as an older responder).
  ResponderRegistry(std::string node, std::string version,
                    std::shared_ptr<gloo::transport::Device> device, BandwidthGate* gate,
                    const Clock* clock, const DaemonLiveness* liveness = nullptr);
  // Stops every responder and waits until each has ended.
  ~ResponderRegistry() override;

  absl::StatusOr<v1::OpenProbePairResponse> Open(const v1::OpenProbePairRequest& request);
  void StartOpen(const v1::OpenProbePairRequest& request, Done done) override {
    done(Open(request));
  }
  // Stops every responder of peers not in `peers`.
  void Retain(const std::set<std::string>& peers);
  // Stops every responder; they end at their next command or timeout.
  void StopAll();
  size_t active_responders();

 private:
  void Reap() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string node_;
  const std::string version_;
  std::shared_ptr<gloo::transport::Device> device_;
  BandwidthGate* gate_;
  const Clock* clock_;
  const DaemonLiveness* const liveness_;
  absl::Mutex mu_;
  std::map<std::string, std::vector<std::shared_ptr<ProbeResponder>>> responders_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace gloowatch
