#include "client/job/job_links.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/proto_time.h"

namespace gloowatch::client {
namespace {

std::string Bytes(uint64_t n) {
  if (n < 1000) return absl::StrCat(n, " bytes");
  if (n < 1000 * 1000) return absl::StrCat(n / 1000, " KB");
  return absl::StrFormat("%.1f MB", n / 1e6);
}

std::string Host(const std::string& node) { return node.empty() ? "?" : node; }

std::string RankName(int rank, const std::string& node) {
  return rank < 0 ? absl::StrCat("host ", Host(node))
                  : absl::StrCat("rank ", rank, " (", Host(node), ")");
}

// "ip" of "ip:port" / "[v6]:port".
std::string AddressOf(const std::string& endpoint) {
  const size_t colon = endpoint.rfind(':');
  std::string host = colon == std::string::npos ? endpoint : endpoint.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return host;
}

double UnreadSeconds(const v1::JobSocket& s) {
  if (!s.has_unread_since()) return 0;
  return std::max(0.0, absl::ToDoubleSeconds(FromProtoTimestamp(s.read_at()) -
                                             FromProtoTimestamp(s.unread_since())));
}

// The direction rank -> peer drops: data sent, not acknowledged, the
// retransmission timer backing off, no ACK for a while, and the peer's
// window is open (a zero window also backs the probe timer off).
bool NetworkDrops(const v1::JobSocket& s) {
  return s.unacked_bytes() > 0 && s.backoff() >= kJobLinkBackoff &&
         s.since_last_ack_seconds() >= kJobLinkUnackedSeconds && !s.zero_window();
}

std::string ProcessNote(const std::string& process) {
  if (process == "stopped") return " (stopped)";
  if (process == "gone") return " (gone)";
  if (process == "running") return " (it runs, but not in this call)";
  return "";
}

bool Measured(const v1::JobSocket& s) {
  return s.has_loss_ratio() && s.loss_window_sent_segments() >= kJobLinkMinSegments;
}

void AddFindings(const RankLink& l, JobLinks& out) {
  const v1::JobSocket& s = l.socket;
  const std::string from = RankName(l.rank, l.node), to = RankName(l.peer_rank, l.peer_node);
  auto add = [&](const char* kind, int rank, const std::string& node, int peer_rank,
                 const std::string& peer_node, std::string text) {
    out.findings.push_back({kind, rank, peer_rank, node, peer_node, std::move(text)});
  };
  if (NetworkDrops(s)) {
    add("network", l.rank, l.node, l.peer_rank, l.peer_node,
        absl::StrFormat("%s -> %s: %s unacknowledged for %.0f s, retransmission backoff %d -- "
                        "the network between %s and %s drops",
                        from, to, Bytes(s.unacked_bytes()), s.since_last_ack_seconds(), s.backoff(),
                        Host(l.node), Host(l.peer_node)));
  }
  // The other end holds what we sent and does not read it.
  if (l.peer_socket && UnreadSeconds(*l.peer_socket) >= kJobLinkUnreadSeconds) {
    add("not_reading", l.peer_rank, l.peer_node, l.rank, l.node,
        absl::StrFormat("%s holds %s unread from %s for %.0f s: its process is not reading%s", to,
                        Bytes(l.peer_socket->receive_queue_bytes()), from,
                        UnreadSeconds(*l.peer_socket), ProcessNote(l.peer_process)));
  } else if (s.zero_window() && s.notsent_bytes() > 0) {
    add("not_reading", l.peer_rank, l.peer_node, l.rank, l.node,
        absl::StrFormat("%s advertises a zero window to %s (%s waiting to be sent): its process "
                        "is not reading%s",
                        to, from, Bytes(s.notsent_bytes()), ProcessNote(l.peer_process)));
  }
  if (Measured(s) && s.loss_ratio() >= kJobLinkLossRatio) {
    add("lossy", l.rank, l.node, l.peer_rank, l.peer_node,
        absl::StrFormat("%s -> %s: TCP loss %.2f%% of %d segments in %.0f s", from, to,
                        100 * s.loss_ratio(), s.loss_window_sent_segments(),
                        s.loss_window_seconds()));
  }
}

// Directions between two groups (or hosts) of which some lose and some do
// not, where no host explains the lossy ones: a host whose link loses what
// it sends (or receives) loses it in every direction, the ones inside its
// group too, since its link carries them all. So a host explains its lossy
// directions only when it has no clean one at all. Then neither a host, nor
// its group's uplink (some of its directions out are clean), nor the groups
// explain it; one of the paths between them does (with ECMP, the hash may
// put every connection of one host on the bad member: its connections
// inside the group are what clear its NIC).
void AddPathFindings(JobLinks& out) {
  struct Side {
    int lossy = 0, clean = 0;
    double sent = 0, lost = 0;
    std::set<std::string> lossy_senders, lossy_receivers;
  };
  // Per host, over every measured direction: lossy and clean ones it sends,
  // and it receives.
  std::map<std::string, std::array<int, 2>> sends, receives;
  std::map<std::pair<std::string, std::string>, Side> between;
  for (const RankLink& l : out.links) {
    if (l.peer_node.empty() || l.peer_node == l.node || !Measured(l.socket)) continue;
    const bool lossy = l.socket.loss_ratio() >= kJobLinkLossRatio;
    ++sends[l.node][lossy ? 0 : 1];
    ++receives[l.peer_node][lossy ? 0 : 1];
    const std::string a = l.group.empty() ? l.node : l.group;
    const std::string b = l.peer_group.empty() ? l.peer_node : l.peer_group;
    if (a == b) continue;
    Side& side = between[a < b ? std::make_pair(a, b) : std::make_pair(b, a)];
    (lossy ? side.lossy : side.clean)++;
    if (lossy) {
      side.lossy_senders.insert(l.node);
      side.lossy_receivers.insert(l.peer_node);
      side.sent += l.socket.loss_window_sent_segments();
      side.lost += l.socket.loss_ratio() * l.socket.loss_window_sent_segments();
    }
  }
  auto explained = [](const std::set<std::string>& lossy_hosts,
                      const std::map<std::string, std::array<int, 2>>& counts) {
    for (const std::string& host : lossy_hosts) {
      if (counts.at(host)[1] == 0) return true;
    }
    return false;
  };
  for (const auto& [key, side] : between) {
    if (side.lossy == 0 || side.clean == 0) continue;
    if (explained(side.lossy_senders, sends) || explained(side.lossy_receivers, receives)) {
      continue;
    }
    out.findings.push_back(
        {"path", -1, -1, key.first, key.second,
         absl::StrFormat("%d of %d directions of the job's connections between %s and %s lose "
                         "%.1f%%, the other %d under %.0f%%, and every host sends and receives "
                         "some clean ones: a path-dependent fault (a bad ECMP member or link "
                         "between them)",
                         side.lossy, side.lossy + side.clean, key.first, key.second,
                         100 * side.lost / side.sent, side.clean, 100 * kJobLinkLossRatio)});
  }
}

}  // namespace

JobLinks BuildJobLinks(const std::vector<FetchResult>& fetched, const std::string& job) {
  struct End {
    int rank;
    std::string node;
    const v1::JobSocket* socket;
    std::string process;
  };
  // "local|remote" -> the rank's end: the other end of a connection is the
  // socket with the two swapped (a listener's accepted sockets share a
  // local address, so the local one alone would not do).
  std::map<std::string, End> by_ends;
  std::map<std::string, std::string> node_of_ip;  // Gloo address -> node
  std::map<std::string, std::string> group_of;    // node -> its group
  JobLinks out;
  for (const FetchResult& f : fetched) {
    if (!f.status) continue;
    if (!f.status->gloo().address().empty()) {
      node_of_ip[f.status->gloo().address()] = f.status->node();
    }
    group_of[f.status->node()] = f.status->topology().group();
    for (const v1::PeerStatus& p : f.status->peers()) group_of.emplace(p.name(), p.group());
    for (const v1::TrainingJobStatus& t : f.status->training()) {
      if (t.job() != job) continue;
      if (t.sockets_size() > 0) ++out.ranks_listing;
      for (const v1::JobSocket& s : t.sockets()) {
        by_ends[absl::StrCat(s.local(), "|", s.remote())] = {t.rank(), f.status->node(), &s,
                                                             t.process()};
        node_of_ip.emplace(AddressOf(s.local()), f.status->node());
      }
    }
  }
  for (const auto& [ends, end] : by_ends) {
    const v1::JobSocket& s = *end.socket;
    if (s.kind() == "store") {
      ++out.store_connections;
      continue;
    }
    RankLink l;
    l.rank = end.rank;
    l.node = end.node;
    l.socket = s;
    auto peer = by_ends.find(absl::StrCat(s.remote(), "|", s.local()));
    if (peer != by_ends.end()) {
      l.peer_rank = peer->second.rank;
      l.peer_node = peer->second.node;
      l.peer_socket = *peer->second.socket;
      l.peer_process = peer->second.process;
    } else if (auto n = node_of_ip.find(AddressOf(s.remote())); n != node_of_ip.end()) {
      l.peer_node = n->second;
    }
    // A connection within one rank's process (a loopback store client, say)
    // is no link between ranks.
    if (l.peer_rank == l.rank) continue;
    out.links.push_back(std::move(l));
  }
  std::sort(out.links.begin(), out.links.end(), [](const RankLink& a, const RankLink& b) {
    return std::tie(a.rank, a.peer_rank, a.socket.remote()) <
           std::tie(b.rank, b.peer_rank, b.socket.remote());
  });
  for (RankLink& l : out.links) {
    l.group = group_of[l.node];
    l.peer_group = l.peer_node.empty() ? "" : group_of[l.peer_node];
  }
  for (const RankLink& l : out.links) AddFindings(l, out);
  AddPathFindings(out);
  return out;
}

std::string RenderJobLinks(const JobLinks& links, bool hung) {
  std::string out;
  for (const LinkFinding& f : links.findings) {
    const bool stuck = f.kind == "network" || f.kind == "not_reading";
    absl::StrAppend(&out, hung && stuck ? "likely reason: " : "", f.text, "\n");
  }
  if (links.links.empty()) return out;
  // Host pairs: connections and loss, both directions together.
  struct HostPair {
    int connections = 0;
    double sent = 0, lost = 0;
  };
  std::map<std::pair<std::string, std::string>, HostPair> hosts;
  for (const RankLink& l : links.links) {
    // (std::minmax returns references: to named strings, not temporaries.)
    const std::string a = Host(l.node), b = Host(l.peer_node);
    HostPair& h = hosts[a < b ? std::make_pair(a, b) : std::make_pair(b, a)];
    ++h.connections;
    if (l.socket.has_loss_ratio()) {
      h.sent += l.socket.loss_window_sent_segments();
      h.lost += l.socket.loss_ratio() * l.socket.loss_window_sent_segments();
    }
  }
  absl::StrAppend(&out, "job links (the ranks' own connections): ", links.links.size(),
                  " ends between ", hosts.size(), " host pairs\n");
  for (const auto& [key, h] : hosts) {
    absl::StrAppendFormat(&out, "  %s <-> %s: %d %s", key.first, key.second, h.connections,
                          h.connections == 1 ? "end" : "ends");
    if (h.sent > 0) {
      absl::StrAppendFormat(&out, ", TCP loss %.2f%% of %.0f segments", 100 * h.lost / h.sent,
                            h.sent);
    }
    absl::StrAppend(&out, "\n");
  }
  return out;
}

nlohmann::json JobLinksToJson(const JobLinks& links) {
  nlohmann::json j = {{"links", nlohmann::json::array()},
                      {"findings", nlohmann::json::array()},
                      {"store_connections", links.store_connections},
                      {"ranks_listing", links.ranks_listing}};
  for (const RankLink& l : links.links) {
    const v1::JobSocket& s = l.socket;
    nlohmann::json x = {
        {"rank", l.rank},
        {"node", l.node},
        {"peer_rank", l.peer_rank < 0 ? nlohmann::json() : nlohmann::json(l.peer_rank)},
        {"peer_node", l.peer_node},
        {"local", s.local()},
        {"remote", s.remote()},
        {"state", s.state()},
        {"bytes_sent", s.bytes_sent()},
        {"bytes_received", s.bytes_received()},
        {"sent_segments", s.sent_segments()},
        {"retransmitted_segments", s.retransmitted_segments()},
        {"rtt_seconds", s.rtt_seconds()},
        {"unacked_bytes", s.unacked_bytes()},
        {"notsent_bytes", s.notsent_bytes()},
        {"backoff", s.backoff()},
        {"receive_queue_bytes", s.receive_queue_bytes()},
        {"unread_seconds", UnreadSeconds(s)},
        {"zero_window", s.zero_window()},
        {"since_last_ack_seconds", s.since_last_ack_seconds()},
        {"loss_window_sent_segments", s.loss_window_sent_segments()},
        {"loss_window_seconds", s.loss_window_seconds()},
        {"read_at", absl::ToDoubleSeconds(FromProtoTimestamp(s.read_at()) - absl::UnixEpoch())}};
    x["loss_ratio"] = s.has_loss_ratio() ? nlohmann::json(s.loss_ratio()) : nlohmann::json();
    j["links"].push_back(std::move(x));
  }
  for (const LinkFinding& f : links.findings) {
    j["findings"].push_back(
        {{"kind", f.kind},
         {"rank", f.rank < 0 ? nlohmann::json() : nlohmann::json(f.rank)},
         {"node", f.node},
         {"peer_rank", f.peer_rank < 0 ? nlohmann::json() : nlohmann::json(f.peer_rank)},
         {"peer_node", f.peer_node},
         {"text", f.text}});
  }
  return j;
}

}  // namespace gloowatch::client
