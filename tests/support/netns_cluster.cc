#include "tests/support/netns_cluster.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "grpcpp/create_channel_posix.h"
#include "grpcpp/grpcpp.h"
#include "tests/support/metrics_text.h"

namespace gloowatch::testing {
namespace {

constexpr char kNetnsDir[] = "/run/netns";

// --- emergency cleanup --------------------------------------------------------
// What a signal handler may need to undo, in fixed storage so the handler
// only reads memory and makes async-signal-safe calls (kill, umount2,
// unlink). Deleting the bind mount under /run/netns and killing the daemons
// releases the namespace; the kernel then deletes it and its veths.

constexpr int kMaxNamespaces = 64;
constexpr int kMaxPids = 64;
constexpr size_t kMaxPath = 128;

struct Registry {
  std::atomic<bool> ns_used[kMaxNamespaces];
  char ns_path[kMaxNamespaces][kMaxPath];
  std::atomic<pid_t> pids[kMaxPids];
};
Registry g_registry;  // zero-initialized (static storage)
std::mutex g_registry_mu;

void RegisterNamespace(const std::string& name) {
  const std::string path = absl::StrCat(kNetnsDir, "/", name);
  if (path.size() >= kMaxPath) return;
  std::lock_guard<std::mutex> lock(g_registry_mu);
  for (int i = 0; i < kMaxNamespaces; ++i) {
    if (!g_registry.ns_used[i].load()) {
      std::memcpy(g_registry.ns_path[i], path.c_str(), path.size() + 1);
      g_registry.ns_used[i].store(true);
      return;
    }
  }
}

void UnregisterNamespace(const std::string& name) {
  const std::string path = absl::StrCat(kNetnsDir, "/", name);
  std::lock_guard<std::mutex> lock(g_registry_mu);
  for (int i = 0; i < kMaxNamespaces; ++i) {
    if (g_registry.ns_used[i].load() && path == g_registry.ns_path[i]) {
      g_registry.ns_used[i].store(false);
    }
  }
}

void RegisterPid(pid_t pid) {
  if (pid <= 0) return;
  for (int i = 0; i < kMaxPids; ++i) {
    pid_t expected = 0;
    if (g_registry.pids[i].compare_exchange_strong(expected, pid)) return;
  }
}

void UnregisterPid(pid_t pid) {
  if (pid <= 0) return;
  for (int i = 0; i < kMaxPids; ++i) {
    pid_t expected = pid;
    g_registry.pids[i].compare_exchange_strong(expected, 0);
  }
}

// Async-signal-safe.
void EmergencyCleanup() {
  for (int i = 0; i < kMaxPids; ++i) {
    const pid_t pid = g_registry.pids[i].exchange(0);
    if (pid > 0) kill(pid, SIGKILL);
  }
  for (int i = 0; i < kMaxNamespaces; ++i) {
    if (g_registry.ns_used[i].exchange(false)) {
      umount2(g_registry.ns_path[i], MNT_DETACH);
      unlink(g_registry.ns_path[i]);
    }
  }
}

constexpr int kCleanupSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT, SIGSEGV, SIGBUS};
struct sigaction g_previous[64];

void OnFatalSignal(int sig) {
  EmergencyCleanup();
  sigaction(sig, &g_previous[sig], nullptr);
  raise(sig);
}

void InstallCleanupHandlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int sig : kCleanupSignals) {
      struct sigaction sa {};
      sa.sa_handler = OnFatalSignal;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESETHAND;
      sigaction(sig, &sa, &g_previous[sig]);
    }
    std::atexit(EmergencyCleanup);
  });
}

// --- helpers -----------------------------------------------------------------

std::string ReadFileText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool PidAlive(pid_t pid) { return kill(pid, 0) == 0 || errno != ESRCH; }

// "gw<pid>c<k>-..." -> pid, or 0.
pid_t OwnerOf(const std::string& name) {
  if (!absl::StartsWith(name, "gw")) return 0;
  size_t i = 2;
  while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) ++i;
  if (i == 2 || i >= name.size() || name[i] != 'c') return 0;
  const size_t dash = name.find('-', i);
  if (dash == std::string::npos) return 0;
  const std::string suffix = name.substr(dash + 1);
  if (!absl::StartsWith(suffix, "sw") && !absl::StartsWith(suffix, "h") &&
      !absl::StartsWith(suffix, "rt")) {
    return 0;
  }
  int pid = 0;
  if (!absl::SimpleAtoi(name.substr(2, i - 2), &pid)) return 0;
  return pid;
}

void KillNamespacePids(const std::string& name) {
  CommandResult pids = RunCommand({"ip", "netns", "pids", name}, absl::Seconds(5));
  for (absl::string_view line : absl::StrSplit(pids.output, '\n', absl::SkipWhitespace())) {
    int pid = 0;
    if (absl::SimpleAtoi(line, &pid) && pid > 1 && pid != getpid()) kill(pid, SIGKILL);
  }
}

absl::Status CommandStatus(const std::vector<std::string>& argv, const CommandResult& r) {
  if (r.ok()) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("`", absl::StrJoin(argv, " "), "` ",
                                          r.timed_out ? "timed out" : "failed", " (exit ",
                                          r.exit_code, "): ", r.output));
}

absl::Status Tbf(const std::string& ns, const std::string& dev, const std::string& rate) {
  const std::vector<std::string> argv = {"ip",      "netns", "exec",  ns,        "tc",  "qdisc",
                                         "replace", "dev",   dev,     "root",    "tbf", "rate",
                                         rate,      "burst", "256kb", "latency", "50ms"};
  return CommandStatus(argv, RunCommand(argv));
}

}  // namespace

// --- free functions ----------------------------------------------------------

std::string NetnsUnavailableReason() {
  if (geteuid() != 0) return "netns tests need root (they create network namespaces)";
  CommandResult ip = RunCommand({"ip", "netns", "list"}, absl::Seconds(5));
  if (!ip.ok()) return absl::StrCat("`ip netns list` failed: ", ip.output);
  // May this process create network namespaces (no seccomp/LSM in the way)?
  const pid_t child = fork();
  if (child == 0) _exit(unshare(CLONE_NEWNET) == 0 ? 0 : 1);
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    return "cannot create network namespaces here (unshare(CLONE_NEWNET) failed)";
  }
  if (!RunCommand({"tc", "-V"}, absl::Seconds(5)).ok()) return "`tc` is not available";
  if (!RunCommand({"nft", "--version"}, absl::Seconds(5)).ok()) return "`nft` is not available";
  return "";
}

CommandResult RunCommand(const std::vector<std::string>& argv, absl::Duration timeout) {
  CommandResult result;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    result.output = absl::StrCat("pipe: ", strerror(errno));
    return result;
  }
  std::vector<std::string> args = argv;
  std::vector<char*> cargs;
  for (auto& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    const int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    execvp(cargs[0], cargs.data());
    _exit(127);
  }
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    result.output = absl::StrCat("fork: ", strerror(errno));
    return result;
  }
  const absl::Time deadline = absl::Now() + timeout;
  char buf[4096];
  while (true) {
    const int64_t left = absl::ToInt64Milliseconds(deadline - absl::Now());
    if (left <= 0) break;
    pollfd p{fds[0], POLLIN, 0};
    const int r = poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (r < 0 && errno != EINTR) break;
    if (r <= 0) continue;
    const ssize_t n = read(fds[0], buf, sizeof(buf));
    if (n <= 0) break;  // EOF: the command (and anything it spawned) closed it
    result.output.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  while (true) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (absl::Now() >= deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      result.timed_out = true;
      result.exit_code = -1000;
      return result;
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  return result;
}

absl::Status RunInNetns(const std::string& ns, const std::function<void()>& fn) {
  absl::Status result;
  std::thread thread([&] {
    const int target = open(absl::StrCat(kNetnsDir, "/", ns).c_str(), O_RDONLY | O_CLOEXEC);
    if (target < 0) {
      result = absl::NotFoundError(absl::StrCat("namespace ", ns, ": ", strerror(errno)));
      return;
    }
    const int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (setns(target, CLONE_NEWNET) != 0) {
      result = absl::InternalError(absl::StrCat("setns ", ns, ": ", strerror(errno)));
      close(target);
      if (self >= 0) close(self);
      return;
    }
    close(target);
    fn();
    // The thread ends right after, but leave it as it was anyway.
    if (self >= 0) {
      setns(self, CLONE_NEWNET);
      close(self);
    }
  });
  thread.join();
  return result;
}

absl::StatusOr<int> ConnectInNetns(const std::string& ns, const std::string& ip, int port,
                                   absl::Duration timeout) {
  int fd = -1;
  int err = 0;
  absl::Status in_ns = RunInNetns(ns, [&] {
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    err = errno;
  });
  if (!in_ns.ok()) return in_ns;
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", strerror(err)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, ip.c_str(), &addr.sin_addr) != 1) {
    close(fd);
    return absl::InvalidArgumentError(absl::StrCat("bad IPv4 address ", ip));
  }
  const std::string where = absl::StrCat(ip, ":", port, " in ", ns);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    if (errno != EINPROGRESS) {
      err = errno;
      close(fd);
      return absl::UnavailableError(absl::StrCat("connect ", where, ": ", strerror(err)));
    }
    pollfd p{fd, POLLOUT, 0};
    const int r = poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(timeout)));
    socklen_t len = sizeof(err);
    if (r <= 0) {
      close(fd);
      return absl::DeadlineExceededError(absl::StrCat("connect ", where, ": timed out"));
    }
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      close(fd);
      return absl::UnavailableError(absl::StrCat("connect ", where, ": ", strerror(err)));
    }
  }
  const int flags = fcntl(fd, F_GETFL, 0);
  fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

absl::StatusOr<v1::NodeStatus> GetStatusInNetns(const std::string& ns, const std::string& ip,
                                                int port, absl::Duration deadline) {
  absl::StatusOr<int> fd = ConnectInNetns(ns, ip, port, deadline);
  if (!fd.ok()) return fd.status();
  // The channel owns the fd; it never reconnects, which is what we want.
  auto channel = grpc::CreateInsecureChannelFromFd(absl::StrCat(ip, ":", port), *fd);
  auto stub = v1::Status::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
  v1::NodeStatus status;
  grpc::Status s = stub->GetStatus(&context, v1::GetStatusRequest(), &status);
  if (!s.ok()) {
    return absl::UnavailableError(
        absl::StrCat("GetStatus ", ip, ":", port, " in ", ns, ": ", s.error_message()));
  }
  return status;
}

absl::StatusOr<std::string> HttpGetInNetns(const std::string& ns, const std::string& ip, int port,
                                           const std::string& path, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  absl::StatusOr<int> fd = ConnectInNetns(ns, ip, port, timeout);
  if (!fd.ok()) return fd.status();
  const std::string request =
      absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: ", ip, "\r\nConnection: close\r\n\r\n");
  if (send(*fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    close(*fd);
    return absl::UnavailableError("HTTP request not sent");
  }
  std::string response;
  char buf[65536];
  while (true) {
    const int64_t left = absl::ToInt64Milliseconds(deadline - absl::Now());
    if (left <= 0) {
      close(*fd);
      return absl::DeadlineExceededError(absl::StrCat("GET ", path, " on ", ip, ":", port));
    }
    pollfd p{*fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    const ssize_t n = read(*fd, buf, sizeof(buf));
    if (n <= 0) break;
    response.append(buf, static_cast<size_t>(n));
  }
  close(*fd);
  const size_t body = response.find("\r\n\r\n");
  if (body == std::string::npos) return absl::DataLossError("no HTTP body");
  if (!absl::StartsWith(response, "HTTP/1.") || response.find(" 200 ") > 12) {
    return absl::UnavailableError(
        absl::StrCat("GET ", path, ": ", response.substr(0, response.find("\r\n"))));
  }
  return response.substr(body + 4);
}

absl::StatusOr<InterfaceCounters> ReadInterfaceCounters(const std::string& ns,
                                                        const std::string& iface) {
  std::string text;
  absl::Status s = RunInNetns(ns, [&] { text = ReadFileText("/proc/thread-self/net/dev"); });
  if (!s.ok()) return s;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos) continue;
    if (absl::StripAsciiWhitespace(line.substr(0, colon)) != iface) continue;
    std::vector<absl::string_view> fields =
        absl::StrSplit(line.substr(colon + 1), ' ', absl::SkipWhitespace());
    InterfaceCounters c;
    if (fields.size() < 16 || !absl::SimpleAtoi(fields[0], &c.rx_bytes) ||
        !absl::SimpleAtoi(fields[8], &c.tx_bytes)) {
      break;
    }
    return c;
  }
  return absl::NotFoundError(absl::StrCat("no ", iface, " in ", ns));
}

absl::StatusOr<std::vector<int>> ListeningPorts(const std::string& ns) {
  std::string text;
  absl::Status s = RunInNetns(ns, [&] {
    text = ReadFileText("/proc/thread-self/net/tcp") + ReadFileText("/proc/thread-self/net/tcp6");
  });
  if (!s.ok()) return s;
  std::vector<int> ports;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipWhitespace());
    // sl local_address rem_address st ...; st 0A = LISTEN
    if (f.size() < 4 || f[3] != "0A") continue;
    const size_t colon = f[1].rfind(':');
    if (colon == absl::string_view::npos) continue;
    int port = 0;
    if (!absl::SimpleHexAtoi(f[1].substr(colon + 1), &port)) continue;
    ports.push_back(port);
  }
  return ports;
}

void DeleteStaleNamespaces() {
  DIR* dir = opendir(kNetnsDir);
  if (dir == nullptr) return;
  std::vector<std::string> stale;
  while (dirent* e = readdir(dir)) {
    const std::string name = e->d_name;
    const pid_t owner = OwnerOf(name);
    if (owner > 0 && owner != getpid() && !PidAlive(owner)) stale.push_back(name);
  }
  closedir(dir);
  for (const std::string& name : stale) {
    KillNamespacePids(name);
    RunCommand({"ip", "netns", "del", name}, absl::Seconds(5));
  }
}

// --- NetnsCluster ------------------------------------------------------------

NetnsCluster::NetnsCluster(NetnsClusterOptions options) : options_(std::move(options)) {
  static std::atomic<int> clusters{0};
  prefix_ = absl::StrCat("gw", getpid(), "c", clusters.fetch_add(1));
  options_.racks = std::max(1, options_.racks);
  if (options_.racks == 1) {
    rack_switch_ns_ = {prefix_ + "-sw"};
  } else {
    for (int r = 0; r < options_.racks; ++r) {
      rack_switch_ns_.push_back(absl::StrCat(prefix_, "-sw", r + 1));
    }
    router_ns_ = prefix_ + "-rt";
    if (options_.ecmp) second_router_ns_ = prefix_ + "-rt2";
  }
  switch_ns_ = rack_switch_ns_[0];
  const int per_rack = std::max(1, options_.hosts / options_.racks);
  for (int i = 0; i < options_.hosts; ++i) {
    Host h;
    h.name = absl::StrCat("h", i + 1);
    h.ns = absl::StrCat(prefix_, "-", h.name);
    h.rack = std::min(i / per_rack, options_.racks - 1);
    hosts_.push_back(std::move(h));
  }
}

NetnsCluster::~NetnsCluster() { Teardown(); }

absl::Status NetnsCluster::Ip(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {"ip"};
  argv.insert(argv.end(), args.begin(), args.end());
  return CommandStatus(argv, RunCommand(argv, absl::Seconds(10)));
}

absl::Status NetnsCluster::Setup() {
  if (hosts_.empty() || hosts_.size() > 200) return absl::InvalidArgumentError("1..200 hosts");
  if (options_.racks > 8 || options_.hosts % options_.racks != 0) {
    return absl::InvalidArgumentError("1..8 racks of equally many hosts");
  }
  DeleteStaleNamespaces();
  InstallCleanupHandlers();

  // A 10.X.Y.0/24 the root namespace does not use (we only read its tables),
  // so nothing can be mistaken for a route out of the machine.
  const std::string root_view = RunCommand({"ip", "-4", "-o", "addr"}).output +
                                RunCommand({"ip", "-4", "route", "show", "table", "all"}).output;
  const unsigned seed =
      static_cast<unsigned>(getpid()) * 7919u + static_cast<unsigned>(prefix_.back());
  for (unsigned attempt = 0; attempt < 256 && rack_nets_.size() < rack_switch_ns_.size();
       ++attempt) {
    const unsigned v = seed + attempt * 104729u;
    const std::string net = absl::StrCat("10.", 64 + (v >> 8) % 128, ".", v % 256, ".");
    if (absl::StrContains(root_view, net) ||
        std::find(rack_nets_.begin(), rack_nets_.end(), net) != rack_nets_.end()) {
      continue;
    }
    rack_nets_.push_back(net);
  }
  if (rack_nets_.size() < rack_switch_ns_.size()) {
    return absl::ResourceExhaustedError("no free 10.x.y.0/24 for every rack");
  }
  net_ = rack_nets_[0];
  const int per_rack = options_.hosts / options_.racks;
  for (int i = 0; i < size(); ++i) {
    hosts_[i].ip = absl::StrCat(rack_nets_[hosts_[i].rack], i % per_rack + 1);
  }

  for (const std::string& sw : rack_switch_ns_) {
    RegisterNamespace(sw);
    if (absl::Status s = Ip({"netns", "add", sw}); !s.ok()) return s;
    for (const auto& args :
         std::vector<std::vector<std::string>>{{"-n", sw, "link", "set", "lo", "up"},
                                               {"-n", sw, "link", "add", "br0", "type", "bridge"},
                                               {"-n", sw, "link", "set", "br0", "up"}}) {
      if (absl::Status s = Ip(args); !s.ok()) return s;
    }
  }
  for (int i = 0; i < size(); ++i) {
    const Host& h = hosts_[i];
    RegisterNamespace(h.ns);
    if (absl::Status s = Ip({"netns", "add", h.ns}); !s.ok()) return s;
    const std::string port = switch_port(i);
    const std::string& sw = SwitchOf(i);
    // Created inside the switch namespace with its peer moved straight into
    // the host's: no interface ever appears in the root namespace.
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"-n", sw, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", h.ns},
             {"-n", sw, "link", "set", port, "master", "br0"},
             {"-n", sw, "link", "set", port, "up"},
             {"-n", h.ns, "addr", "add", absl::StrCat(h.ip, "/24"), "dev", "eth0"},
             {"-n", h.ns, "link", "set", "eth0", "up"},
             {"-n", h.ns, "link", "set", "lo", "up"}}) {
      if (absl::Status s = Ip(args); !s.ok()) return s;
    }
    if (!router_ns_.empty() && second_router_ns_.empty()) {
      // The only route off the rack: the router's address in it, which
      // exists only inside these namespaces.
      absl::Status s = Ip(
          {"-n", h.ns, "route", "add", "default", "via", absl::StrCat(rack_nets_[h.rack], "254")});
      if (!s.ok()) return s;
    } else if (!second_router_ns_.empty()) {
      // Both routers, the path chosen per connection by its 4-tuple.
      const std::vector<std::string> hash = {
          "ip", "netns", "exec", h.ns, "sysctl", "-qw", "net.ipv4.fib_multipath_hash_policy=1"};
      if (absl::Status s = CommandStatus(hash, RunCommand(hash)); !s.ok()) return s;
      absl::Status s = Ip({"-n", h.ns, "route", "add", "default", "nexthop", "via",
                           absl::StrCat(rack_nets_[h.rack], "254"), "nexthop", "via",
                           absl::StrCat(rack_nets_[h.rack], "253")});
      if (!s.ok()) return s;
    }
  }
  if (router_ns_.empty()) return absl::OkStatus();
  if (absl::Status s = SetupRouter(router_ns_, "r", 254, "uplink"); !s.ok()) return s;
  if (second_router_ns_.empty()) return absl::OkStatus();
  return SetupRouter(second_router_ns_, "e", 253, "uplink2");
}

absl::Status NetnsCluster::SetupRouter(const std::string& ns, const std::string& port_prefix,
                                       int octet, const std::string& uplink) {
  RegisterNamespace(ns);
  if (absl::Status s = Ip({"netns", "add", ns}); !s.ok()) return s;
  if (absl::Status s = Ip({"-n", ns, "link", "set", "lo", "up"}); !s.ok()) return s;
  for (int r = 0; r < options_.racks; ++r) {
    const std::string port = absl::StrCat(port_prefix, r + 1);
    const std::string& sw = rack_switch_ns_[r];
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"-n", ns, "link", "add", port, "type", "veth", "peer", "name", uplink, "netns", sw},
             {"-n", sw, "link", "set", uplink, "master", "br0"},
             {"-n", sw, "link", "set", uplink, "up"},
             {"-n", ns, "addr", "add", absl::StrCat(rack_nets_[r], octet, "/24"), "dev", port},
             {"-n", ns, "link", "set", port, "up"}}) {
      if (absl::Status s = Ip(args); !s.ok()) return s;
    }
  }
  // net.ipv4.ip_forward is per network namespace.
  const std::vector<std::string> forward = {
      "ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv4.ip_forward=1"};
  return CommandStatus(forward, RunCommand(forward));
}

std::string NetnsCluster::group_of(int host) const {
  return options_.racks > 1 ? absl::StrCat("rack", hosts_[host].rack + 1) : "";
}

std::string NetnsCluster::router_port(int rack) const { return absl::StrCat("r", rack + 1); }

std::string NetnsCluster::switch_port(int host) const { return hosts_[host].name; }

std::string NetnsCluster::grpc(int host) const { return absl::StrCat(ip(host), ":", kGrpcPort); }

std::string NetnsCluster::subnet() const { return absl::StrCat(net_, "0/24"); }

std::vector<std::string> NetnsCluster::PeersOf(int host) const {
  std::vector<std::string> peers;
  for (int i = 0; i < size(); ++i) {
    if (i != host) peers.push_back(name(i));
  }
  return peers;
}

std::string NetnsCluster::Config(int host, const std::optional<std::string>& gloo_yaml) const {
  std::string yaml = absl::StrCat("node: ", name(host), "\ngrpc_listen: ", ip(host), ":", kGrpcPort,
                                  "\nmetrics_listen: ", ip(host), ":", kMetricsPort, "\n",
                                  gloo_yaml.value_or(options_.gloo_yaml), options_.extra_yaml);
  if (racks() > 1) absl::StrAppend(&yaml, "group: ", group_of(host), "\n");
  yaml += "peers:\n";
  for (int i = 0; i < size(); ++i) {
    if (i == host) continue;
    absl::StrAppend(&yaml, "  - name: ", name(i), "\n    grpc: ", grpc(i), "\n");
    if (racks() > 1) absl::StrAppend(&yaml, "    group: ", group_of(i), "\n");
  }
  return yaml;
}

void NetnsCluster::Start(int host, const DaemonOptions& options) {
  Host& h = hosts_[host];
  if (h.daemon) {
    UnregisterPid(h.daemon->pid());
    h.daemon.reset();  // SIGKILLs it if it still runs
  }
  const std::string config =
      dir_.Write(absl::StrCat(h.name, ".yaml"), Config(host, options.gloo_yaml));
  std::vector<std::string> argv = {"ip", "netns", "exec", h.ns};
  if (!options.env.empty()) {
    argv.push_back("env");
    for (const auto& [k, v] : options.env) argv.push_back(absl::StrCat(k, "=", v));
  }
  argv.insert(argv.end(), {BinaryPath("gloowatchd"), "--config", config});
  // `ip netns exec` and `env` exec in place: the pid is the daemon's.
  h.daemon = std::make_unique<Process>(argv, absl::StrCat(dir_.path(), "/", h.name, ".log"));
  RegisterPid(h.daemon->pid());
}

void NetnsCluster::StartAll() {
  for (int i = 0; i < size(); ++i) Start(i);
}

void NetnsCluster::Kill(int host, int sig) {
  Process* p = daemon(host);
  if (p == nullptr) return;
  p->Signal(sig);
  p->Wait(absl::Seconds(10));
  if (!p->running()) UnregisterPid(p->pid());
}

std::string NetnsCluster::DaemonLog(int host) const {
  return ReadFileText(absl::StrCat(dir_.path(), "/", hosts_[host].name, ".log"));
}

std::string NetnsCluster::AllLogs() const {
  std::string out;
  for (int i = 0; i < size(); ++i) {
    absl::StrAppend(&out, "---- ", name(i), " (", ip(i), ") log ----\n", DaemonLog(i));
  }
  return out;
}

CommandResult NetnsCluster::Exec(int host, const std::vector<std::string>& argv,
                                 absl::Duration timeout) const {
  std::vector<std::string> full = {"ip", "netns", "exec", ns(host)};
  full.insert(full.end(), argv.begin(), argv.end());
  return RunCommand(full, timeout);
}

absl::Status NetnsCluster::NftIn(const std::string& ns, const std::string& script) const {
  static std::atomic<int> scripts{0};
  const std::string file =
      dir_.Write(absl::StrCat("nft-", ns, "-", scripts.fetch_add(1), ".nft"), script);
  const std::vector<std::string> argv = {"ip", "netns", "exec", ns, "nft", "-f", file};
  return CommandStatus(argv, RunCommand(argv));
}

absl::Status NetnsCluster::Nft(int host, const std::string& script) const {
  return NftIn(ns(host), script);
}

absl::Status NetnsCluster::RouterNft(const std::string& script) const {
  if (router_ns_.empty()) return absl::FailedPreconditionError("no router: one rack");
  return NftIn(router_ns_, script);
}

absl::Status NetnsCluster::SecondRouterNft(const std::string& script) const {
  if (second_router_ns_.empty()) return absl::FailedPreconditionError("no second router: no ecmp");
  return NftIn(second_router_ns_, script);
}

absl::Status NetnsCluster::Partition(int a, int b) const {
  for (auto [self, other] : {std::pair{a, b}, std::pair{b, a}}) {
    // Input only: a locally generated packet dropped in an output hook fails
    // the send with EPERM at once, which no real partition does.
    absl::Status s = Nft(self, absl::StrCat("add table inet gwfault\n"
                                            "add chain inet gwfault input { type filter hook input "
                                            "priority -10 ; policy accept ; }\n"
                                            "add rule inet gwfault input ip saddr ",
                                            ip(other), " drop\n"));
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status NetnsCluster::ClearNftIn(const std::string& ns) const {
  const std::vector<std::string> list = {"ip", "netns", "exec", ns, "nft", "list", "tables"};
  CommandResult tables = RunCommand(list);
  if (!tables.ok()) return CommandStatus(list, tables);
  // "table <family> gwfault" lines.
  for (absl::string_view line : absl::StrSplit(tables.output, '\n', absl::SkipWhitespace())) {
    std::vector<std::string> f = absl::StrSplit(line, ' ', absl::SkipWhitespace());
    if (f.size() != 3 || f[0] != "table" || f[2] != "gwfault") continue;
    const std::vector<std::string> argv = {"ip",     "netns", "exec", ns,       "nft",
                                           "delete", "table", f[1],   "gwfault"};
    if (absl::Status s = CommandStatus(argv, RunCommand(argv)); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status NetnsCluster::ClearNft(int host) const { return ClearNftIn(ns(host)); }

absl::Status NetnsCluster::SwitchNft(int host, const std::string& script) const {
  return NftIn(SwitchOf(host), script);
}

absl::Status NetnsCluster::ClearNetworkNft() const {
  std::vector<std::string> all = rack_switch_ns_;
  if (!router_ns_.empty()) all.push_back(router_ns_);
  if (!second_router_ns_.empty()) all.push_back(second_router_ns_);
  for (const std::string& ns : all) {
    if (absl::Status s = ClearNftIn(ns); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status NetnsCluster::Shape(int host, const std::string& rate, ShapeSide side) const {
  if (side != ShapeSide::kSwitch) {
    if (absl::Status s = Tbf(ns(host), "eth0", rate); !s.ok()) return s;
  }
  if (side != ShapeSide::kHost) return Tbf(SwitchOf(host), switch_port(host), rate);
  return absl::OkStatus();
}

absl::Status NetnsCluster::ShapeUplink(int rack, const std::string& rate) const {
  if (router_ns_.empty()) return absl::FailedPreconditionError("one rack: no uplink to shape");
  if (absl::Status s = Tbf(router_ns_, router_port(rack), rate); !s.ok()) return s;
  return Tbf(rack_switch_ns_[rack], "uplink", rate);
}

absl::Status NetnsCluster::Unshape(int host) const {
  // Deleting a root qdisc that is the default fails; ignore that.
  RunCommand({"ip", "netns", "exec", ns(host), "tc", "qdisc", "del", "dev", "eth0", "root"});
  RunCommand({"ip", "netns", "exec", SwitchOf(host), "tc", "qdisc", "del", "dev", switch_port(host),
              "root"});
  return absl::OkStatus();
}

absl::Status NetnsCluster::SetLink(int host, bool up) const {
  return Ip({"-n", ns(host), "link", "set", "eth0", up ? "up" : "down"});
}

absl::Status NetnsCluster::ClearFaults() const {
  for (int host = 0; host < size(); ++host) {
    if (absl::Status s = ClearNft(host); !s.ok()) return s;
    if (absl::Status s = Unshape(host); !s.ok()) return s;
    if (absl::Status s = SetLink(host, true); !s.ok()) return s;
  }
  if (!router_ns_.empty()) {
    for (int rack = 0; rack < racks(); ++rack) {
      // As in Unshape: deleting a default root qdisc fails; that is fine.
      RunCommand({"ip", "netns", "exec", router_ns_, "tc", "qdisc", "del", "dev", router_port(rack),
                  "root"});
      RunCommand({"ip", "netns", "exec", rack_switch_ns_[rack], "tc", "qdisc", "del", "dev",
                  "uplink", "root"});
    }
  }
  return ClearNetworkNft();
}

absl::StatusOr<v1::NodeStatus> NetnsCluster::Status(int host, absl::Duration deadline) const {
  return GetStatusInNetns(ns(host), ip(host), kGrpcPort, deadline);
}

absl::StatusOr<std::map<std::string, double>> NetnsCluster::Metrics(int host) const {
  absl::StatusOr<std::string> body = HttpGetInNetns(ns(host), ip(host), kMetricsPort, "/metrics");
  if (!body.ok()) return body.status();
  return ParseMetrics(*body);
}

bool NetnsCluster::AllUp(int host, bool measured) const {
  absl::StatusOr<v1::NodeStatus> status = Status(host);
  if (!status.ok()) return false;
  for (const std::string& peer : PeersOf(host)) {
    const v1::PeerStatus* p = FindPeer(*status, peer);
    if (p == nullptr || p->state() != v1::PEER_STATE_UP) return false;
    if (measured &&
        !(p->latency().p50_seconds() > 0 && p->bandwidth().has_tx_bytes_per_second() &&
          p->bandwidth().has_rx_bytes_per_second() && p->clock().has_offset_seconds())) {
      return false;
    }
  }
  return true;
}

absl::Status NetnsCluster::WaitAllUp(absl::Duration timeout, bool measured) const {
  const absl::Time deadline = absl::Now() + timeout;
  for (int i = 0; i < size(); ++i) {
    if (hosts_[i].daemon == nullptr) continue;
    if (!WaitFor([&] { return AllUp(i, measured); }, deadline - absl::Now())) {
      absl::StatusOr<v1::NodeStatus> status = Status(i);
      return absl::DeadlineExceededError(absl::StrCat(
          name(i), " does not see every peer ", measured ? "up and measured" : "up", " after ",
          absl::FormatDuration(timeout), ": ",
          status.ok() ? status->ShortDebugString() : std::string(status.status().message())));
    }
  }
  return absl::OkStatus();
}

void NetnsCluster::Teardown() {
  if (torn_down_) return;
  torn_down_ = true;
  for (Host& h : hosts_) {
    if (h.daemon) {
      UnregisterPid(h.daemon->pid());
      h.daemon.reset();  // SIGKILL + reap
    }
  }
  std::vector<std::string> all;
  for (const Host& h : hosts_) all.push_back(h.ns);
  all.insert(all.end(), rack_switch_ns_.begin(), rack_switch_ns_.end());
  if (!router_ns_.empty()) all.push_back(router_ns_);
  if (!second_router_ns_.empty()) all.push_back(second_router_ns_);
  for (const std::string& name : all) {
    if (access(absl::StrCat(kNetnsDir, "/", name).c_str(), F_OK) == 0) {
      KillNamespacePids(name);
      RunCommand({"ip", "netns", "del", name}, absl::Seconds(5));
    }
    UnregisterNamespace(name);
  }
}

}  // namespace gloowatch::testing
