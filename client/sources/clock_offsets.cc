#include "client/sources/clock_offsets.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "absl/strings/str_format.h"
#include "common/proto_time.h"

namespace gloowatch::client {
namespace {

// (a, b) -> b's clock minus a's, as a measured it.
using Measured = std::map<std::pair<std::string, std::string>, double>;

Measured MeasuredOffsets(const std::vector<FetchResult>& nodes) {
  Measured out;
  for (const FetchResult& f : nodes) {
    if (!f.status) continue;
    for (const v1::PeerStatus& p : f.status->peers()) {
      if (p.clock().has_offset_seconds())
        out[{f.status->node(), p.name()}] = p.clock().offset_seconds();
    }
  }
  return out;
}

// b's clock minus a's from one direct measurement or both (their mean).
std::optional<double> Direct(const Measured& m, const std::string& a, const std::string& b) {
  const auto ab = m.find({a, b}), ba = m.find({b, a});
  if (ab != m.end() && ba != m.end()) return (ab->second - ba->second) / 2;
  if (ab != m.end()) return ab->second;
  if (ba != m.end()) return -ba->second;
  return std::nullopt;
}

}  // namespace

ClockOffsets ClockOffsetsOf(const std::vector<FetchResult>& nodes,
                            const std::vector<std::string>& hosts) {
  const Measured m = MeasuredOffsets(nodes);
  const std::set<std::string> wanted(hosts.begin(), hosts.end());
  ClockOffsets out;
  if (wanted.empty()) return out;
  // The reference: the host with a direct measurement to most of the others.
  size_t best = 0;
  out.reference = *wanted.begin();
  for (const std::string& r : wanted) {
    size_t direct = 0;
    for (const std::string& h : wanted) direct += h != r && Direct(m, r, h) ? 1 : 0;
    if (direct > best) {
      best = direct;
      out.reference = r;
    }
  }
  std::set<std::string> everyone;
  for (const auto& [key, offset] : m) everyone.insert({key.first, key.second});
  for (const std::string& h : wanted) {
    if (h == out.reference) {
      out.offset_seconds[h] = 0;
      continue;
    }
    if (std::optional<double> d = Direct(m, out.reference, h)) {
      out.offset_seconds[h] = *d;
      continue;
    }
    // One hop: the reference to a host that measures h too.
    for (const std::string& via : everyone) {
      const std::optional<double> first = Direct(m, out.reference, via);
      const std::optional<double> second = Direct(m, via, h);
      if (first && second) {
        out.offset_seconds[h] = *first + *second;
        break;
      }
    }
  }
  return out;
}

std::map<int, std::string> RankNodes(const std::vector<FetchResult>& nodes,
                                     const std::string& job) {
  std::map<int, std::pair<absl::Time, std::string>> last;
  for (const FetchResult& f : nodes) {
    if (!f.status) continue;
    for (const v1::TrainingJobStatus& t : f.status->training()) {
      if (t.job() != job) continue;
      const absl::Time heard =
          t.has_last_report() ? FromProtoTimestamp(t.last_report()) : absl::InfinitePast();
      auto [it, added] = last.emplace(t.rank(), std::make_pair(heard, f.status->node()));
      if (!added && heard > it->second.first) it->second = {heard, f.status->node()};
    }
  }
  std::map<int, std::string> out;
  for (const auto& [rank, seen] : last) out[rank] = seen.second;
  return out;
}

std::string OffsetText(double seconds) {
  // Under 5 ms rounds to zero: "+0.00 s", never "-0.00 s".
  return absl::StrFormat("%+.2f s", std::abs(seconds) < 0.005 ? 0.0 : seconds);
}

}  // namespace gloowatch::client
