#include "transport/responder_registry.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "common/user_text.h"

namespace gloowatch {

ResponderRegistry::ResponderRegistry(std::string node, std::string version,
                                     std::shared_ptr<gloo::transport::Device> device,
                                     BandwidthGate* gate, const Clock* clock,
                                     const DaemonLiveness* liveness)
    : node_(std::move(node)),
      version_(std::move(version)),
      device_(std::move(device)),
      gate_(gate),
      clock_(clock),
      liveness_(liveness) {}

ResponderRegistry::~ResponderRegistry() {
  StopAll();
  // Their threads use the gate and the clock: wait until each has ended (at
  // its next command or Gloo timeout). A responder signals nothing when it
  // ends, hence the polling.
  while (active_responders() > 0) absl::SleepFor(absl::Milliseconds(10));
}

void ResponderRegistry::Retain(const std::set<std::string>& peers) {
  absl::MutexLock lock(&mu_);
  for (auto& [name, list] : responders_) {
    if (peers.count(name) == 0) {
      for (auto& responder : list) responder->Stop();
    }
  }
}

void ResponderRegistry::StopAll() {
  absl::MutexLock lock(&mu_);
  for (auto& [name, list] : responders_) {
    for (auto& responder : list) responder->Stop();
  }
}

size_t ResponderRegistry::active_responders() {
  absl::MutexLock lock(&mu_);
  Reap();
  size_t n = 0;
  for (const auto& [name, list] : responders_) n += list.size();
  return n;
}

void ResponderRegistry::Reap() {
  for (auto it = responders_.begin(); it != responders_.end();) {
    auto& list = it->second;
    list.erase(
        std::remove_if(list.begin(), list.end(), [](const auto& r) { return r->finished(); }),
        list.end());
    it = list.empty() ? responders_.erase(it) : std::next(it);
  }
}

absl::StatusOr<v1::OpenProbePairResponse> ResponderRegistry::Open(
    const v1::OpenProbePairRequest& request) {
  const std::string& peer = request.from_node();
  auto exhausted = [&] {
    return absl::ResourceExhaustedError(
        absl::StrCat(Quote(peer), " already has ", kMaxRespondersPerPeer,
                     " probe pairs open or winding down; retry later"));
  };
  {
    absl::MutexLock lock(&mu_);
    Reap();
    if (responders_[peer].size() >= kMaxRespondersPerPeer) return exhausted();
  }
  auto responder =
      ProbeResponder::Create(device_, request.parameters(), clock_, gate_, peer, liveness_);
  if (!responder.ok()) return responder.status();
  v1::OpenProbePairResponse response;
  response.set_protocol_version(kProbeProtocolVersion);
  response.set_node(node_);
  response.set_version(version_);
  response.set_gloo_address((*responder)->command_address());
  response.set_bulk_gloo_address((*responder)->bulk_address());
  for (const std::string& address : (*responder)->flow_addresses()) {
    response.add_flow_gloo_addresses(address);
  }
  {
    absl::MutexLock lock(&mu_);
    auto& list = responders_[peer];
    if (list.size() >= kMaxRespondersPerPeer) return exhausted();
    list.push_back(*responder);
  }
  (*responder)
      ->Start(request.gloo_address(), request.bulk_gloo_address(),
              {request.flow_gloo_addresses().begin(), request.flow_gloo_addresses().end()});
  GW_LOG(kDebug, "serving probe pair for %s", peer);
  return response;
}

}  // namespace gloowatch
