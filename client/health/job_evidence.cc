#include "client/health/job_evidence.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/proto_time.h"

namespace gloowatch::client {
namespace {

// "ip" of "ip:port" / "[v6]:port".
std::string IpOf(const std::string& endpoint) {
  const size_t colon = endpoint.rfind(':');
  std::string ip = colon == std::string::npos ? endpoint : endpoint.substr(0, colon);
  if (ip.size() >= 2 && ip.front() == '[' && ip.back() == ']') ip = ip.substr(1, ip.size() - 2);
  return ip;
}

bool Unread(const v1::JobSocket& s) {
  if (!s.has_unread_since()) return false;
  return absl::ToDoubleSeconds(FromProtoTimestamp(s.read_at()) -
                               FromProtoTimestamp(s.unread_since())) >= kJobUnreadSeconds;
}

struct End {
  uint32_t node = 0;
  const v1::JobSocket* socket = nullptr;
  std::string process;
};

}  // namespace

std::vector<JobLinkLoss> JobLinkLossOf(const std::vector<const v1::NodeStatus*>& statuses,
                                       const std::vector<std::string>& nodes) {
  auto index_of = [&](const std::string& name) -> std::optional<uint32_t> {
    auto it = std::lower_bound(nodes.begin(), nodes.end(), name);
    if (it == nodes.end() || *it != name) return std::nullopt;
    return static_cast<uint32_t>(it - nodes.begin());
  };
  // Whose address a remote end is: a node's Gloo address, or the local
  // address of one of its ranks' sockets.
  std::map<std::string, uint32_t> node_of_ip;
  // "local|remote" -> the rank's end, so the other end of a connection is
  // found with the two swapped.
  std::map<std::string, End> ends;
  for (const v1::NodeStatus* s : statuses) {
    if (s == nullptr) continue;
    const std::optional<uint32_t> node = index_of(s->node());
    if (!node) continue;
    if (!s->gloo().address().empty()) node_of_ip[s->gloo().address()] = *node;
    const absl::Time now = s->has_now() ? FromProtoTimestamp(s->now()) : absl::Now();
    for (const v1::TrainingJobStatus& t : s->training()) {
      for (const v1::JobSocket& socket : t.sockets()) {
        if (socket.kind() != "pair") continue;
        if (absl::ToDoubleSeconds(now - FromProtoTimestamp(socket.read_at())) >
            kJobSocketStaleSeconds) {
          continue;
        }
        ends.emplace(absl::StrCat(socket.local(), "|", socket.remote()),
                     End{*node, &socket, t.process()});
        node_of_ip.emplace(IpOf(socket.local()), *node);
      }
    }
  }
  std::map<std::pair<uint32_t, uint32_t>, LossCount> by_direction;
  for (const auto& [key, end] : ends) {
    const v1::JobSocket& s = *end.socket;
    if (!s.has_loss_ratio() || s.loss_window_sent_segments() == 0) continue;
    // A stopped or gone rank sends nothing now; what it sent before it
    // stopped is its job's story.
    if (end.process == "stopped" || end.process == "gone") continue;
    const auto to = node_of_ip.find(IpOf(s.remote()));
    if (to == node_of_ip.end() || to->second == end.node) continue;
    // Into a rank that does not read: a job signal, never the network's.
    if (s.zero_window()) continue;
    const auto peer = ends.find(absl::StrCat(s.remote(), "|", s.local()));
    if (peer != ends.end() && (Unread(*peer->second.socket) || peer->second.process == "stopped" ||
                               peer->second.process == "gone")) {
      continue;
    }
    const uint64_t sent = s.loss_window_sent_segments();
    const uint64_t lost = std::min<uint64_t>(
        sent, static_cast<uint64_t>(std::llround(s.loss_ratio() * static_cast<double>(sent))));
    LossCount& c = by_direction[{end.node, to->second}];
    c.lost += lost;
    c.sent += sent;
  }
  std::vector<JobLinkLoss> out;
  for (const auto& [d, c] : by_direction) out.push_back({d.first, d.second, c});
  return out;
}

}  // namespace gloowatch::client
