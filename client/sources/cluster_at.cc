#include "client/sources/cluster_at.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/core/plural.h"

namespace gloowatch::client {
namespace {

using Key = std::pair<std::string, std::string>;

Key LinkOf(const nlohmann::json& sample) {
  const nlohmann::json& m = sample.value("metric", nlohmann::json::object());
  return {m.value("node", ""), m.value("peer", "")};
}

double ValueOf(const nlohmann::json& sample) {
  const nlohmann::json& v = sample.value("value", nlohmann::json::array());
  if (!v.is_array() || v.size() != 2 || !v[1].is_string()) return 0;
  return std::strtod(v[1].get<std::string>().c_str(), nullptr);
}

}  // namespace

absl::StatusOr<ClusterAtTime> ClusterAt(const PrometheusOptions& o, double time,
                                        const ClusterAtOptions& options) {
  const absl::Duration margin = options.margin;
  const std::string selector = SeriesSelector(o);
  const std::string window = absl::StrCat(absl::ToInt64Seconds(2 * margin), "s");
  // Evaluated at the end of the window, each looks back over all of it.
  const double at = time + absl::ToDoubleSeconds(margin);
  auto up = QueryPrometheus(
      o, absl::StrCat("min_over_time(gloowatch_peer_up{", selector, "}[", window, "])"), at);
  if (!up.ok()) return up.status();
  auto failures = QueryPrometheus(o,
                                  absl::StrCat("increase(gloowatch_peer_probe_failures_total{",
                                               selector, "}[", window, "]) > 0"),
                                  at);
  if (!failures.ok()) return failures.status();
  auto bandwidth =
      QueryPrometheus(o,
                      absl::StrCat("min_over_time(gloowatch_peer_bandwidth_link_ratio{", selector,
                                   "}[", window, "]) < ", options.bandwidth_threshold),
                      at);
  if (!bandwidth.ok()) return bandwidth.status();

  std::map<Key, LinkAtTime> links;
  auto link = [&](const Key& k) -> LinkAtTime& {
    LinkAtTime& l = links[k];
    l.node = k.first;
    l.peer = k.second;
    return l;
  };
  ClusterAtTime c;
  c.time = time;
  c.margin = margin;
  std::set<Key> seen;
  for (const auto& s : *up) {
    seen.insert(LinkOf(s));
    if (ValueOf(s) < 1) link(LinkOf(s)).down = true;
  }
  for (const auto& s : *failures) {
    const std::string reason =
        s.value("metric", nlohmann::json::object()).value("reason", std::string("other"));
    link(LinkOf(s)).failures[reason] += ValueOf(s);
  }
  for (const auto& s : *bandwidth) {
    LinkAtTime& l = link(LinkOf(s));
    l.bandwidth_ratio = std::min(l.bandwidth_ratio.value_or(1e9), ValueOf(s));
  }
  c.links_seen = static_cast<int>(seen.size());
  for (auto& [key, l] : links) c.unhealthy.push_back(std::move(l));
  return c;
}

std::string RenderClusterAt(const ClusterAtTime& c, const std::string& url) {
  std::string out = absl::StrCat(
      "cluster around ",
      absl::FormatTime("%Y-%m-%d %H:%M:%S %Z", absl::FromUnixSeconds(static_cast<int64_t>(c.time)),
                       absl::LocalTimeZone()),
      " (+-", absl::FormatDuration(c.margin), ", Prometheus ", url, "): ");
  if (c.links_seen == 0) return absl::StrCat(out, "no gloowatch series then\n");
  if (c.unhealthy.empty()) {
    return absl::StrCat(out, "all ", c.links_seen, " links up, no probe failures\n");
  }
  absl::StrAppend(&out, c.unhealthy.size(), " of ", Counted(c.links_seen, "link"),
                  " not healthy\n");
  for (const LinkAtTime& l : c.unhealthy) {
    std::vector<std::string> what;
    if (l.down) what.push_back("down");
    if (!l.failures.empty()) {
      std::vector<std::string> reasons;
      for (const auto& [reason, n] : l.failures) {
        reasons.push_back(absl::StrFormat("%s x%.0f", reason, std::max(n, 1.0)));
      }
      what.push_back(absl::StrCat("probe failures ", absl::StrJoin(reasons, ", ")));
    }
    if (l.bandwidth_ratio) {
      what.push_back(absl::StrFormat("bandwidth %.2f of link speed", *l.bandwidth_ratio));
    }
    absl::StrAppend(&out, "  ", l.node, " -> ", l.peer, ": ", absl::StrJoin(what, "; "), "\n");
  }
  return out;
}

nlohmann::json ClusterAtToJson(const ClusterAtTime& c) {
  nlohmann::json j;
  j["time"] = c.time;
  j["margin_seconds"] = absl::ToDoubleSeconds(c.margin);
  j["links_seen"] = c.links_seen;
  j["unhealthy"] = nlohmann::json::array();
  for (const LinkAtTime& l : c.unhealthy) {
    nlohmann::json link = {{"node", l.node}, {"peer", l.peer}, {"down", l.down}};
    link["failures"] = l.failures;
    link["bandwidth_ratio"] = l.bandwidth_ratio ? nlohmann::json(*l.bandwidth_ratio) : nullptr;
    j["unhealthy"].push_back(std::move(link));
  }
  return j;
}

}  // namespace gloowatch::client
