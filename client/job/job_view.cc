#include "client/job/job_view.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/sources/clock_offsets.h"
#include "common/failure.h"
#include "common/proto_time.h"
#include "common/user_text.h"

namespace gloowatch::client {
namespace {

std::string Call(const std::string& op, uint64_t seq) { return absl::StrCat(op, " #", seq); }

std::string RankList(const std::vector<int>& ranks) {
  return absl::StrCat(ranks.size() == 1 ? "rank " : "ranks ", absl::StrJoin(ranks, ", "));
}

bool Suspect(const RankView& r) {
  return r.state == RankState::kSilent || r.state == RankState::kGone ||
         r.state == RankState::kNotEntered;
}

// Why a rank that is not waiting keeps the waiting ones waiting.
std::string Reason(const RankView& r, const JobView& v) {
  const std::string last = r.op.empty() ? absl::StrCat("its last reported call #", r.seq)
                                        : absl::StrCat("last reported inside ", Call(r.op, r.seq));
  if (r.state == RankState::kGone) {
    return absl::StrFormat("process gone (exited or killed), not heard from for %.1f s (%s)",
                           r.silent_seconds, last);
  }
  if (r.state == RankState::kSilent) {
    if (r.process != "stopped") {
      return absl::StrFormat("not heard from for %.1f s (%s): stopped, hung or gone",
                             r.silent_seconds, last);
    }
    std::string out =
        absl::StrFormat("process stopped (SIGSTOP or a debugger), not heard from for %.1f s (%s)",
                        r.silent_seconds, last);
    if (v.hung() && (r.op.empty() || r.seq < v.waiting_seq)) {
      absl::StrAppend(&out, ", has not entered ", Call(v.waiting_op, v.waiting_seq));
    }
    return out;
  }
  return absl::StrFormat("has not entered %s (%s)", Call(v.waiting_op, v.waiting_seq), last);
}

// The probes between the nodes that hold ranks: every link that is not up.
void AddLinks(const std::vector<FetchResult>& fetched, JobView& v) {
  std::map<std::string, std::vector<int>> ranks_on;
  for (const RankView& r : v.ranks) ranks_on[r.node].push_back(r.rank);
  for (const FetchResult& f : fetched) {
    if (!f.status || !ranks_on.count(f.status->node())) continue;
    const absl::Time now = FromProtoTimestamp(f.status->now());
    for (const v1::PeerStatus& p : f.status->peers()) {
      if (p.name() == f.status->node() || !ranks_on.count(p.name())) continue;
      ++v.links_checked;
      if (p.state() == v1::PEER_STATE_UP) continue;
      JobLink l;
      l.node = f.status->node();
      l.peer = p.name();
      l.state = p.state() == v1::PEER_STATE_DOWN ? "down" : "connecting";
      if (p.has_last_failure() && p.last_failure().reason() != v1::FAILURE_REASON_UNSPECIFIED) {
        l.reason = std::string(ReasonName(p.last_failure().reason()));
        l.message = p.last_failure().message();
        if (p.last_failure().has_time()) {
          l.last_failure_seconds = std::max(
              0.0, absl::ToDoubleSeconds(now - FromProtoTimestamp(p.last_failure().time())));
        }
      }
      l.node_ranks = ranks_on[l.node];
      l.peer_ranks = ranks_on[l.peer];
      v.links.push_back(std::move(l));
    }
  }
  std::sort(v.links.begin(), v.links.end(), [](const JobLink& a, const JobLink& b) {
    return std::tie(a.node, a.peer) < std::tie(b.node, b.peer);
  });
}

std::string LinkText(const JobLink& l) {
  std::string out = absl::StrCat("link ", l.node, " -> ", l.peer, " ", l.state);
  std::vector<std::string> details;
  if (!l.reason.empty()) details.push_back(l.reason);
  if (l.last_failure_seconds) {
    details.push_back(absl::StrFormat("last failure %.1f s ago", *l.last_failure_seconds));
  }
  if (!details.empty()) absl::StrAppend(&out, " (", absl::StrJoin(details, ", "), ")");
  absl::StrAppend(&out, " between ", RankList(l.node_ranks), " and ", RankList(l.peer_ranks));
  if (!l.message.empty()) absl::StrAppend(&out, ": ", Clip(l.message));
  return out;
}

// The waiting ranks by their own call, latest first: "ranks 0, 1 wait in
// all_reduce #36", or when they differ (a rank finished a call whose sends
// the kernel had buffered and entered the next) "rank 0 waits in all_reduce
// #36, rank 1 in all_reduce #35".
std::string WaitingText(const JobView& v) {
  std::map<std::pair<uint64_t, std::string>, std::vector<int>> by_call;
  for (const RankView& r : v.ranks) {
    if (r.state == RankState::kWaiting) by_call[{r.seq, r.op}].push_back(r.rank);
  }
  std::vector<std::string> parts;
  for (auto it = by_call.rbegin(); it != by_call.rend(); ++it) {
    const bool first = parts.empty();
    const bool one = it->second.size() == 1;
    parts.push_back(
        absl::StrCat(RankList(it->second),
                     first ? (one && by_call.size() > 1 ? " waits in " : " wait in ") : " in ",
                     Call(it->first.second, it->first.first)));
  }
  return absl::StrJoin(parts, ", ");
}

}  // namespace

const char* RankStateName(RankState state) {
  switch (state) {
    case RankState::kRunning:
      return "running";
    case RankState::kWaiting:
      return "waiting";
    case RankState::kNotEntered:
      return "not_entered";
    case RankState::kSilent:
      return "silent";
    case RankState::kGone:
      return "gone";
    case RankState::kUnknown:
      break;
  }
  return "unknown";
}

namespace {

// The ranks' moments in one order: each daemon's clock corrected by the
// offset gloowatch measured between it and the reference host.
void AddEvents(const std::vector<FetchResult>& fetched, JobView& v) {
  std::vector<std::string> nodes;
  for (const RankView& r : v.ranks) nodes.push_back(r.node);
  const ClockOffsets offsets = ClockOffsetsOf(fetched, nodes);
  v.clock_reference = offsets.reference;
  v.clock_offsets = offsets.offset_seconds;
  for (const RankView& r : v.ranks) {
    const auto offset = offsets.offset_seconds.find(r.node);
    const bool corrected = offset != offsets.offset_seconds.end();
    const absl::Duration shift = corrected ? absl::Seconds(offset->second) : absl::ZeroDuration();
    if (r.entered != absl::InfinitePast()) {
      v.events.push_back({r.entered - shift, r.rank, r.node,
                          absl::StrCat("entered ", Call(r.op, r.seq)), corrected});
    }
    if (r.last_heard != absl::InfinitePast()) {
      const std::string where = r.op.empty() ? (r.seq ? absl::StrCat(" (after #", r.seq, ")") : "")
                                             : absl::StrCat(" (inside ", Call(r.op, r.seq), ")");
      v.events.push_back(
          {r.last_heard - shift, r.rank, r.node, absl::StrCat("last heard", where), corrected});
    }
  }
  std::stable_sort(v.events.begin(), v.events.end(),
                   [](const JobEvent& a, const JobEvent& b) { return a.time < b.time; });
}

// "times corrected by measured offsets (to h1's clock): h2 +0.84 s".
std::string CorrectionText(const JobView& v) {
  std::vector<std::string> parts;
  for (const auto& [node, offset] : v.clock_offsets) {
    if (node != v.clock_reference) parts.push_back(absl::StrCat(node, " ", OffsetText(offset)));
  }
  std::set<std::string> unknown;
  for (const RankView& r : v.ranks) {
    if (!v.clock_offsets.count(r.node)) unknown.insert(r.node);
  }
  std::string out =
      absl::StrCat("times corrected by measured offsets (to ", v.clock_reference,
                   "'s clock): ", parts.empty() ? "none needed" : absl::StrJoin(parts, ", "));
  if (!unknown.empty()) {
    absl::StrAppend(&out, "; not corrected (no offset measured): ", absl::StrJoin(unknown, ", "));
  }
  return out;
}

}  // namespace

int JobView::ExitCode() const {
  if (hung()) return 2;
  const bool silent = std::any_of(ranks.begin(), ranks.end(), [](const RankView& r) {
    return r.state == RankState::kSilent || r.state == RankState::kGone;
  });
  const bool stuck_link = std::any_of(
      job_links.findings.begin(), job_links.findings.end(),
      [](const LinkFinding& f) { return f.kind == "network" || f.kind == "not_reading"; });
  return silent || stuck_link || !unreachable.empty() || !links.empty() ? 1 : 0;
}

absl::StatusOr<JobView> BuildJobView(const std::vector<FetchResult>& fetched,
                                     const std::string& job) {
  JobView v;
  v.job = job;
  for (const FetchResult& f : fetched) {
    if (!f.status) {
      v.unreachable.push_back(absl::StrCat(f.target.name, ": ", f.error));
      continue;
    }
    const absl::Time now = FromProtoTimestamp(f.status->now());
    for (const v1::TrainingJobStatus& t : f.status->training()) {
      if (t.job() != job) continue;
      RankView r;
      r.node = f.status->node();
      r.rank = t.rank();
      r.process = t.process();
      r.silent_seconds =
          std::max(0.0, absl::ToDoubleSeconds(now - FromProtoTimestamp(t.last_report())));
      r.last_heard = FromProtoTimestamp(t.last_report());
      if (t.has_collective()) {
        const v1::CollectiveState& c = t.collective();
        r.op = c.op();
        r.seq = c.seq();
        r.group = c.group();
        r.bytes = c.bytes();
        r.inside_seconds = c.inside_seconds();
        r.state = RankState::kRunning;
        if (!r.op.empty()) r.entered = now - absl::Seconds(r.inside_seconds);
      }
      // Its process is gone: in no call any more, but the one it died in is
      // what it was last heard inside.
      if (t.has_died_inside()) {
        r.op = t.died_inside().op();
        r.seq = t.died_inside().seq();
        r.group = t.died_inside().group();
        r.bytes = t.died_inside().bytes();
      }
      if (r.silent_seconds >= absl::ToDoubleSeconds(kSilentAfter)) {
        r.state = r.process == "gone" ? RankState::kGone : RankState::kSilent;
      } else if (!r.op.empty() && r.inside_seconds >= absl::ToDoubleSeconds(kWaitingAfter)) {
        r.state = RankState::kWaiting;
      }
      v.ranks.push_back(std::move(r));
    }
  }
  // Nothing answered is no evidence about the job: unavailable, not "no
  // such job". The unreachable daemons follow the message, one line each.
  const std::string unanswered =
      v.unreachable.empty() ? "" : absl::StrCat("\n  ", absl::StrJoin(v.unreachable, "\n  "));
  if (!fetched.empty() && v.unreachable.size() == fetched.size()) {
    return absl::UnavailableError(
        absl::StrCat("no daemon answered (", fetched.size(), " asked)", unanswered));
  }
  if (v.ranks.empty()) {
    return absl::NotFoundError(absl::StrCat(
        "no daemon that answered reports training job '", job, "'",
        v.unreachable.empty() ? ""
                              : absl::StrCat(" (", v.unreachable.size(), " of ", fetched.size(),
                                             " did not answer)", unanswered)));
  }
  std::sort(v.ranks.begin(), v.ranks.end(),
            [](const RankView& a, const RankView& b) { return a.rank < b.rank; });
  for (const RankView& r : v.ranks) {
    if (r.state != RankState::kWaiting || r.seq < v.waiting_seq) continue;
    v.waiting_seq = r.seq;
    v.waiting_op = r.op;
    v.waiting_group = r.group;
  }
  for (RankView& r : v.ranks) {
    if (r.state == RankState::kWaiting)
      v.waiting_seconds = std::max(v.waiting_seconds, r.inside_seconds);
    // Heard from, yet not in the call the others wait in.
    if (v.hung() && r.state == RankState::kRunning && (r.seq < v.waiting_seq || r.op.empty())) {
      r.state = RankState::kNotEntered;
    }
  }
  AddLinks(fetched, v);
  v.job_links = BuildJobLinks(fetched, job);
  AddEvents(fetched, v);
  return v;
}

std::string RenderJobText(const JobView& v) {
  std::string out;
  std::vector<int> culprits;
  for (const RankView& r : v.ranks) {
    if (Suspect(r)) culprits.push_back(r.rank);
  }
  if (v.hung()) {
    absl::StrAppendFormat(&out, "job %s: HUNG: %s (group %s) for up to %.1f s\n", v.job,
                          WaitingText(v), v.waiting_group, v.waiting_seconds);
  } else {
    absl::StrAppend(&out, "job ", v.job, ": no rank waits in a collective for ",
                    absl::FormatDuration(kWaitingAfter), " or more\n");
  }
  absl::StrAppendFormat(&out, "%-6s %-16s %-12s %-24s %9s %11s\n", "RANK", "NODE", "STATE", "CALL",
                        "INSIDE", "LAST HEARD");
  for (const RankView& r : v.ranks) {
    const std::string call =
        r.op.empty() ? (r.seq ? absl::StrCat("(after #", r.seq, ")") : "-") : Call(r.op, r.seq);
    absl::StrAppendFormat(&out, "%-6d %-16s %-12s %-24s %8.1fs %8.1fs ago\n", r.rank, r.node,
                          RankStateName(r.state), call, r.inside_seconds, r.silent_seconds);
  }
  for (const RankView& r : v.ranks) {
    if (Suspect(r)) absl::StrAppend(&out, "rank ", r.rank, " (", r.node, "): ", Reason(r, v), "\n");
  }
  for (const std::string& u : v.unreachable) absl::StrAppend(&out, "daemon unreachable: ", u, "\n");
  // A hung collective over a link that is down: that link is the likely reason.
  for (const JobLink& l : v.links) {
    absl::StrAppend(&out, v.hung() && l.state == "down" ? "likely reason: " : "", LinkText(l),
                    "\n");
  }
  if (v.links_checked > 0) {
    absl::StrAppend(&out, "links between the job's nodes: ", v.links.size(), " of ",
                    v.links_checked, " not up\n");
  }
  absl::StrAppend(&out, RenderJobLinks(v.job_links, v.hung()));
  // Who stopped first, who entered last: the ranks' moments across hosts in
  // one order, when something is wrong with the job.
  std::set<std::string> hosts;
  for (const RankView& r : v.ranks) hosts.insert(r.node);
  if (!v.events.empty() && hosts.size() > 1 && (v.hung() || !culprits.empty())) {
    absl::StrAppend(&out, "events in time order (UTC; ", CorrectionText(v), "):\n");
    for (const JobEvent& e : v.events) {
      absl::StrAppend(&out, "  ", absl::FormatTime("%H:%M:%E3S", e.time, absl::UTCTimeZone()),
                      "  rank ", e.rank, " (", e.node, ") ", e.what,
                      e.corrected ? "" : " (its own clock)", "\n");
    }
  }
  if (v.hung() && culprits.empty() && v.links.empty() && v.job_links.findings.empty()) {
    absl::StrAppend(&out,
                    "every rank that reports is inside the call: look for ranks that never "
                    "reported (not instrumented, or on a host not asked)\n");
  }
  return out;
}

nlohmann::json JobToJson(const JobView& v) {
  nlohmann::json j = {{"schema", "gloowatch.job.v1"},
                      {"job", v.job},
                      {"verdict", v.hung() ? "hung" : (v.ExitCode() ? "degraded" : "running")},
                      {"ranks", nlohmann::json::array()},
                      {"suspects", nlohmann::json::array()},
                      {"unreachable", v.unreachable}};
  if (v.hung()) {
    std::vector<int> ranks;
    for (const RankView& r : v.ranks) {
      if (r.state == RankState::kWaiting) ranks.push_back(r.rank);
    }
    // Each waiting rank's own call: they may differ (seq is the latest).
    nlohmann::json calls = nlohmann::json::array();
    for (const RankView& r : v.ranks) {
      if (r.state == RankState::kWaiting) {
        calls.push_back({{"rank", r.rank}, {"op", r.op}, {"seq", r.seq}});
      }
    }
    j["waiting"] = {{"op", v.waiting_op},        {"seq", v.waiting_seq},
                    {"group", v.waiting_group},  {"ranks", ranks},
                    {"calls", std::move(calls)}, {"seconds", v.waiting_seconds}};
  }
  for (const RankView& r : v.ranks) {
    nlohmann::json x = {{"rank", r.rank},
                        {"node", r.node},
                        {"state", RankStateName(r.state)},
                        {"op", r.op},
                        {"seq", r.seq},
                        {"group", r.group},
                        {"bytes", r.bytes},
                        {"inside_seconds", r.inside_seconds},
                        {"silent_seconds", r.silent_seconds},
                        {"process", r.process}};
    if (Suspect(r)) {
      j["suspects"].push_back({{"rank", r.rank},
                               {"node", r.node},
                               {"state", RankStateName(r.state)},
                               {"reason", Reason(r, v)},
                               {"seq", r.seq},
                               {"silent_seconds", r.silent_seconds},
                               {"process", r.process}});
    }
    j["ranks"].push_back(std::move(x));
  }
  j["links_checked"] = v.links_checked;
  j["links"] = nlohmann::json::array();
  for (const JobLink& l : v.links) {
    nlohmann::json x = {{"node", l.node},
                        {"peer", l.peer},
                        {"state", l.state},
                        {"reason", l.reason},
                        {"message", l.message},
                        {"node_ranks", l.node_ranks},
                        {"peer_ranks", l.peer_ranks}};
    x["last_failure_seconds"] =
        l.last_failure_seconds ? nlohmann::json(*l.last_failure_seconds) : nlohmann::json();
    j["links"].push_back(std::move(x));
  }
  j["job_links"] = JobLinksToJson(v.job_links);
  j["events"] = nlohmann::json::array();
  for (const JobEvent& e : v.events) {
    j["events"].push_back({{"time", absl::ToDoubleSeconds(e.time - absl::UnixEpoch())},
                           {"rank", e.rank},
                           {"node", e.node},
                           {"what", e.what},
                           {"corrected", e.corrected}});
  }
  j["clock_correction"] = {{"reference", v.clock_reference}, {"offsets", v.clock_offsets}};
  return j;
}

}  // namespace gloowatch::client
