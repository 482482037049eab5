// The job's own links: the TCP connections of a training job's ranks as the
// kernel on each host describes them (TrainingJobStatus.sockets), joined
// end to end into rank pairs and host pairs, with what they say of a hang:
// data unacknowledged under a backing-off retransmission timer is a network
// that drops; data that arrived and is not read is a process that does not
// read (docs/client.md, "The job's links").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "client/sources/fetch.h"
#include "nlohmann/json.hpp"

namespace gloowatch::client {

// One rank's connection to another host, with the other end's figures when
// the other end's rank is known (its daemon was asked and it lists its
// sockets).
struct RankLink {
  int rank = 0;
  std::string node;
  int peer_rank = -1;     // -1: unknown
  std::string peer_node;  // from the peer rank, else the node whose Gloo address is the remote one
  v1::JobSocket socket;   // this rank's end
  std::optional<v1::JobSocket> peer_socket;
  std::string peer_process;       // the peer rank's process: running, stopped, gone, ""
  std::string group, peer_group;  // the nodes' groups (topology.group), may be empty
};

// What a link says: "network" (the direction rank -> peer drops), "not_reading"
// (the peer holds data it does not read), "lossy" (TCP loss of at least
// kJobLinkLossRatio over kJobLinkMinSegments segments or more), "path" (of the
// directions between two groups, or two hosts without groups, some lose and
// some do not, and no host's sending or receiving explains the lossy ones:
// one path of several, as ECMP spreads connections, is bad, not a host). A
// "path" finding names no ranks: node and peer_node are the two groups.
struct LinkFinding {
  std::string kind;
  int rank = 0, peer_rank = -1;
  std::string node, peer_node;
  std::string text;  // one line, as printed
};

struct JobLinks {
  std::vector<RankLink> links;  // Gloo pairs only, by (rank, peer_rank, remote)
  std::vector<LinkFinding> findings;
  int store_connections = 0;
  int ranks_listing = 0;  // ranks whose daemon read at least one socket
};

inline constexpr uint32_t kJobLinkBackoff = 2;  // 0.6 s of RTOs at least
inline constexpr double kJobLinkUnackedSeconds = 1.0;
inline constexpr double kJobLinkUnreadSeconds = 2.0;
inline constexpr double kJobLinkLossRatio = 0.01;
inline constexpr uint64_t kJobLinkMinSegments = 500;

// The links of job `job` in `fetched`.
JobLinks BuildJobLinks(const std::vector<FetchResult>& fetched, const std::string& job);

// Text lines (findings, then one line per host pair), each ending in "\n".
std::string RenderJobLinks(const JobLinks& links, bool hung);
nlohmann::json JobLinksToJson(const JobLinks& links);

}  // namespace gloowatch::client
