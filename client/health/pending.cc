#include "client/health/pending.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "proto/gloowatch.pb.h"

namespace gloowatch::client {

std::vector<PendingFigure> PendingFigures(const ClusterPicture& c) {
  std::vector<PendingFigure> out;
  for (size_t i = 0; i < c.nodes.size(); ++i) {
    for (size_t j = 0; j < c.nodes.size(); ++j) {
      const v1::PeerStatus* p = i == j ? nullptr : c.View(i, j);
      if (p == nullptr || p->state() != v1::PEER_STATE_UP) continue;
      if (!p->latency().has_p50_seconds()) out.push_back({c.nodes[i], c.nodes[j], "latency", {}});
      if (!p->bandwidth().has_tx_bytes_per_second() || !p->bandwidth().has_rx_bytes_per_second()) {
        std::optional<absl::Time> due;
        if (p->has_next_bandwidth_probe()) {
          due = absl::FromUnixSeconds(p->next_bandwidth_probe().seconds()) +
                absl::Nanoseconds(p->next_bandwidth_probe().nanos());
        }
        out.push_back({c.nodes[i], c.nodes[j], "bandwidth", due});
      }
      if (!p->clock().has_offset_seconds()) {
        out.push_back({c.nodes[i], c.nodes[j], "clock offset", {}});
      }
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const PendingFigure& a, const PendingFigure& b) {
    if (a.due.has_value() != b.due.has_value()) return a.due.has_value();
    return a.due.has_value() && *a.due < *b.due;
  });
  return out;
}

std::string DueText(const PendingFigure& p, absl::Time now) {
  if (!p.due) {
    return std::string(p.figure) == "bandwidth" ? "due time unknown"
                                                : "due within its probe interval";
  }
  const double in = absl::ToDoubleSeconds(*p.due - now);
  const std::string at = absl::FormatTime("%H:%M:%S UTC", *p.due, absl::UTCTimeZone());
  // A probe that was due a moment ago is running or waiting for the gate.
  if (in < -1) return absl::StrFormat("overdue by %.0f s (%s)", -in, at);
  return absl::StrFormat("due in %.0f s (%s)", std::max(0.0, in), at);
}

}  // namespace gloowatch::client
