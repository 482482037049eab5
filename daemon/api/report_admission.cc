#include "daemon/api/report_admission.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace gloowatch {
namespace {

// One spelling per address: IPv4-mapped IPv6 as IPv4, no zone, lower case.
std::optional<std::string> Canonical(std::string address) {
  if (size_t zone = address.find('%'); zone != std::string::npos) address.resize(zone);
  in_addr v4;
  if (inet_pton(AF_INET, address.c_str(), &v4) == 1) {
    char buf[INET_ADDRSTRLEN];
    return std::string(inet_ntop(AF_INET, &v4, buf, sizeof(buf)));
  }
  in6_addr v6;
  if (inet_pton(AF_INET6, address.c_str(), &v6) != 1) return std::nullopt;
  if (IN6_IS_ADDR_V4MAPPED(&v6)) {
    char buf[INET_ADDRSTRLEN];
    return std::string(inet_ntop(AF_INET, &v6.s6_addr[12], buf, sizeof(buf)));
  }
  char buf[INET6_ADDRSTRLEN];
  return std::string(inet_ntop(AF_INET6, &v6, buf, sizeof(buf)));
}

bool IsLoopbackAddress(const std::string& canonical) {
  return absl::StartsWith(canonical, "127.") || canonical == "::1";
}

}  // namespace

ReportAdmission::ReportAdmission(const SystemView* system, const Clock* clock, bool mutual_tls)
    : system_(system), clock_(clock), mutual_tls_(mutual_tls) {}

std::optional<std::string> ReportAdmission::PeerAddress(const std::string& peer) {
  if (absl::StartsWith(peer, "unix:") || absl::StartsWith(peer, "unix-abstract:")) return "unix";
  std::string rest;
  if (absl::StartsWith(peer, "ipv4:")) {
    rest = peer.substr(5);
    const size_t colon = rest.rfind(':');
    if (colon == std::string::npos) return std::nullopt;
    return Canonical(rest.substr(0, colon));
  }
  if (!absl::StartsWith(peer, "ipv6:")) return std::nullopt;
  rest = absl::StrReplaceAll(peer.substr(5), {{"%5B", "["}, {"%5D", "]"}, {"%25", "%"}});
  const size_t close = rest.find(']');
  if (rest.empty() || rest[0] != '[' || close == std::string::npos) return std::nullopt;
  return Canonical(rest.substr(1, close - 1));
}

bool ReportAdmission::IsOwnAddress(const std::string& address) {
  const absl::Time now = clock_->Now();
  if (now - read_at_ >= kRefresh) {
    read_at_ = now;
    if (absl::StatusOr<std::vector<InterfaceInfo>> interfaces = system_->ListInterfaces();
        interfaces.ok()) {
      own_.clear();
      for (const InterfaceInfo& i : *interfaces) {
        for (const std::string& a : i.addresses) {
          if (std::optional<std::string> c = Canonical(a)) own_.push_back(*std::move(c));
        }
      }
    }
  }
  return std::find(own_.begin(), own_.end(), address) != own_.end();
}

absl::StatusOr<std::string> ReportAdmission::Admit(const std::string& peer) {
  const std::optional<std::string> address = PeerAddress(peer);
  if (address && (*address == "unix" || IsLoopbackAddress(*address))) return std::string();
  if (address) {
    absl::MutexLock lock(&mu_);
    if (IsOwnAddress(*address)) return std::string();
  }
  // With TLS gRPC let only certified callers in: remote, with a fair share.
  if (mutual_tls_) return address.value_or(peer);
  return absl::PermissionDeniedError(
      absl::StrCat("training reports from ", peer,
                   " refused: without mutual TLS only processes on this host may report "
                   "(connect over loopback or this host's own address, or set tls: in the "
                   "daemon's config)"));
}

}  // namespace gloowatch
