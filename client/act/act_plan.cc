#include "client/act/act_plan.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"

namespace gloowatch::client {
namespace {

constexpr char kSchema[] = "gloowatch.act.v1";

// "4m30s"; "0s" rather than absl's bare "0".
std::string DurationText(absl::Duration d) {
  d = absl::Trunc(d, absl::Seconds(1));
  return d == absl::ZeroDuration() ? "0s" : absl::FormatDuration(d);
}

std::string TimeText(absl::Time t) {
  return absl::FormatTime(absl::RFC3339_sec, t, absl::UTCTimeZone());
}

absl::StatusOr<std::optional<absl::Time>> TimeField(const nlohmann::json& j, const char* key,
                                                    const std::string& node) {
  if (!j.contains(key) || j[key].is_null()) return std::optional<absl::Time>();
  absl::Time t;
  std::string err;
  if (!j[key].is_string() ||
      !absl::ParseTime(absl::RFC3339_full, j[key].get<std::string>(), &t, &err)) {
    return absl::InvalidArgumentError(
        absl::StrCat("nodes.", node, ".", key, " is not an RFC 3339 time"));
  }
  return std::optional<absl::Time>(t);
}

// Healthy now, as act judges before resuming: its daemon answers, its
// node and links are healthy now, and no suspect names it or a link of it.
std::string Unhealthy(const ClusterPicture& c, const std::string& node) {
  const NodeReport* self = nullptr;
  for (const NodeReport& n : c.node_reports) {
    if (n.name == node) self = &n;
  }
  if (self == nullptr) return "not in the cluster gloowatch watches";
  if (!self->reachable) return "its daemon does not answer";
  if (self->health != Health::kHealthy) {
    return self->problems.empty() ? std::string(HealthName(self->health)) : self->problems.front();
  }
  for (const LinkReport& l : c.links) {
    if ((l.a == node || l.b == node) && l.health != Health::kHealthy) {
      return l.problems.empty() ? absl::StrCat(l.a, " <-> ", l.b, " ", HealthName(l.health))
                                : l.problems.front();
    }
  }
  for (const Suspect& s : c.suspects) {
    const bool names = s.name == node || std::any_of(s.links.begin(), s.links.end(), [&](auto& l) {
                         return l.first == node || l.second == node;
                       });
    if (names) return absl::StrCat("suspected: ", SuspectKindName(s.kind), " ", s.name);
  }
  return "";
}

}  // namespace

absl::StatusOr<ActState> LoadActState(const std::string& path) {
  ActState state;
  std::ifstream in(path);
  if (!in) {
    if (errno == ENOENT) return state;
    return absl::UnavailableError(
        absl::StrCat("cannot read state file '", path, "': ", std::strerror(errno)));
  }
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("state file '", path, "': ", why,
                                                   " (fix or remove it: act then treats its "
                                                   "drains as just found)"));
  };
  if (j.is_discarded()) return bad("not JSON");
  if (!j.is_object() || j.value("schema", "") != kSchema) {
    return bad(absl::StrCat("not a ", kSchema, " document"));
  }
  if (!j.contains("nodes") || !j["nodes"].is_object()) return bad("no \"nodes\" object");
  for (const auto& [name, rec] : j["nodes"].items()) {
    if (!rec.is_object()) return bad(absl::StrCat("nodes.", name, " is not an object"));
    ActRecord r;
    for (const char* key : {"drained_at", "healthy_since"}) {
      absl::StatusOr<std::optional<absl::Time>> t = TimeField(rec, key, name);
      if (!t.ok()) return bad(std::string(t.status().message()));
      (std::string(key) == "drained_at" ? r.drained_at : r.healthy_since) = *t;
    }
    if (rec.contains("reason") && !rec["reason"].is_string()) {
      return bad(absl::StrCat("nodes.", name, ".reason is not a string"));
    }
    r.reason = rec.value("reason", "");
    state.nodes[name] = std::move(r);
  }
  return state;
}

absl::Status SaveActState(const std::string& path, const ActState& state) {
  nlohmann::json j = {{"schema", kSchema}, {"nodes", nlohmann::json::object()}};
  for (const auto& [name, r] : state.nodes) {
    j["nodes"][name] = {
        {"drained_at", r.drained_at ? nlohmann::json(TimeText(*r.drained_at)) : nullptr},
        {"reason", r.reason},
        {"healthy_since", r.healthy_since ? nlohmann::json(TimeText(*r.healthy_since)) : nullptr}};
  }
  const std::string tmp = absl::StrCat(path, ".tmp");
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    if (out.flush() && std::rename(tmp.c_str(), path.c_str()) == 0) return absl::OkStatus();
  }
  const std::string err = std::strerror(errno);
  std::remove(tmp.c_str());
  return absl::PermissionDeniedError(absl::StrCat("cannot write state file '", path, "': ", err));
}

ActPlan PlanActions(const ClusterPicture& c, const std::vector<SlurmNode>& slurm,
                    const ActState& state, const ActOptions& o, absl::Time now) {
  ActPlan plan;
  plan.next = state;
  const std::string cannot = CannotJudge(c);
  if (!cannot.empty()) {
    plan.notes.push_back(absl::StrCat("nothing changed: ", cannot));
    plan.held_back = true;
    return plan;
  }
  auto wanted = [&](const std::string& node) { return o.only_node.empty() || node == o.only_node; };
  std::map<std::string, const SlurmNode*> by_name;
  for (const SlurmNode& n : slurm) by_name[n.name] = &n;
  auto ours = [&](const SlurmNode& n) {
    return n.drained() && absl::StartsWith(n.reason, o.reason_prefix);
  };

  // Records of drains that are gone (resumed by hand, drained again by
  // someone else, node removed) are forgotten.
  for (auto it = plan.next.nodes.begin(); it != plan.next.nodes.end();) {
    auto s = by_name.find(it->first);
    if (s == by_name.end() || !ours(*s->second)) {
      plan.notes.push_back(absl::StrCat(it->first, ": no longer drained by gloowatch; forgotten"));
      it = plan.next.nodes.erase(it);
    } else {
      ++it;
    }
  }

  // Resume first: a node that recovered frees its place under the limit.
  std::vector<std::string> drained_by_us;
  for (const SlurmNode& n : slurm) {
    if (!ours(n)) continue;
    ActRecord& r = plan.next.nodes[n.name];
    if (r.reason.empty()) r.reason = n.reason;
    const std::string why = Unhealthy(c, n.name);
    if (!why.empty()) {
      r.healthy_since.reset();
      drained_by_us.push_back(n.name);
      if (wanted(n.name)) plan.notes.push_back(absl::StrCat(n.name, " stays drained: ", why));
      continue;
    }
    if (!r.healthy_since) r.healthy_since = now;
    const absl::Duration healthy = now - *r.healthy_since;
    if (!wanted(n.name) || healthy < o.healthy_for) {
      drained_by_us.push_back(n.name);
      if (wanted(n.name)) {
        plan.notes.push_back(absl::StrCat(n.name, " stays drained: healthy for ",
                                          DurationText(healthy), " of ",
                                          DurationText(o.healthy_for)));
      }
      continue;
    }
    plan.actions.push_back(
        {ActAction::Kind::kResume, n.name, absl::StrCat("healthy for ", DurationText(healthy))});
    plan.next.nodes.erase(n.name);
  }

  CulpritOptions unlimited = o.culprits;
  unlimited.max_nodes = NodeLimit{std::numeric_limits<size_t>::max(), 0};
  const size_t limit = o.culprits.max_nodes.Of(c.nodes.size());
  for (const Culprit& k : FindCulprits(c, unlimited)) {
    if (!wanted(k.node)) continue;
    if (!k.accepted) {
      plan.notes.push_back(absl::StrCat(k.node, " not drained: ", k.declined));
      continue;
    }
    auto s = by_name.find(k.node);
    if (s == by_name.end()) {
      plan.notes.push_back(absl::StrCat(k.node, " not drained: not a Slurm node"));
      continue;
    }
    if (ours(*s->second)) continue;  // already said above: stays drained
    if (s->second->drained()) {
      plan.notes.push_back(absl::StrCat(k.node, " not drained again: drained by someone else ('",
                                        s->second->reason, "')"));
      continue;
    }
    if (drained_by_us.size() >= limit) {
      plan.held_back = true;
      plan.notes.push_back(absl::StrCat(k.node, " not drained: gloowatch already drains ",
                                        drained_by_us.size(), " (",
                                        absl::StrJoin(drained_by_us, ", "), "), at most ",
                                        o.culprits.max_nodes.ToString(), " at once: ", k.summary));
      continue;
    }
    const std::string reason =
        ClipLine(absl::StrCat(o.reason_prefix, " ", k.summary), kMaxVerdictLine);
    plan.actions.push_back({ActAction::Kind::kDrain, k.node, reason});
    plan.next.nodes[k.node] = ActRecord{now, reason, std::nullopt};
    drained_by_us.push_back(k.node);
  }
  return plan;
}

}  // namespace gloowatch::client
