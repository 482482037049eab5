#include "client/explain_log.h"

#include <algorithm>
#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "re2/re2.h"

namespace gloowatch::client {
namespace {

// Message texts verified against pytorch/gloo gloo/transport/tcp/{pair,
// unbound_buffer,device}.cc, torch/csrc/distributed/c10d/TCPStore*.cpp and
// against real torch 1.13 runs (tests/client/torch/gloo_failure.py).
constexpr LogSignature kSignatures[] = {
    {"collective_mismatch",
     R"(Received data size doesn't match expected size|Detected mismatch between collectives)",
     "Ranks issued different collectives (or different tensor sizes) in the same slot.",
     "Make every rank call the same collectives in the same order with the same shapes; run "
     "with TORCH_DISTRIBUTED_DEBUG=DETAIL to see which rank diverged."},
    {"peer_connection_closed", R"(Connection closed by peer)",
     "The remote rank's process exited or crashed (EOF on the Gloo pair socket).",
     "Read the remote rank's log first (OOM killer, SIGKILL, Python exception); check "
     "`dmesg` on that host. This rank failed only because its peer went away."},
    {"peer_connection_reset", R"((Read error|writev) .*(Connection reset by peer|Broken pipe))",
     "The remote rank died or its socket was reset while a collective was in flight.",
     "Find the rank that died (its own log, `dmesg` for the OOM killer); a reset with no dead "
     "rank points to a middlebox killing idle TCP connections."},
    {"collective_timeout", R"(Timed out waiting (\d+)ms for (recv|send) operation to complete)",
     "A collective did not complete within the process-group timeout: some rank never joined "
     "it (hung, slow, or stuck in a different collective).",
     "Find the rank that did not reach the collective (py-spy dump on each rank). The limit is "
     "init_process_group(timeout=...); 1800000ms is the 30 min default. GLOO_TIMEOUT_SECONDS "
     "is not read by PyTorch or Gloo."},
    {"pair_io_timeout", R"((Read|Write|Send) timeout \[)",
     "A Gloo pair socket read/write hit the timeout (peer hung or the network stalls).",
     "Check the peer rank is alive and the link is healthy (`gloowatch health`)."},
    {"pair_closed_after_timeout", R"(Application timeout caused pair closure)",
     "An earlier timeout closed this Gloo pair; later operations fail with it.",
     "Look for the first timeout in the log; that one has the real cause."},
    {"bad_interface_nccl_syntax", R"(Unable to find address for:? *\^)",
     "GLOO_SOCKET_IFNAME uses NCCL's '^' exclusion syntax, which Gloo does not support.",
     "Set GLOO_SOCKET_IFNAME to interface names (comma-separated, e.g. eth0 or eth0,eth1)."},
    {"bad_interface", R"(Unable to find address for:? *(\S+))",
     "GLOO_SOCKET_IFNAME names an interface that does not exist here or has no address.",
     "Use an interface listed by `ip -br addr` that has an address on the training network, "
     "same name on every host (or set it per host)."},
    {"bad_address", R"(Unable to find interface for:? *(\S+))",
     "The address Gloo was told to bind to is not configured on any local interface.",
     "Bind to an address of this host (`ip -br addr`), or use GLOO_SOCKET_IFNAME."},
    {"loopback_fallback",
     R"(Using the loopback address as fallback|Manually set the network interface to bind to with GLOO_SOCKET_IFNAME)",
     "The host name resolves to a loopback address, so Gloo bound to 127.0.0.1 and remote "
     "ranks cannot connect.",
     "Set GLOO_SOCKET_IFNAME to the training interface, or fix /etc/hosts so the host name "
     "resolves to a routable address."},
    {"pair_connect_timeout", R"(Connect timeout)",
     "Connecting a Gloo pair to a peer timed out: packets to the peer's pair port are dropped.",
     "Gloo pairs listen on ephemeral ports (net.ipv4.ip_local_port_range), not only "
     "MASTER_PORT; open that range between the hosts (pytorch/pytorch#44544, pytorch/gloo#54). "
     "Run `gloowatch diagnose`."},
    {"pair_connect_refused", R"(connect.*Connection refused)",
     "A Gloo pair connect was refused: the peer was not listening on that address/port.",
     "Check the peer rank is running and bound to a reachable interface (GLOO_SOCKET_IFNAME); "
     "a firewall REJECT rule also shows as refused."},
    {"no_route", R"(No route to host|Network is unreachable)",
     "No route to the peer address: wrong interface/subnet chosen, or a REJECT firewall rule.",
     "Check GLOO_SOCKET_IFNAME selects an interface on the same network on every host; check "
     "`ip route get PEER`."},
    {"store_connect_timeout",
     R"(The client socket has timed out after \S+ while trying to connect to \(([^,]+), (\d+)\))",
     "This rank could not reach the rendezvous store (MASTER_ADDR:MASTER_PORT) in time.",
     "Check rank 0 is running and listening on MASTER_PORT, MASTER_ADDR is reachable from "
     "here, and no firewall blocks that port."},
    {"store_connect_refused", R"(client socket .*Connection refused|Connection refused.*TCPStore)",
     "The rendezvous store refused the connection: nothing listens on MASTER_PORT yet.",
     "Start rank 0 first or give the store a longer timeout; check MASTER_PORT matches."},
    {"store_port_in_use", R"(failed to bind to .*Address already in use|EADDRINUSE)",
     "MASTER_PORT is already in use on the rank 0 host (a stale job, or two jobs on one port).",
     "Pick a free MASTER_PORT or stop the stale process (`ss -ltnp sport = :PORT`)."},
    {"store_barrier_timeout", R"(Timed out initializing process group in store based barrier)",
     "Not all ranks joined the process group in time (world_size larger than the ranks "
     "actually started, or a rank crashed during start-up).",
     "Check world_size/rank values and that every rank started; see its log."},
    {"store_wait_timeout", R"(Socket Timeout|Wait timeout for key)",
     "Waiting on the rendezvous store timed out: another rank never published its address.",
     "A rank failed before publishing (check all rank logs) or the store timeout is too short."},
    {"monitored_barrier_timeout",
     R"(timed out in monitoredBarrier|failed to pass monitoredBarrier)",
     "monitored_barrier found ranks that did not arrive (the message names them).",
     "Inspect the named ranks; they are hung or dead."},
    {"socket_closed", R"(Socket (unexpectedly )?closed)",
     "A Gloo pair socket was already closed when used (after an earlier failure).",
     "Look for the first error in the log."},
};

// RE2 matches in linear time, so a huge or binary file costs a scan, not a
// backtracking blow-up; long lines are still cut, as no message is that long.
constexpr size_t kMaxLineBytes = 8192;
constexpr size_t kExampleBytes = 300;

const std::vector<std::unique_ptr<RE2>>& CompiledSignatures() {
  static const auto* compiled = [] {
    RE2::Options options;
    options.set_case_sensitive(false);
    options.set_log_errors(false);
    options.set_encoding(RE2::Options::EncodingLatin1);  // logs may hold any bytes
    auto* v = new std::vector<std::unique_ptr<RE2>>;
    for (const auto& s : kSignatures) v->push_back(std::make_unique<RE2>(s.regex, options));
    return v;
  }();
  return *compiled;
}

std::string Printable(absl::string_view s) {
  std::string out;
  for (char c : s.substr(0, kExampleBytes)) {
    unsigned char u = static_cast<unsigned char>(c);
    out.push_back((u < 0x20 && u != '\t') || u == 0x7f ? '?' : c);
  }
  return out;
}

}  // namespace

absl::Span<const LogSignature> LogSignatures() { return kSignatures; }

bool SignatureCompiles(size_t index) { return CompiledSignatures().at(index)->ok(); }

LogExplanation ExplainLog(std::istream& in, absl::string_view source) {
  LogExplanation e;
  e.source = std::string(source);
  const auto& regexes = CompiledSignatures();
  std::vector<SignatureHit> by_sig(regexes.size());
  std::string line;
  while (std::getline(in, line)) {
    ++e.lines;
    if (line.find('\0') != std::string::npos) e.binary = true;
    if (line.size() > kMaxLineBytes) line.resize(kMaxLineBytes);
    absl::string_view view = absl::StripTrailingAsciiWhitespace(line);
    for (size_t i = 0; i < regexes.size(); ++i) {
      if (!RE2::PartialMatch(re2::StringPiece(view.data(), view.size()), *regexes[i])) continue;
      SignatureHit& h = by_sig[i];
      if (h.count++ == 0) {
        h.first_line = e.lines;
        h.example = Printable(absl::StripLeadingAsciiWhitespace(view));
      }
      h.last_line = e.lines;
      break;
    }
  }
  for (size_t i = 0; i < by_sig.size(); ++i) {
    if (by_sig[i].count == 0) continue;
    by_sig[i].id = kSignatures[i].id;
    by_sig[i].signature = &kSignatures[i];
    e.hits.push_back(std::move(by_sig[i]));
  }
  std::sort(e.hits.begin(), e.hits.end(), [](const SignatureHit& a, const SignatureHit& b) {
    return a.first_line < b.first_line;
  });
  return e;
}

std::string RenderExplanationText(const LogExplanation& e) {
  std::string out;
  if (e.hits.empty()) {
    absl::StrAppend(&out, e.source, ": no known signatures in ", e.lines, " lines",
                    e.binary ? " (input looks binary)" : "", "\n");
    return out;
  }
  absl::StrAppend(&out, e.source, ": ", e.hits.size(), " known signature",
                  e.hits.size() == 1 ? "" : "s", " in ", e.lines, " lines\n\n");
  size_t width = 9;
  for (const auto& h : e.hits) width = std::max(width, h.id.size());
  absl::StrAppendFormat(&out, "%-*s %6s %7s %7s\n", static_cast<int>(width), "SIGNATURE", "COUNT",
                        "FIRST", "LAST");
  for (const auto& h : e.hits) {
    absl::StrAppendFormat(&out, "%-*s %6d %7d %7d\n", static_cast<int>(width), h.id, h.count,
                          h.first_line, h.last_line);
  }
  for (const auto& h : e.hits) {
    absl::StrAppend(&out, "\n", h.id, " (line ", h.first_line, "): ", h.example, "\n",
                    "  cause: ", h.signature->cause, "\n", "  fix:   ", h.signature->fix, "\n");
  }
  return out;
}

nlohmann::json ExplanationToJson(const LogExplanation& e) {
  nlohmann::json j;
  j["schema"] = "gloowatch.explain_log.v1";
  j["source"] = e.source;
  j["lines"] = e.lines;
  j["binary"] = e.binary;
  j["signatures"] = nlohmann::json::array();
  for (const auto& h : e.hits) {
    j["signatures"].push_back({{"id", h.id},
                               {"count", h.count},
                               {"first_line", h.first_line},
                               {"last_line", h.last_line},
                               {"example", h.example},
                               {"cause", h.signature->cause},
                               {"fix", h.signature->fix}});
  }
  return j;
}

}  // namespace gloowatch::client
