// Test support: simulated hosts in network namespaces, each running a real
// gloowatchd, wired to one bridge in a "switch" namespace, for fault tests
// (crash, partition, slow link, clock skew, link flap, bad input).
//
//   gw<pid>c<k>-sw   bridge br0, one veth end per host (h1, h2, ...)
//   gw<pid>c<k>-h1   eth0 (10.X.Y.1/24) + lo, gloowatchd on 10.X.Y.1:7601/:9601
//   gw<pid>c<k>-h2   ...
//
// The subnet is chosen per run and exists only inside these namespaces;
// nothing in the root namespace (interfaces, routes, nft) is touched. The
// namespaces are deleted by the destructor, on SIGINT/SIGTERM/SIGABRT/
// SIGSEGV (signal handlers) and at exit; namespaces left by a run that was
// SIGKILLed are deleted by the next run (their pid is dead).
//
// With `racks` > 1 the hosts are split into racks, each with its own bridge
// namespace and /24, joined through a router namespace (IP forwarding on):
//
//   gw<pid>c<k>-rt    r1 (10.A.B.254/24) ... rN, one veth per rack's bridge
//   gw<pid>c<k>-sw1   bridge br0: h1..hm and `uplink`, a veth to the router
//   gw<pid>c<k>-sw2   bridge br0: hm+1..h2m and its uplink
//
// and every config carries `group: rack<r>` for the node and its peers.
//
// With `ecmp` (racks > 1) a second router joins the racks the same way
// (gw<pid>c<k>-rt2, 10.A.B.253 in each rack, its veths e1..eN, `uplink2` in
// each bridge), and every host routes off its rack over both routers, one
// multipath route hashed on the 4-tuple (fib_multipath_hash_policy=1): each
// TCP connection takes one of the two paths, as ECMP in a fabric does.
//
// The test process itself stays in the root namespace; it reaches a host
// through sockets created by a short-lived thread that setns()es into the
// host's namespace (a socket keeps the namespace it was created in).
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/gloowatch.grpc.pb.h"
#include "tests/support/daemon_process.h"

namespace gloowatch::testing {

// Why netns tests cannot run here ("needs root", ...), or "" when they can.
std::string NetnsUnavailableReason();

struct CommandResult {
  int exit_code = -1;  // -signal when killed; -1000 when it timed out
  bool timed_out = false;
  std::string output;  // stdout + stderr
  bool ok() const { return exit_code == 0; }
};

// Runs argv (in the root namespace; use `ip -n` / `ip netns exec` to enter
// one), killing it after `timeout`.
CommandResult RunCommand(const std::vector<std::string>& argv,
                         absl::Duration timeout = absl::Seconds(10));

// Runs `fn` on a thread that has entered the named network namespace
// (/run/netns/<ns>); the caller's thread is not affected.
absl::Status RunInNetns(const std::string& ns, const std::function<void()>& fn);

// A TCP socket created in namespace `ns` and connected to ip:port within
// `timeout`. The caller owns the (blocking, CLOEXEC) fd.
absl::StatusOr<int> ConnectInNetns(const std::string& ns, const std::string& ip, int port,
                                   absl::Duration timeout = absl::Seconds(2));

// Status.GetStatus over a socket created in `ns`.
absl::StatusOr<v1::NodeStatus> GetStatusInNetns(const std::string& ns, const std::string& ip,
                                                int port,
                                                absl::Duration deadline = absl::Seconds(2));

// HTTP/1.0 GET over a socket created in `ns`; the body.
absl::StatusOr<std::string> HttpGetInNetns(const std::string& ns, const std::string& ip, int port,
                                           const std::string& path,
                                           absl::Duration timeout = absl::Seconds(5));

// Bytes counted on `iface` in namespace `ns` (/proc/net/dev).
struct InterfaceCounters {
  uint64_t rx_bytes = 0;
  uint64_t tx_bytes = 0;
};
absl::StatusOr<InterfaceCounters> ReadInterfaceCounters(const std::string& ns,
                                                        const std::string& iface);

// TCP ports in LISTEN state in namespace `ns` (/proc/net/tcp{,6}).
absl::StatusOr<std::vector<int>> ListeningPorts(const std::string& ns);

// Deletes namespaces gw<pid>c<k>-* whose <pid> is dead (and kills what
// still runs inside them). Called by NetnsCluster::Setup.
void DeleteStaleNamespaces();

struct NetnsClusterOptions {
  int hosts = 3;
  // Racks of hosts / racks each (hosts must divide evenly); see above.
  int racks = 1;
  // A second router and multipath routes between the racks (see above).
  bool ecmp = false;
  // The whole `gloo:` block of every config.
  std::string gloo_yaml = "gloo:\n  interface: eth0\n  timeout: 2s\n";
  // Everything else but node/listen/peers: schedules, probe sizes.
  std::string extra_yaml =
      "schedule:\n  latency_interval: 500ms\n  skew_interval: 1s\n  bandwidth_interval: 30s\n"
      "  bandwidth_budget: 1\n"
      "probe:\n  bandwidth_bytes: 16MiB\n  bandwidth_message_bytes: 1MiB\n"
      "  backoff_initial: 200ms\n  backoff_max: 1s\n";
};

struct DaemonOptions {
  // Set in the daemon's environment only (via `env` after `ip netns exec`),
  // e.g. LD_PRELOAD/FAKETIME or GLOO_SOCKET_IFNAME.
  std::map<std::string, std::string> env;
  // Replaces the options' gloo block for this daemon when set.
  std::optional<std::string> gloo_yaml;
};

enum class ShapeSide {
  kHost,    // the host's eth0: what the host sends
  kSwitch,  // the switch-side veth: what the host receives
  kBoth,
};

class NetnsCluster {
 public:
  static constexpr int kGrpcPort = 7601;
  static constexpr int kMetricsPort = 9601;

  explicit NetnsCluster(NetnsClusterOptions options = {});
  ~NetnsCluster();
  NetnsCluster(const NetnsCluster&) = delete;
  NetnsCluster& operator=(const NetnsCluster&) = delete;

  // Creates the namespaces, bridge and links. No daemon runs yet.
  absl::Status Setup();

  int size() const { return options_.hosts; }
  const std::string& ns(int host) const { return hosts_[host].ns; }
  const std::string& switch_ns() const { return switch_ns_; }  // rack 0's
  int racks() const { return options_.racks; }
  int rack_of(int host) const { return hosts_[host].rack; }
  std::string group_of(int host) const;  // "rack<r+1>", "" with one rack
  // The router namespace (racks > 1) and its veth towards rack r's bridge.
  const std::string& router_ns() const { return router_ns_; }
  const std::string& second_router_ns() const { return second_router_ns_; }  // ecmp only
  std::string router_port(int rack) const;
  const std::string& ip(int host) const { return hosts_[host].ip; }
  const std::string& name(int host) const { return hosts_[host].name; }  // node name h1..
  std::string switch_port(int host) const;  // veth end in the switch namespace
  std::string grpc(int host) const;         // ip:7601
  std::string subnet() const;               // 10.X.Y.0/24
  const TempDir& dir() const { return dir_; }
  std::vector<std::string> PeersOf(int host) const;  // node names

  // The config host `host` runs with.
  std::string Config(int host, const std::optional<std::string>& gloo_yaml = std::nullopt) const;

  // gloowatchd in the host's namespace: `ip netns exec <ns> [env K=V..]
  // gloowatchd --config <file>`; log in dir()/<name>.log (appended across
  // restarts).
  void Start(int host, const DaemonOptions& options = {});
  void StartAll();
  // Signals the daemon and waits (at most 10 s) for it to exit.
  void Kill(int host, int sig);
  Process* daemon(int host) { return hosts_[host].daemon.get(); }
  std::string DaemonLog(int host) const;
  std::string AllLogs() const;  // every daemon's log, for failure messages

  // Runs argv inside the host's namespace (`ip netns exec`), time-bounded.
  CommandResult Exec(int host, const std::vector<std::string>& argv,
                     absl::Duration timeout = absl::Seconds(10)) const;
  // Loads an nft script (`nft -f`) in the host's namespace.
  absl::Status Nft(int host, const std::string& script) const;
  // The same in the router namespace (racks > 1), and in the bridge
  // namespace of the host's rack (bridge family: its ports are switch_port()).
  absl::Status RouterNft(const std::string& script) const;
  absl::Status SecondRouterNft(const std::string& script) const;  // ecmp only
  absl::Status SwitchNft(int host, const std::string& script) const;
  // Deletes the gwfault tables (any family) of the router and of every switch.
  absl::Status ClearNetworkNft() const;
  // Drops everything host `a` receives from `b` and `b` from `a` (input
  // hooks of both, table inet gwfault), so neither side gets an error at once.
  absl::Status Partition(int a, int b) const;
  // Deletes every table named gwfault (any family) in the host's namespace.
  absl::Status ClearNft(int host) const;
  // tbf at `rate` (tc syntax, "200mbit"); tbf shapes egress only.
  absl::Status Shape(int host, const std::string& rate, ShapeSide side) const;
  absl::Status Unshape(int host) const;
  // tbf at `rate` on a rack's uplink (racks > 1), both ways: the router's
  // port towards the rack and the switch's port towards the router.
  absl::Status ShapeUplink(int rack, const std::string& rate) const;
  // ip link set eth0 up/down in the host's namespace.
  absl::Status SetLink(int host, bool up) const;
  // Undoes every fault the helpers above inject, everywhere: the gwfault nft
  // tables of every host, switch and the router, every tbf (eth0s, switch
  // ports, uplinks), every eth0 down. The namespaces and daemons stay: what a
  // bed shared by several scenarios needs between them.
  absl::Status ClearFaults() const;

  // The host's daemon, reached from inside its namespace.
  absl::StatusOr<v1::NodeStatus> Status(int host, absl::Duration deadline = absl::Seconds(2)) const;
  absl::StatusOr<std::map<std::string, double>> Metrics(int host) const;

  // Every peer of `host` is UP (and, with `measured`, has latency,
  // bandwidth both ways and a clock offset).
  bool AllUp(int host, bool measured) const;
  // Waits until AllUp holds for every host whose daemon runs; the error
  // names what was missing.
  absl::Status WaitAllUp(absl::Duration timeout, bool measured) const;

  // Deletes everything; idempotent. The destructor calls it.
  void Teardown();

 private:
  struct Host {
    std::string name;
    std::string ns;
    std::string ip;
    int rack = 0;
    std::unique_ptr<Process> daemon;
  };
  absl::Status Ip(const std::vector<std::string>& args) const;
  // A router joining every rack: `port_prefix` names its veths, `octet`
  // its address in each rack, `uplink` the veth's end in the bridge.
  absl::Status SetupRouter(const std::string& ns, const std::string& port_prefix, int octet,
                           const std::string& uplink);
  const std::string& SwitchOf(int host) const { return rack_switch_ns_[hosts_[host].rack]; }
  absl::Status NftIn(const std::string& ns, const std::string& script) const;
  absl::Status ClearNftIn(const std::string& ns) const;

  NetnsClusterOptions options_;
  TempDir dir_;
  std::string prefix_;                       // gw<pid>c<k>
  std::string switch_ns_;                    // <prefix>-sw
  std::string net_;                          // "10.X.Y." (rack 0)
  std::vector<std::string> rack_nets_;       // per rack, "10.X.Y."
  std::vector<std::string> rack_switch_ns_;  // per rack; [0] == switch_ns_
  std::string router_ns_;                    // <prefix>-rt, racks > 1
  std::string second_router_ns_;             // <prefix>-rt2, ecmp
  std::vector<Host> hosts_;
  bool torn_down_ = false;
};

}  // namespace gloowatch::testing
