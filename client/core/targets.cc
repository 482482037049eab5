#include "client/core/targets.h"

#include <set>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/config.h"
#include "yaml-cpp/yaml.h"

namespace gloowatch::client {
namespace {

absl::StatusOr<uint16_t> ParsePort(absl::string_view text, absl::string_view what) {
  uint32_t port = 0;
  if (!absl::SimpleAtoi(text, &port) || port < 1 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": bad port '", text, "' (1..65535)"));
  }
  return static_cast<uint16_t>(port);
}

absl::StatusOr<YAML::Node> LoadYaml(const std::string& path) {
  try {
    return YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    return absl::NotFoundError(absl::StrCat("cannot open '", path, "'"));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", e.what()));
  }
}

absl::StatusOr<DaemonTarget> TargetFrom(const YAML::Node& n, const std::string& where,
                                        const char* address_key) {
  if (!n.IsMap() || !n[address_key] || !n[address_key].IsScalar()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": needs '", address_key, ": host:port'"));
  }
  auto ep = ParseEndpoint(n[address_key].as<std::string>());
  if (!ep.ok()) return absl::InvalidArgumentError(absl::StrCat(where, ": ", ep.status().message()));
  DaemonTarget t{n["name"] && n["name"].IsScalar() ? n["name"].as<std::string>() : ep->ToString(),
                 *ep};
  return t;
}

}  // namespace

std::string Endpoint::ToString() const {
  if (port == 0) return host;  // an address without a port (e.g. a Prometheus instance label)
  return host.find(':') != std::string::npos ? absl::StrCat("[", host, "]:", port)
                                             : absl::StrCat(host, ":", port);
}

absl::StatusOr<Endpoint> ParseEndpoint(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  Endpoint ep;
  absl::string_view port;
  if (absl::ConsumePrefix(&text, "[")) {
    size_t close = text.find("]:");
    if (close == absl::string_view::npos || close == 0) {
      return absl::InvalidArgumentError(absl::StrCat("bad address '[", text, "' (want [v6]:port)"));
    }
    ep.host = std::string(text.substr(0, close));
    port = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == absl::string_view::npos || colon == 0 ||
        text.substr(0, colon).find(':') != absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad address '", text, "' (want host:port or [v6]:port)"));
    }
    ep.host = std::string(text.substr(0, colon));
    port = text.substr(colon + 1);
  }
  auto p = ParsePort(port, absl::StrCat("address '", text, "'"));
  if (!p.ok()) return p.status();
  ep.port = *p;
  return ep;
}

absl::StatusOr<std::vector<DaemonTarget>> ParseDaemonList(absl::string_view text) {
  std::vector<DaemonTarget> out;
  std::set<std::string> seen;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    auto ep = ParseEndpoint(item);
    if (!ep.ok())
      return absl::InvalidArgumentError(absl::StrCat("--daemons: ", ep.status().message()));
    if (!seen.insert(ep->ToString()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("--daemons: '", ep->ToString(), "' given twice"));
    }
    out.push_back({ep->ToString(), *ep});
  }
  if (out.empty()) return absl::InvalidArgumentError("--daemons: no address given");
  return out;
}

absl::StatusOr<std::vector<DaemonTarget>> LoadDaemonConfig(const std::string& path,
                                                           const std::string& this_host) {
  // A fleet file has no `node:`; which host it is read on decides.
  auto root = LoadYaml(path);
  if (absl::IsNotFound(root.status())) return root.status();
  ConfigOptions options;
  bool listed = true;
  if (root.ok() && root->IsMap() && !(*root)["node"] && !this_host.empty()) {
    options.node = this_host;
    listed = false;
    const YAML::Node peers = (*root)["peers"];
    for (size_t i = 0; peers && peers.IsSequence() && i < peers.size(); ++i) {
      const YAML::Node name = peers[i].IsMap() ? peers[i]["name"] : YAML::Node();
      listed |= name && name.IsScalar() && name.Scalar() == this_host;
    }
  }
  // The daemon's own reader: a file the daemon would refuse is refused here
  // too, with the same file:line:column message.
  absl::StatusOr<Config> config = LoadConfigFile(path, options);
  if (!config.ok()) {
    if (absl::IsNotFound(config.status())) return config.status();
    return absl::InvalidArgumentError(
        options.node.empty() ? std::string(config.status().message())
                             : absl::StrCat(config.status().message(), " (read as this host's, '",
                                            this_host, "': the file has no node:)"));
  }
  std::vector<DaemonTarget> out;
  if (listed) {
    // A wildcard listen address is reachable on loopback from this host.
    Endpoint self{config->grpc_listen.host, config->grpc_listen.port};
    if (self.host == "0.0.0.0") self.host = "127.0.0.1";
    if (self.host == "::") self.host = "::1";
    out.push_back({config->node, self});
  }
  for (const PeerConfig& peer : config->peers) {
    out.push_back({peer.name, {peer.grpc.host, peer.grpc.port}});
  }
  return out;
}

absl::StatusOr<std::vector<DaemonTarget>> LoadClusterFile(const std::string& path) {
  auto root = LoadYaml(path);
  if (!root.ok()) return root.status();
  const YAML::Node nodes = root->IsMap() ? (*root)["nodes"] : YAML::Node();
  if (!nodes || !nodes.IsSequence() || nodes.size() == 0) {
    return absl::InvalidArgumentError(path + ": needs a non-empty 'nodes:' list");
  }
  std::vector<DaemonTarget> out;
  for (size_t i = 0; i < nodes.size(); ++i) {
    auto t = TargetFrom(nodes[i], absl::StrCat(path, ": nodes[", i, "]"), "grpc");
    if (!t.ok()) return t.status();
    out.push_back(*t);
  }
  return out;
}

absl::StatusOr<std::pair<uint16_t, uint16_t>> ParsePortRange(absl::string_view text) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, '-');
  if (parts.size() > 2)
    return absl::InvalidArgumentError(absl::StrCat("--ports: bad range '", text, "'"));
  auto lo = ParsePort(parts[0], "--ports");
  if (!lo.ok()) return lo.status();
  auto hi = parts.size() == 2 ? ParsePort(parts[1], "--ports") : lo;
  if (!hi.ok()) return hi.status();
  if (*hi < *lo)
    return absl::InvalidArgumentError(absl::StrCat("--ports: '", text, "' is reversed"));
  return std::make_pair(*lo, *hi);
}

}  // namespace gloowatch::client
