// The per-peer Prometheus series (gloowatch_peer_*), built at scrape time
// from the trackers' snapshots: /metrics shows what GetStatus shows, and a
// peer no longer probed (reload, topology rotation) simply stops appearing.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "daemon/peers/peer_tracker.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace gloowatch {

class PeerSeries : public prometheus::Collectable {
 public:
  // `trackers` returns the peers probed now, in the order to export them;
  // it is called on the scrape server's thread.
  using TrackerSource = std::function<std::vector<std::shared_ptr<const PeerTracker>>()>;

  // `node`: the value of every series' `node` label (this daemon).
  PeerSeries(std::string node, TrackerSource trackers);

  // One snapshot per tracker; a family without series is left out, as
  // prometheus-cpp's own families do, so a gauge appears with its first value.
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const std::string node_;
  const TrackerSource trackers_;
};

}  // namespace gloowatch
