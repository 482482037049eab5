#include "client/explain_log/host_clocks.h"

#include <map>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "client/sources/clock_offsets.h"

namespace gloowatch::client {

HostClocks ApplyHostClocks(const std::vector<FetchResult>& nodes, const std::string& job,
                           std::vector<LogExplanation>& logs) {
  HostClocks out;
  const std::map<int, std::string> rank_nodes = RankNodes(nodes, job);
  if (rank_nodes.empty()) {
    out.note = absl::StrCat("no daemon that answered reports job ", job);
    return out;
  }
  std::vector<std::string> hosts;
  for (LogExplanation& log : logs) {
    int rank = -1;
    if (!absl::StartsWith(log.rank, "rank ") || !absl::SimpleAtoi(log.rank.substr(5), &rank)) {
      continue;
    }
    const auto it = rank_nodes.find(rank);
    if (it == rank_nodes.end()) continue;
    log.host = it->second;
    hosts.push_back(log.host);
  }
  if (hosts.empty()) {
    out.note = absl::StrCat("no log names one rank of job ", job,
                            " (a [rankN]: prefix or rankN in its name)");
    return out;
  }
  const ClockOffsets offsets = ClockOffsetsOf(nodes, hosts);
  for (LogExplanation& log : logs) {
    if (log.host.empty()) continue;
    const auto it = offsets.offset_seconds.find(log.host);
    if (it != offsets.offset_seconds.end()) log.clock_offset_seconds = it->second;
  }
  out.reference = offsets.reference;
  return out;
}

}  // namespace gloowatch::client
