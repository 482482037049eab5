// The peer-to-peer gRPC service (gloowatch.v1.Peer): OpenProbePair, the
// handshake of a peer's probe pairs with this node.
#pragma once

#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "channel/responder_opener.h"
#include "proto/gloowatch.grpc.pb.h"

namespace gloowatch {

// Serves OpenProbePair: checks who asks and what, then hands the request to
// the opener, which answers later (callback API: no thread waits for it).
// Only configured peers may open pairs.
class PeerService final : public v1::Peer::CallbackService {
 public:
  PeerService(std::string node, std::string version, std::set<std::string> allowed_peers,
              ResponderOpener* opener);

  grpc::ServerUnaryReactor* OpenProbePair(grpc::CallbackServerContext* context,
                                          const v1::OpenProbePairRequest* request,
                                          v1::OpenProbePairResponse* response) override;

  void SetAllowedPeers(std::set<std::string> peers);

 private:
  // Why `request` is refused before it reaches the opener, or OK.
  grpc::Status Check(const v1::OpenProbePairRequest& request);

  const std::string node_;
  const std::string version_;
  ResponderOpener* const opener_;
  absl::Mutex mu_;
  std::set<std::string> allowed_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gloowatch
