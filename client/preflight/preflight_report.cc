#include "client/preflight/preflight_report.h"

#include <arpa/inet.h>

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/exit_codes.h"
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
        p.reason = std::string(ReasonName(
            reason == v1::FAILURE_REASON_UNSPECIFIED ? v1::FAILURE_REASON_OTHER : reason));
        p.message = absl::StrJoin(why, "; ");
      }
      r.pairs.push_back(std::move(p));
    }
  }
}

void Add(PreflightReport& r, const char* severity, const char* check, std::string message) {
  r.findings.push_back(PreflightFinding{severity, check, std::move(message)});
}

void HostFindings(PreflightReport& r) {
  const PreflightInput& in = r.input;
  for (const PreflightHost& h : in.hosts) {
    const std::string& name = h.target.name;
    if (!h.resolve_error.empty()) {
      Add(r, "fail", "daemon",
          absl::StrCat(name, ": the daemon at ", h.target.endpoint.ToString(),
                       " did not answer: ", h.resolve_error));
      continue;
    }
    if (h.resolved && !h.resolved->error().empty()) {
      Add(r, "fail", "resolve",
          absl::StrCat(name, ": the job cannot create its Gloo device: ", h.resolved->error()));
      continue;
    }
    if (!h.connect_error.empty()) {
      Add(r, "fail", "daemon", absl::StrCat(name, ": the mesh failed: ", h.connect_error));
    }
    if (h.resolved && !h.resolved->gloo().warning().empty()) {
      Add(r, "warn", "resolve", absl::StrCat(name, ": ", h.resolved->gloo().warning()));
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

void PairFindings(PreflightReport& r) {
  const PreflightInput& in = r.input;
  for (const PreflightPair& p : r.pairs) {
    if (p.ok || !p.tried) continue;
    Add(r, "fail", "pair",
        absl::StrCat(Name(in, p.a), " <-> ", Name(in, p.b), ": ", p.reason, ": ", p.message));
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
                       "starts its TCPStore, not once the job runs"));
    } else {
      Add(r, "fail", "store",
          absl::StrCat(h.target.name, ": cannot reach the store ", Store(in), ": ",
                       ReasonName(m.reason()), ": ", m.message()));
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
  // Nothing answered: the cluster could not be judged (still do not start).
  if (std::none_of(r.input.hosts.begin(), r.input.hosts.end(),
                   [](const PreflightHost& h) { return h.answered || h.resolved.has_value(); })) {
    r.exit_code = kExitUnavailable;
  }
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
  nlohmann::json hosts = nlohmann::json::array();
  for (size_t i = 0; i < in.hosts.size(); ++i) {
    const PreflightHost& h = in.hosts[i];
    nlohmann::json o{{"name", h.target.name},
                     {"rank", i},
                     {"daemon", h.target.endpoint.ToString()},
                     {"in_mesh", InMesh(h)}};
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
  for (const PreflightPair& p : r.pairs) {
    pairs.push_back({{"a", Name(in, p.a)},
                     {"b", Name(in, p.b)},
                     {"tried", p.tried},
                     {"ok", p.ok},
                     {"seconds", p.seconds},
                     {"reason", p.reason},
                     {"message", p.message}});
  }
  j["pairs"] = std::move(pairs);
  nlohmann::json findings = nlohmann::json::array();
  for (const PreflightFinding& f : r.findings) {
    findings.push_back({{"severity", f.severity}, {"check", f.check}, {"message", f.message}});
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
  size_t ok = 0, failed = 0, untried = 0;
  const PreflightPair* slowest = nullptr;
  for (const PreflightPair& p : r.pairs) {
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
