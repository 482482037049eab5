#include "client/preflight/preflight_report.h"

#include <arpa/inet.h>

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/failure.h"

namespace gloowatch::client {
namespace {

const std::string& Name(const PreflightInput& in, int rank) { return in.hosts[rank].target.name; }

// In the mesh: Resolve and Connect both answered.
bool InMesh(const PreflightHost& h) {
  return h.resolved && h.resolved->error().empty() && h.connected;
}

// Why a host took no part in the mesh, or "".
std::string WhyOut(const PreflightHost& h) {
  if (!h.resolve_error.empty()) return "its daemon did not answer";
  if (h.resolved && !h.resolved->error().empty()) return "it has no Gloo address";
  if (!h.connect_error.empty()) return "its daemon failed the mesh";
  if (!h.connected) return "it was not connected";
  return "";
}

const v1::PreflightPairResult* PairResult(const PreflightHost& h, int rank) {
  for (const v1::PreflightPairResult& p : h.connected->pairs()) {
    if (static_cast<int>(p.rank()) == rank) return &p;
  }
  return nullptr;
}

int Family(const std::string& address) {
  unsigned char buf[16];
  if (inet_pton(AF_INET, address.c_str(), buf) == 1) return 4;
  std::string host = address.substr(0, address.find('%'));
  if (inet_pton(AF_INET6, host.c_str(), buf) == 1) return 6;
  return 0;
}

bool IsLoopback(const std::string& address) {
  unsigned char buf[16];
  if (inet_pton(AF_INET, address.c_str(), buf) == 1) return buf[0] == 127;
  return address == "::1";
}

std::string Ms(double seconds) { return absl::StrFormat("%.1f ms", seconds * 1e3); }

std::string Store(const PreflightInput& in) {
  if (in.master_addr.empty()) return "";
  return in.master_addr.find(':') != std::string::npos
             ? absl::StrCat("[", in.master_addr, "]:", in.master_port)
             : absl::StrCat(in.master_addr, ":", in.master_port);
}

std::string Reason(FailureReason reason) {
  return std::string(
      ReasonName(reason == v1::FAILURE_REASON_UNSPECIFIED ? v1::FAILURE_REASON_OTHER : reason));
}

// The pair's two directions from what both sides said: the Gloo pair is the
// direction into the side that listened, the reverse round the other one.
void FillDirections(const PreflightInput& in, const v1::PreflightPairResult* ra,
                    const v1::PreflightPairResult* rb, PreflightPair& p) {
  if (ra->listened() == rb->listened()) return;  // older daemons: unknown
  const bool a_listens = ra->listened();
  p.listener = a_listens ? p.a : p.b;
  const int listener = p.listener, connector = a_listens ? p.b : p.a;
  const v1::PreflightPairResult& at_listener = a_listens ? *ra : *rb;
  const v1::PreflightPairResult& at_connector = a_listens ? *rb : *ra;
  PreflightDirection& gloo = a_listens ? p.b_to_a : p.a_to_b;
  PreflightDirection& reverse = a_listens ? p.a_to_b : p.b_to_a;
  gloo.gloo = true;
  gloo.tried = p.tried;
  // Connected, and then the exchange failed: the direction itself works.
  gloo.ok = p.ok || at_listener.connected() || at_connector.connected();
  gloo.seconds = p.seconds;
  if (gloo.tried && !gloo.ok) {
    gloo.reason = p.reason;
    gloo.message = p.message;
  }
  const v1::PreflightReverseResult& out = at_listener.reverse();
  reverse.tried = out.tried();
  reverse.ok = out.tried() && out.ok();
  reverse.seconds = out.seconds();
  if (reverse.tried && !reverse.ok) {
    reverse.reason = Reason(out.reason());
    reverse.message = absl::StrCat(Name(in, listener), " saw ", out.message());
    const v1::PreflightReverseResult& back = at_connector.reverse();
    if (back.tried() && !back.ok()) {
      absl::StrAppend(&reverse.message, "; ", Name(in, connector), " saw nothing arrive");
    }
  }
}

void BuildPairs(PreflightReport& r) {
  const PreflightInput& in = r.input;
  const int n = static_cast<int>(in.hosts.size());
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      PreflightPair p;
      p.a = a;
      p.b = b;
      const PreflightHost& ha = in.hosts[a];
      const PreflightHost& hb = in.hosts[b];
      if (!InMesh(ha) || !InMesh(hb)) {
        const PreflightHost& out = InMesh(ha) ? hb : ha;
        p.message = absl::StrCat("not tried: ", out.target.name, ": ", WhyOut(out));
        r.pairs.push_back(std::move(p));
        continue;
      }
      const v1::PreflightPairResult* ra = PairResult(ha, b);
      const v1::PreflightPairResult* rb = PairResult(hb, a);
      p.tried = ra != nullptr && ra->tried() && rb != nullptr && rb->tried();
      p.ok = p.tried && ra->ok() && rb->ok();
      if (ra != nullptr) p.seconds = std::max(p.seconds, ra->seconds());
      if (rb != nullptr) p.seconds = std::max(p.seconds, rb->seconds());
      if (!p.ok) {
        // The side that failed first in Gloo's order; both are named.
        std::vector<std::string> why;
        FailureReason reason = v1::FAILURE_REASON_UNSPECIFIED;
        for (auto [side, res] : {std::pair{a, ra}, std::pair{b, rb}}) {
          if (res == nullptr || !res->tried()) {
            why.push_back(absl::StrCat(Name(in, side), ": not tried"));
          } else if (!res->ok()) {
            if (reason == v1::FAILURE_REASON_UNSPECIFIED) reason = res->reason();
            why.push_back(absl::StrCat(Name(in, side), " saw ", res->message()));
          }
        }
        p.reason = Reason(reason);
        p.message = absl::StrJoin(why, "; ");
      }
      if (ra != nullptr && rb != nullptr) FillDirections(in, ra, rb, p);
      r.pairs.push_back(std::move(p));
    }
  }
}

void Add(PreflightReport& r, const char* severity, const char* check, std::string message,
         std::vector<std::string> hosts = {}) {
  r.findings.push_back(PreflightFinding{severity, check, std::move(message), std::move(hosts)});
}

void HostFindings(PreflightReport& r) {
  const PreflightInput& in = r.input;
  for (const PreflightHost& h : in.hosts) {
    const std::string& name = h.target.name;
    if (!h.resolve_error.empty()) {
      Add(r, "fail", "daemon",
          absl::StrCat(name, ": the daemon at ", h.target.endpoint.ToString(),
                       " did not answer: ", h.resolve_error),
          {name});
      continue;
    }
    if (h.resolved && !h.resolved->error().empty()) {
      Add(r, "fail", "resolve",
          absl::StrCat(name, ": the job cannot create its Gloo device: ", h.resolved->error()),
          {name});
      continue;
    }
    if (!h.connect_error.empty()) {
      Add(r, "fail", "daemon", absl::StrCat(name, ": the mesh failed: ", h.connect_error), {name});
    }
    if (h.resolved && !h.resolved->gloo().warning().empty()) {
      Add(r, "warn", "resolve", absl::StrCat(name, ": ", h.resolved->gloo().warning()), {name});
    }
  }
}

void CrossHostFindings(PreflightReport& r) {
  const PreflightInput& in = r.input;
  std::map<int, std::vector<std::string>> by_family;
  std::map<size_t, std::vector<std::string>> by_ifname_count;
  std::vector<std::string> loopback, remote;
  for (const PreflightHost& h : in.hosts) {
    if (!h.resolved || !h.resolved->error().empty()) continue;
    const std::string& address = h.resolved->gloo().address();
    by_family[Family(address)].push_back(h.target.name);
    by_ifname_count[h.resolved->gloo().socket_ifnames_size()].push_back(h.target.name);
    (IsLoopback(address) ? loopback : remote).push_back(h.target.name);
  }
  if (by_family.size() > 1) {
    std::vector<std::string> parts;
    for (const auto& [family, names] : by_family) {
      parts.push_back(absl::StrCat("IPv", family, ": ", absl::StrJoin(names, ",")));
    }
    // connectFullMesh fails: "ss1.ss_family == ss2.ss_family. 2 vs 10".
    Add(r, "fail", "address_family",
        absl::StrCat("the hosts' Gloo addresses mix address families (", absl::StrJoin(parts, "; "),
                     "): a pair between families cannot connect"));
  }
  if (by_ifname_count.size() > 1) {
    std::vector<std::string> parts;
    for (const auto& [count, names] : by_ifname_count) {
      parts.push_back(absl::StrCat(count, ": ", absl::StrJoin(names, ",")));
    }
    Add(r, "fail", "ifname_count",
        absl::StrCat("GLOO_SOCKET_IFNAME names different numbers of interfaces across hosts (",
                     absl::StrJoin(parts, "; "),
                     "): ProcessGroupGloo opens one device per name and the ranks disagree"));
  }
  if (!loopback.empty() && !remote.empty()) {
    Add(r, "fail", "loopback",
        absl::StrCat("Gloo would bind to loopback on ", absl::StrJoin(loopback, ","),
                     " while other hosts are remote: set GLOO_SOCKET_IFNAME (or fix the host "
                     "name's entry in /etc/hosts)"));
  }
  // The host name decides when GLOO_SOCKET_IFNAME is unset (or one character).
  if (in.socket_ifname.size() <= 1 && !remote.empty()) {
    for (const PreflightHost& h : in.hosts) {
      if (!h.resolved || h.resolved->hostname_addresses().empty()) continue;
      if (IsLoopback(h.resolved->hostname_addresses(0))) {
        Add(r, "warn", "loopback",
            absl::StrCat(h.target.name, ": host name '", h.resolved->hostname(), "' resolves to ",
                         h.resolved->hostname_addresses(0),
                         " first; without GLOO_SOCKET_IFNAME Gloo may bind to loopback"));
      }
    }
  }
  const int hosts = static_cast<int>(in.hosts.size());
  if (in.world_size > 0 && in.world_size % hosts != 0) {
    Add(r, "warn", "world_size",
        absl::StrCat("world size ", in.world_size, " over ", hosts,
                     " hosts is uneven: check the ranks per host"));
  }
}

// One direction of a pair as judged: `from` connects to `to`.
struct Edge {
  int from = 0, to = 0;
  const PreflightDirection* d = nullptr;
};

// How many directions into and out of a host connected and failed.
struct Tally {
  int in_ok = 0, in_failed = 0, out_ok = 0, out_failed = 0;
  bool works() const { return in_ok + out_ok > 0; }
};

// Every direction that was tried.
std::vector<Edge> EdgesOf(const std::vector<PreflightPair>& pairs) {
  std::vector<Edge> edges;
  for (const PreflightPair& p : pairs) {
    if (p.a_to_b.tried) edges.push_back(Edge{p.a, p.b, &p.a_to_b});
    if (p.b_to_a.tried) edges.push_back(Edge{p.b, p.a, &p.b_to_a});
  }
  return edges;
}

std::vector<Tally> TallyOf(const std::vector<Edge>& edges, int n) {
  std::vector<Tally> t(n);
  for (const Edge& e : edges) {
    (e.d->ok ? t[e.from].out_ok : t[e.from].out_failed)++;
    (e.d->ok ? t[e.to].in_ok : t[e.to].in_failed)++;
  }
  return t;
}

enum class Blame { kNone, kInbound, kOutbound, kIsolated };

// "h1, h2, h4", the first kMaxNamed of them and how many more.
std::string Names(const PreflightInput& in, const std::vector<int>& ranks) {
  constexpr size_t kMaxNamed = 8;
  std::vector<std::string> names;
  for (size_t i = 0; i < ranks.size() && i < kMaxNamed; ++i) names.push_back(Name(in, ranks[i]));
  std::string out = absl::StrJoin(names, ", ");
  if (ranks.size() > kMaxNamed) absl::StrAppend(&out, " and ", ranks.size() - kMaxNamed, " more");
  return out;
}

// The reasons of failed directions, most frequent first ("timeout").
std::string Reasons(const std::vector<const PreflightDirection*>& failed) {
  std::map<std::string, int> count;
  for (const PreflightDirection* d : failed) ++count[d->reason];
  std::vector<std::pair<int, std::string>> order;
  for (const auto& [reason, n] : count) order.emplace_back(-n, reason);
  std::sort(order.begin(), order.end());
  std::vector<std::string> out;
  for (const auto& [n, reason] : order) out.push_back(reason);
  return absl::StrJoin(out, ", ");
}

// A finding stops the job when one of its failed directions is the job's
// own (Gloo's pair); a failure only the reverse round found degrades.
const char* Severity(const std::vector<const PreflightDirection*>& failed) {
  for (const PreflightDirection* d : failed) {
    if (d->gloo) return "fail";
  }
  return "warn";
}

// A host is blamed when all its connections in one direction (or both)
// failed while the peers on the other ends work with other hosts, so that
// its innocent peers are not: at least two such peers, so that with two
// hosts a one-way failure stays a direction between them.
std::vector<Blame> BlameHosts(const std::vector<Edge>& edges, const std::vector<Tally>& t) {
  const int n = static_cast<int>(t.size());
  // Failed directions whose other end connects out (into h), accepts (out
  // of h), or works at all (either way).
  std::vector<int> in_witnessed(n), out_witnessed(n);
  std::vector<std::set<int>> working_peers(n);
  for (const Edge& e : edges) {
    if (e.d->ok) continue;
    if (t[e.from].out_ok > 0) ++in_witnessed[e.to];
    if (t[e.to].in_ok > 0) ++out_witnessed[e.from];
    if (t[e.from].works()) working_peers[e.to].insert(e.from);
    if (t[e.to].works()) working_peers[e.from].insert(e.to);
  }
  std::vector<Blame> blame(n, Blame::kNone);
  for (int h = 0; h < n; ++h) {
    if (!t[h].works() && working_peers[h].size() >= 2) {
      blame[h] = Blame::kIsolated;
    } else if (t[h].in_ok == 0 && t[h].out_ok > 0 && in_witnessed[h] >= 2) {
      blame[h] = Blame::kInbound;
    } else if (t[h].out_ok == 0 && t[h].in_ok > 0 && out_witnessed[h] >= 2) {
      blame[h] = Blame::kOutbound;
    }
  }
  return blame;
}

void HostBlameFinding(PreflightReport& r, int h, Blame blame, const std::vector<Edge>& edges) {
  const PreflightInput& in = r.input;
  const std::string& name = Name(in, h);
  std::vector<int> from, to;  // the peers of failed directions into and out of h
  std::vector<const PreflightDirection*> failed;
  int out_ok = 0, in_ok = 0, gloo_inbound = 0;
  for (const Edge& e : edges) {
    if (e.from == h) {
      if (e.d->ok) {
        ++out_ok;
      } else {
        to.push_back(e.to);
      }
    }
    if (e.to == h) {
      if (e.d->ok) {
        ++in_ok;
      } else {
        from.push_back(e.from);
      }
      if (e.d->gloo) ++gloo_inbound;
    }
    const bool counts = blame == Blame::kIsolated  ? (e.from == h || e.to == h)
                        : blame == Blame::kInbound ? e.to == h
                                                   : e.from == h;
    if (counts && !e.d->ok) failed.push_back(e.d);
  }
  const char* severity = Severity(failed);
  std::string message;
  switch (blame) {
    case Blame::kInbound:
      message = absl::StrCat(name, " accepts no inbound Gloo connection: a firewall on ", name,
                             "'s ephemeral ports (", Names(in, from),
                             " could not connect to it: ", Reasons(failed), "; it connects out to ",
                             out_ok, " of ", out_ok + to.size(), ")");
      if (gloo_inbound == 0) {
        absl::StrAppend(&message, "; in this job Gloo makes ", name,
                        " connect on all its pairs, so the mesh forms, but a job in which it "
                        "must listen would not");
      }
      r.findings.push_back(PreflightFinding{severity, "inbound", std::move(message), {name}});
      return;
    case Blame::kOutbound:
      message =
          absl::StrCat(name, " reaches no host: its outbound path or routing (its connections to ",
                       Names(in, to), " failed: ", Reasons(failed), "; ", in_ok, " of ",
                       in_ok + from.size(), " connect to it)");
      r.findings.push_back(PreflightFinding{severity, "outbound", std::move(message), {name}});
      return;
    case Blame::kIsolated: {
      std::set<int> all(from.begin(), from.end());
      all.insert(to.begin(), to.end());
      message = absl::StrCat(name,
                             " has no connection with any host, either way: its link, interface "
                             "or address (to and from ",
                             Names(in, std::vector<int>(all.begin(), all.end())), ": ",
                             Reasons(failed), "; the other hosts connect to each other)");
      r.findings.push_back(PreflightFinding{severity, "isolated", std::move(message), {name}});
      return;
    }
    case Blame::kNone:
      return;
  }
}

// What failed between two hosts beyond what blames one of them: both ways
// (the path between them: check "pair", as before directions were known),
// or one way (a firewall on the accepting side against that peer, or the
// way from the connecting side).
void PathFinding(PreflightReport& r, const PreflightPair& p, const PreflightDirection* ab,
                 const PreflightDirection* ba, const std::vector<Tally>& t) {
  const PreflightInput& in = r.input;
  const std::string& a = Name(in, p.a);
  const std::string& b = Name(in, p.b);
  if (ab != nullptr && ba != nullptr) {
    const PreflightDirection& gloo = ab->gloo ? *ab : *ba;
    const PreflightDirection& reverse = ab->gloo ? *ba : *ab;
    std::string message = absl::StrCat(a, " <-> ", b, ": ", Reasons({ab, ba}),
                                       ": no connection either way: ", gloo.message,
                                       "; the other way: ", reverse.message);
    // Both still work with someone else: the path between them.
    if (t[p.a].works() && t[p.b].works()) {
      absl::StrAppend(&message, "; both connect to other hosts: the path between ", a, " and ", b);
    }
    r.findings.push_back(PreflightFinding{Severity({ab, ba}), "pair", std::move(message), {a, b}});
    return;
  }
  const PreflightDirection* d = ab != nullptr ? ab : ba;
  const bool from_a = ab != nullptr;
  const std::string& from = from_a ? a : b;
  const std::string& to = from_a ? b : a;
  const PreflightDirection& other = from_a ? p.b_to_a : p.a_to_b;
  std::string message = absl::StrCat(
      from, " -> ", to, ": ", d->reason, ": ", to, " does not accept ", from, "'s connection (",
      d->message, ") while ", to, " -> ", from,
      other.tried ? (other.ok ? " connects" : " fails too") : " was not tried", ": a firewall on ",
      to, " against ", from, ", or the way from ", from, " to ", to);
  r.findings.push_back(
      PreflightFinding{Severity({d}), "direction", std::move(message), {from, to}});
}

// Localises failed connections: hosts that accept none, reach none or have
// none, then single paths and directions; a pair that connected and then
// failed its exchange, or whose daemons did not say its direction, is a
// pair finding.
void PairFindings(PreflightReport& r) {
  const PreflightInput& in = r.input;
  const int n = static_cast<int>(in.hosts.size());
  const std::vector<Edge> edges = EdgesOf(r.pairs);
  const std::vector<Tally> t = TallyOf(edges, n);
  const std::vector<Blame> blame = BlameHosts(edges, t);
  for (int h = 0; h < n; ++h) {
    if (blame[h] != Blame::kNone) HostBlameFinding(r, h, blame[h], edges);
  }
  // A failed direction a blamed host explains.
  auto explained = [&](int from, int to) {
    return blame[to] == Blame::kInbound || blame[to] == Blame::kIsolated ||
           blame[from] == Blame::kOutbound || blame[from] == Blame::kIsolated;
  };
  for (const PreflightPair& p : r.pairs) {
    if (p.listener < 0) {
      if (p.tried && !p.ok) {
        Add(r, "fail", "pair",
            absl::StrCat(Name(in, p.a), " <-> ", Name(in, p.b), ": ", p.reason, ": ", p.message),
            {Name(in, p.a), Name(in, p.b)});
      }
      continue;
    }
    auto failed = [&](const PreflightDirection& d, int from, int to) {
      return d.tried && !d.ok && !explained(from, to) ? &d : nullptr;
    };
    const PreflightDirection* ab = failed(p.a_to_b, p.a, p.b);
    const PreflightDirection* ba = failed(p.b_to_a, p.b, p.a);
    if (ab != nullptr || ba != nullptr) PathFinding(r, p, ab, ba, t);
    // Connected in Gloo's direction, then the exchange failed.
    const PreflightDirection& gloo = p.a_to_b.gloo ? p.a_to_b : p.b_to_a;
    if (p.tried && !p.ok && gloo.ok) {
      Add(r, "fail", "pair",
          absl::StrCat(Name(in, p.a), " <-> ", Name(in, p.b), ": ", p.reason,
                       ": connected, then the exchange failed: ", p.message),
          {Name(in, p.a), Name(in, p.b)});
    }
  }
}

void StoreFindings(PreflightReport& r) {
  const PreflightInput& in = r.input;
  if (in.master_addr.empty()) {
    Add(r, "info", "store", "MASTER_ADDR/MASTER_PORT not given: the store was not checked");
    return;
  }
  for (const PreflightHost& h : in.hosts) {
    if (!h.connected) continue;
    const v1::PreflightMasterResult& m = h.connected->master();
    if (!m.checked() || m.ok()) continue;
    if (m.reason() == v1::FAILURE_REASON_REFUSED) {
      Add(r, "warn", "store",
          absl::StrCat(h.target.name, ": nothing listens on the store ", Store(in), " (",
                       m.message(),
                       "): the host answers, so no firewall drops it; expected before rank 0 "
                       "starts its TCPStore, not once the job runs"),
          {h.target.name});
    } else {
      Add(r, "fail", "store",
          absl::StrCat(h.target.name, ": cannot reach the store ", Store(in), ": ",
                       ReasonName(m.reason()), ": ", m.message()),
          {h.target.name});
    }
  }
}

}  // namespace

PreflightReport BuildPreflightReport(PreflightInput input) {
  PreflightReport r;
  r.input = std::move(input);
  BuildPairs(r);
  HostFindings(r);
  PairFindings(r);
  StoreFindings(r);
  CrossHostFindings(r);
  bool fail = false, warn = false;
  for (const PreflightFinding& f : r.findings) {
    fail |= f.severity == "fail";
    warn |= f.severity == "warn";
  }
  // A mesh of fewer than two hosts proves nothing.
  int in_mesh = 0;
  for (const PreflightHost& h : r.input.hosts) in_mesh += InMesh(h) ? 1 : 0;
  if (in_mesh < 2 && !fail) {
    Add(r, "fail", "mesh", "fewer than two hosts formed the mesh");
    fail = true;
  }
  r.verdict = fail ? "do_not_start" : warn ? "degraded" : "go";
  r.exit_code = fail ? 2 : warn ? 1 : 0;
  return r;
}

nlohmann::json PreflightToJson(const PreflightReport& r) {
  const PreflightInput& in = r.input;
  nlohmann::json j;
  j["schema"] = "gloowatch.preflight.v1";
  j["verdict"] = r.verdict;
  j["exit_code"] = r.exit_code;
  j["timeout_seconds"] = absl::ToDoubleSeconds(in.timeout);
  j["elapsed_seconds"] = absl::ToDoubleSeconds(in.elapsed);
  j["world_size"] = in.world_size > 0 ? nlohmann::json(in.world_size) : nlohmann::json();
  j["socket_ifname"] = in.socket_ifname;
  j["store"] = in.master_addr.empty()
                   ? nlohmann::json()
                   : nlohmann::json{{"addr", in.master_addr}, {"port", in.master_port}};
  const std::vector<Tally> tally = TallyOf(EdgesOf(r.pairs), static_cast<int>(in.hosts.size()));
  nlohmann::json hosts = nlohmann::json::array();
  for (size_t i = 0; i < in.hosts.size(); ++i) {
    const PreflightHost& h = in.hosts[i];
    nlohmann::json o{{"name", h.target.name},
                     {"rank", i},
                     {"daemon", h.target.endpoint.ToString()},
                     {"in_mesh", InMesh(h)},
                     {"inbound", {{"ok", tally[i].in_ok}, {"failed", tally[i].in_failed}}},
                     {"outbound", {{"ok", tally[i].out_ok}, {"failed", tally[i].out_failed}}}};
    if (!h.resolve_error.empty()) o["error"] = h.resolve_error;
    if (!h.connect_error.empty()) o["error"] = h.connect_error;
    if (h.resolved) {
      const v1::PreflightResolveResponse& res = *h.resolved;
      o["node"] = res.node();
      o["hostname"] = res.hostname();
      o["hostname_addresses"] = std::vector<std::string>(res.hostname_addresses().begin(),
                                                         res.hostname_addresses().end());
      if (!res.error().empty()) {
        o["gloo"] = {{"error", res.error()}};
      } else {
        o["gloo"] = {
            {"address", res.gloo().address()},
            {"interface", res.gloo().interface()},
            {"source", res.gloo().source()},
            {"is_loopback", res.gloo().is_loopback()},
            {"socket_ifnames", std::vector<std::string>(res.gloo().socket_ifnames().begin(),
                                                        res.gloo().socket_ifnames().end())},
            {"warning", res.gloo().warning()}};
      }
    }
    if (h.connected && h.connected->master().checked()) {
      const v1::PreflightMasterResult& m = h.connected->master();
      o["store"] = {{"ok", m.ok()},
                    {"address", m.address()},
                    {"seconds", m.seconds()},
                    {"reason", m.ok() ? "" : std::string(ReasonName(m.reason()))},
                    {"message", m.message()}};
    }
    hosts.push_back(std::move(o));
  }
  j["hosts"] = std::move(hosts);
  nlohmann::json pairs = nlohmann::json::array();
  auto direction = [](const PreflightDirection& d) {
    return nlohmann::json{{"tried", d.tried},     {"ok", d.ok},         {"gloo", d.gloo},
                          {"seconds", d.seconds}, {"reason", d.reason}, {"message", d.message}};
  };
  for (const PreflightPair& p : r.pairs) {
    pairs.push_back(
        {{"a", Name(in, p.a)},
         {"b", Name(in, p.b)},
         {"tried", p.tried},
         {"ok", p.ok},
         {"seconds", p.seconds},
         {"reason", p.reason},
         {"message", p.message},
         {"listener", p.listener < 0 ? nlohmann::json() : nlohmann::json(Name(in, p.listener))},
         {"a_to_b", direction(p.a_to_b)},
         {"b_to_a", direction(p.b_to_a)}});
  }
  j["pairs"] = std::move(pairs);
  nlohmann::json findings = nlohmann::json::array();
  for (const PreflightFinding& f : r.findings) {
    findings.push_back(
        {{"severity", f.severity}, {"check", f.check}, {"message", f.message}, {"hosts", f.hosts}});
  }
  j["findings"] = std::move(findings);
  return j;
}

std::string RenderPreflightText(const PreflightReport& r) {
  const PreflightInput& in = r.input;
  std::string out =
      absl::StrCat("gloowatch preflight: ", in.hosts.size(), " hosts",
                   in.world_size > 0 ? absl::StrCat(", world size ", in.world_size) : "",
                   ", GLOO_SOCKET_IFNAME=", in.socket_ifname.empty() ? "(unset)" : in.socket_ifname,
                   ", timeout ", absl::FormatDuration(in.timeout),
                   in.master_addr.empty() ? "" : absl::StrCat(", store ", Store(in)), "\n\n");
  absl::StrAppend(&out, absl::StrFormat("%-20s %-5s %-30s %-24s %s\n", "HOST", "RANK",
                                        "GLOO ADDRESS", "CHOSEN BY", "STORE"));
  for (size_t i = 0; i < in.hosts.size(); ++i) {
    const PreflightHost& h = in.hosts[i];
    std::string address = "-", source = "-", store = "-";
    if (!h.resolve_error.empty()) {
      address = "daemon did not answer";
    } else if (h.resolved && !h.resolved->error().empty()) {
      address = "no address";
    } else if (h.resolved) {
      address = h.resolved->gloo().address();
      if (!h.resolved->gloo().interface().empty()) {
        absl::StrAppend(&address, " (", h.resolved->gloo().interface(), ")");
      }
      source = h.resolved->gloo().source();
    }
    if (h.connected && h.connected->master().checked()) {
      const v1::PreflightMasterResult& m = h.connected->master();
      store = m.ok() ? absl::StrCat("ok ", Ms(m.seconds())) : std::string(ReasonName(m.reason()));
    }
    absl::StrAppend(&out, absl::StrFormat("%-20s %-5d %-30s %-24s %s\n", h.target.name,
                                          static_cast<int>(i), address, source, store));
  }
  size_t ok = 0, failed = 0, untried = 0, reverse_tried = 0, reverse_ok = 0;
  const PreflightPair* slowest = nullptr;
  for (const PreflightPair& p : r.pairs) {
    for (const PreflightDirection* d : {&p.a_to_b, &p.b_to_a}) {
      if (d->gloo || !d->tried) continue;
      ++reverse_tried;
      reverse_ok += d->ok ? 1 : 0;
    }
    if (p.ok) {
      ++ok;
      if (slowest == nullptr || p.seconds > slowest->seconds) slowest = &p;
    } else if (p.tried) {
      ++failed;
    } else {
      ++untried;
    }
  }
  absl::StrAppend(&out, "\npairs: ", ok, " of ", r.pairs.size(), " connected");
  if (failed > 0) absl::StrAppend(&out, ", ", failed, " failed");
  if (untried > 0) absl::StrAppend(&out, ", ", untried, " not tried");
  if (reverse_tried > 0) {
    absl::StrAppend(&out, "; the other way ", reverse_ok, " of ", reverse_tried);
  }
  if (slowest != nullptr) {
    absl::StrAppend(&out, "; slowest ", Name(in, slowest->a), " <-> ", Name(in, slowest->b), " ",
                    Ms(slowest->seconds));
  }
  absl::StrAppend(&out, "\n");
  // A big mesh with a dead switch fails thousands of pairs: show the first.
  constexpr size_t kMaxShown = 20;
  size_t shown = 0, hidden = 0;
  for (const char* severity : {"fail", "warn", "info"}) {
    for (const PreflightFinding& f : r.findings) {
      if (f.severity != severity) continue;
      if (shown++ >= kMaxShown) {
        ++hidden;
        continue;
      }
      absl::StrAppend(&out, absl::StrFormat("%-4s  ", absl::AsciiStrToUpper(f.severity)), f.message,
                      "\n");
    }
  }
  if (hidden > 0) absl::StrAppend(&out, "... and ", hidden, " more (--json lists all)\n");
  const char* verdict = r.verdict == "go"         ? "GO"
                        : r.verdict == "degraded" ? "DEGRADED"
                                                  : "DO NOT START";
  absl::StrAppend(&out, "\nverdict: ", verdict, " (exit ", r.exit_code, ")\n");
  return out;
}

}  // namespace gloowatch::client
