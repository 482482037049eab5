#include "client/preflight/preflight.h"

#include <grpcpp/grpcpp.h>

#include <fstream>
#include <random>
#include <set>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "client/core/channel.h"
#include "client/core/slurm_nodelist.h"
#include "proto/gloowatch.grpc.pb.h"

namespace gloowatch::client {
namespace {

std::unique_ptr<v1::Preflight::Stub> MakeStub(
    const Endpoint& ep, const std::shared_ptr<grpc::ChannelCredentials>& credentials) {
  return v1::Preflight::NewStub(DaemonChannel(ep, credentials));
}

std::string Describe(const grpc::Status& s) {
  return absl::StrCat(s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ? "deadline exceeded"
                      : s.error_code() == grpc::StatusCode::UNAVAILABLE     ? "unavailable"
                                                                            : "error",
                      ": ", s.error_message());
}

std::string NewSession() {
  std::random_device rd;
  return absl::StrFormat("pf-%08x%08x", rd(), rd());
}

// Runs fn(i) for every host on its own thread and waits for all.
template <typename Fn>
void ForEachHost(size_t n, Fn&& fn) {
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (size_t i = 0; i < n; ++i) threads.emplace_back([&fn, i] { fn(i); });
  for (std::thread& t : threads) t.join();
}

}  // namespace

PreflightReport RunPreflight(const PreflightOptions& o) {
  const absl::Time start = absl::Now();
  PreflightInput in;
  in.world_size = o.world_size;
  in.socket_ifname = o.socket_ifname;
  in.master_addr = o.master_addr;
  in.master_port = o.master_port;
  in.timeout = o.timeout;
  in.hosts.resize(o.hosts.size());
  const std::string session = NewSession();
  const uint32_t n = static_cast<uint32_t>(o.hosts.size());
  const uint64_t timeout_ms =
      static_cast<uint64_t>(std::max<int64_t>(absl::ToInt64Milliseconds(o.timeout), 1));

  // Phase 1: every host resolves its address and opens a pair per other host.
  ForEachHost(n, [&](size_t i) {
    PreflightHost& h = in.hosts[i];
    h.target = o.hosts[i];
    v1::PreflightResolveRequest request;
    request.set_socket_ifname(o.socket_ifname);
    request.set_session(session);
    request.set_rank(static_cast<uint32_t>(i));
    request.set_hosts(n);
    request.set_timeout_ms(timeout_ms);
    grpc::ClientContext ctx;
    SetDeadline(&ctx, o.deadline);
    v1::PreflightResolveResponse response;
    grpc::Status s = MakeStub(h.target.endpoint, o.credentials)->Resolve(&ctx, request, &response);
    if (!s.ok()) {
      h.resolve_error = Describe(s);
      return;
    }
    if (response.error().empty() && response.pair_addresses_size() != static_cast<int>(n)) {
      h.resolve_error = absl::StrCat("the daemon answered ", response.pair_addresses_size(),
                                     " pair addresses for ", n, " hosts");
      return;
    }
    // --daemons names a host by its address: the node name says more.
    if (h.target.name == h.target.endpoint.ToString() && !response.node().empty()) {
      h.target.name = response.node();
    }
    h.resolved = std::move(response);
  });

  // Phase 2: each host connects its pairs to the others' pairs for it, and
  // in the reverse round connects, or awaits, the other way.
  auto ready = [&](size_t i) {
    return in.hosts[i].resolved && in.hosts[i].resolved->error().empty();
  };
  size_t prepared = 0;
  for (size_t i = 0; i < n; ++i) prepared += ready(i) ? 1 : 0;
  if (prepared >= 2) {
    ForEachHost(n, [&](size_t i) {
      if (!ready(i)) return;
      PreflightHost& h = in.hosts[i];
      v1::PreflightConnectRequest request;
      request.set_session(session);
      request.set_timeout_ms(timeout_ms);
      request.set_master_addr(o.master_addr);
      request.set_master_port(o.master_port);
      for (size_t j = 0; j < n; ++j) {
        const bool peer = j != i && ready(j);
        request.add_peer_pair_addresses(peer ? in.hosts[j].resolved->pair_addresses(i) : "");
        // Older daemons have no reverse listener: their pairs get no reverse round.
        request.add_peer_reverse_addresses(peer ? in.hosts[j].resolved->reverse_address() : "");
      }
      grpc::ClientContext ctx;
      SetDeadline(&ctx, 2 * o.timeout + o.deadline + absl::Seconds(10));
      v1::PreflightConnectResponse response;
      grpc::Status s =
          MakeStub(h.target.endpoint, o.credentials)->Connect(&ctx, request, &response);
      if (!s.ok()) {
        h.connect_error = Describe(s);
        return;
      }
      h.connected = std::move(response);
    });
  }
  in.elapsed = absl::Now() - start;
  return BuildPreflightReport(std::move(in));
}

std::vector<PreflightHost> ResolveOnly(
    const std::vector<DaemonTarget>& targets, const std::string& socket_ifname,
    absl::Duration deadline, const std::shared_ptr<grpc::ChannelCredentials>& credentials) {
  std::vector<PreflightHost> hosts(targets.size());
  ForEachHost(targets.size(), [&](size_t i) {
    PreflightHost& h = hosts[i];
    h.target = targets[i];
    v1::PreflightResolveRequest request;
    request.set_socket_ifname(socket_ifname);
    grpc::ClientContext ctx;
    SetDeadline(&ctx, deadline);
    v1::PreflightResolveResponse response;
    grpc::Status s = MakeStub(h.target.endpoint, credentials)->Resolve(&ctx, request, &response);
    if (!s.ok()) {
      h.resolve_error = Describe(s);
      return;
    }
    if (h.target.name == h.target.endpoint.ToString() && !response.node().empty()) {
      h.target.name = response.node();
    }
    h.resolved = std::move(response);
  });
  return hosts;
}

absl::StatusOr<std::vector<DaemonTarget>> ParsePreflightHosts(const std::vector<std::string>& lines,
                                                              uint16_t default_port) {
  std::vector<DaemonTarget> out;
  std::set<std::string> seen;
  for (const std::string& line : lines) {
    // "[v6]:port" and "host:port" are one host each; the rest may be a
    // Slurm list.
    const absl::string_view text = absl::StripAsciiWhitespace(line);
    if (text.empty()) continue;
    std::vector<std::string> names;
    if (absl::StartsWith(text, "[") && text.find("]:") != absl::string_view::npos) {
      names.push_back(std::string(text));
    } else {
      absl::StatusOr<std::vector<std::string>> expanded = ExpandNodeList(text);
      if (!expanded.ok()) return expanded.status();
      names = *std::move(expanded);
    }
    for (const std::string& name : names) {
      Endpoint ep;
      if (name.find(':') != std::string::npos) {
        absl::StatusOr<Endpoint> parsed = ParseEndpoint(name);
        if (!parsed.ok()) return parsed.status();
        ep = *parsed;
      } else {
        ep.host = name;
        ep.port = default_port;
      }
      const std::string key = ep.ToString();
      if (!seen.insert(key).second) {
        return absl::InvalidArgumentError(absl::StrCat("host ", key, " is listed twice"));
      }
      out.push_back(DaemonTarget{name, ep});
    }
  }
  if (out.size() > 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat(out.size(), " hosts: a preflight takes at most 1024"));
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> ReadHostfile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open hostfile '", path, "'"));
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    absl::string_view text = line;
    text = text.substr(0, text.find('#'));
    text = absl::StripAsciiWhitespace(text);
    if (text.empty()) continue;
    // "host slots=8" (MPI) or "host 8": the first word.
    lines.push_back(std::string(text.substr(0, text.find_first_of(" \t"))));
    if (lines.size() > 4096) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": more than 4096 hosts"));
    }
  }
  return lines;
}

}  // namespace gloowatch::client
