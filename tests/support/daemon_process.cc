#include "tests/support/daemon_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gloo/transport/tcp/address.h"
#include "grpcpp/grpcpp.h"
#include "tests/support/free_port.h"

namespace gloowatch::testing {

absl::StatusOr<Pki> MakePki(const TempDir& dir, const std::string& name) {
  const std::string p = absl::StrCat(dir.path(), "/", name);
  const std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  dir.Write(name + ".ext", "subjectAltName=IP:127.0.0.1\n");
  auto run = [](const std::string& command) {
    return std::system((command + " >/dev/null 2>&1").c_str()) == 0;
  };
  const bool ok =
      run(absl::StrCat("openssl req -x509 ", ec, " -keyout ", p, "-ca.key -out ", p,
                       "-ca.pem -days 2 -subj /CN=", name, "-ca")) &&
      run(absl::StrCat("openssl req ", ec, " -keyout ", p, ".key -out ", p,
                       ".csr -subj /CN=", name)) &&
      run(absl::StrCat("openssl x509 -req -in ", p, ".csr -CA ", p, "-ca.pem -CAkey ", p,
                       "-ca.key -CAcreateserial -days 2 -out ", p, ".pem -extfile ", p, ".ext"));
  if (!ok) return absl::InternalError(absl::StrCat("openssl failed making the test PKI ", name));
  return Pki{p + "-ca.pem", p + ".pem", p + ".key"};
}

Process::Process(std::vector<std::string> argv, std::string log_path,
                 std::map<std::string, std::string> extra_env)
    : log_path_(std::move(log_path)) {
  pid_ = fork();
  if (pid_ == 0) {
    int fd = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    for (const auto& [key, value] : extra_env) setenv(key.c_str(), value.c_str(), 1);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
}

Process::~Process() {
  if (running()) {
    kill(pid_, SIGKILL);
    Wait(absl::Seconds(10));
  }
}

bool Process::running() {
  if (exit_.has_value() || pid_ <= 0) return false;
  Wait(absl::ZeroDuration());
  return !exit_.has_value();
}

void Process::Signal(int sig) {
  if (running()) kill(pid_, sig);
}

std::optional<int> Process::Wait(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!exit_.has_value()) {
    int status = 0;
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exit_ = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
      break;
    }
    if (absl::Now() >= deadline) break;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return exit_;
}

std::string Process::Log() const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ProcessUsage UsageOf(pid_t pid) {
  ProcessUsage usage;
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    std::vector<std::string> f = absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    int64_t v = 0;
    if (f.size() < 2 || !absl::SimpleAtoi(f[1], &v)) continue;
    if (f[0] == "VmRSS:") usage.rss_mib = v / 1024.0;
    if (f[0] == "Threads:") usage.threads = v;
  }
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(absl::StrCat("/proc/", pid, "/fd"), ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++usage.fds;
  }
  return usage;
}

pid_t ChildPid(pid_t parent) {
  // Children are listed under the thread that forked them.
  std::error_code ec;
  for (const auto& task :
       std::filesystem::directory_iterator(absl::StrCat("/proc/", parent, "/task"), ec)) {
    std::ifstream in(task.path() / "children");
    std::string children((std::istreambuf_iterator<char>(in)), {});
    if (!children.empty()) return std::stoi(children);
  }
  return -1;
}

absl::StatusOr<v1::NodeStatus> GetStatus(const std::string& address, absl::Duration deadline,
                                         std::shared_ptr<grpc::ChannelCredentials> credentials) {
  if (credentials == nullptr) credentials = grpc::InsecureChannelCredentials();
  auto stub = v1::Status::NewStub(grpc::CreateChannel(address, credentials));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
  v1::NodeStatus status;
  grpc::Status s = stub->GetStatus(&context, v1::GetStatusRequest(), &status);
  if (!s.ok()) return absl::UnavailableError(s.error_message());
  return status;
}

int ConnectLoopback(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

std::string GlooAddressBytes(const char* ip, int port) {
  sockaddr_storage ss{};
  auto* in = reinterpret_cast<sockaddr_in*>(&ss);
  in->sin_family = AF_INET;
  in->sin_port = htons(port);
  inet_pton(AF_INET, ip, &in->sin_addr);
  const std::vector<char> bytes = gloo::transport::tcp::Address(ss).bytes();
  return std::string(bytes.begin(), bytes.end());
}

v1::OpenProbePairRequest StrangerOpenRequest(const std::string& from, const std::string& to) {
  v1::OpenProbePairRequest request;
  request.set_protocol_version(1);
  request.set_from_node(from);
  request.set_to_node(to);
  request.set_gloo_address(GlooAddressBytes("127.255.255.254", 65000));
  request.set_bulk_gloo_address(GlooAddressBytes("127.255.255.254", 65001));
  v1::ProbeParameters* p = request.mutable_parameters();
  p->set_latency_message_bytes(8);
  p->set_bandwidth_message_bytes(1 << 20);
  p->set_bandwidth_messages(8);
  p->set_skew_burst(8);
  p->set_gloo_timeout_ms(2000);
  return request;
}

absl::StatusOr<std::string> HttpGet(int port, const std::string& path) {
  const int fd = ConnectLoopback(port);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("connect to port ", port, " failed"));
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  const std::string request = absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: localhost\r\n\r\n");
  (void)!write(fd, request.data(), request.size());
  std::string response;
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) response.append(buf, n);
  close(fd);
  const size_t body = response.find("\r\n\r\n");
  if (body == std::string::npos) return absl::DataLossError("no HTTP body");
  return response.substr(body + 4);
}

std::string UrlEncode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      absl::StrAppend(&out, "%", absl::Hex(c, absl::kZeroPad2));
    }
  }
  return out;
}

std::string FastLoopbackYaml(const std::string& link_speed) {
  return absl::StrCat("gloo:\n  address: 127.0.0.1\n  timeout: 2s\n",
                      link_speed.empty() ? "" : absl::StrCat("  link_speed: ", link_speed, "\n"),
                      "schedule:\n  latency_interval: 500ms\n  skew_interval: 1s\n"
                      "  bandwidth_interval: 30s\n  bandwidth_budget: 1\n"
                      "probe:\n  bandwidth_bytes: 8MiB\n  bandwidth_message_bytes: 1MiB\n"
                      "  backoff_initial: 200ms\n  backoff_max: 1s\n");
}

std::string LoopbackConfig(const NodeSpec& self, const std::vector<NodeSpec>& peers,
                           const std::string& extra_yaml) {
  std::string yaml =
      absl::StrCat("node: ", self.name, "\n", "grpc_listen: 127.0.0.1:", self.grpc_port, "\n",
                   "metrics_listen: 127.0.0.1:", self.metrics_port, "\n", extra_yaml, "peers:\n");
  for (const NodeSpec& peer : peers) {
    if (peer.name == self.name) continue;
    absl::StrAppend(&yaml, "  - name: ", peer.name, "\n    grpc: 127.0.0.1:", peer.grpc_port, "\n");
  }
  return yaml;
}

LoopbackCluster::LoopbackCluster(int nodes, const std::string& extra_yaml, ClusterPeers peers)
    : peers_(peers) {
  for (int i = 0; i < nodes; ++i) {
    // Letters as the tests know them; numbers past z (a benchmark's 32 or 64).
    std::string name = i < 26 ? std::string(1, static_cast<char>('a' + i)) : absl::StrCat(i);
    nodes_.push_back({"node-" + name, FreePort(), FreePort()});
  }
  for (int i = 0; i < nodes; ++i) {
    const std::vector<NodeSpec> others =
        peers == ClusterPeers::kFullMesh ? nodes_ : std::vector<NodeSpec>{};
    configs_.push_back(dir_.Write(absl::StrCat(nodes_[i].name, ".yaml"),
                                  LoopbackConfig(nodes_[i], others, extra_yaml)));
  }
  processes_.resize(nodes);
}

LoopbackCluster::~LoopbackCluster() { processes_.clear(); }

void LoopbackCluster::Start(int index) {
  processes_[index] = std::make_unique<Process>(
      std::vector<std::string>{BinaryPath("gloowatchd"), "--config", configs_[index]},
      absl::StrCat(dir_.path(), "/", nodes_[index].name, ".log"));
}

void LoopbackCluster::Kill(int index, int sig) {
  processes_[index]->Signal(sig);
  processes_[index]->Wait(absl::Seconds(10));
}

std::string LoopbackCluster::grpc(int index) const {
  return absl::StrCat("127.0.0.1:", nodes_[index].grpc_port);
}

const v1::PeerStatus* FindPeer(const v1::NodeStatus& status, const std::string& peer) {
  for (const auto& p : status.peers()) {
    if (p.name() == peer) return &p;
  }
  return nullptr;
}

bool PeerUp(const v1::PeerStatus& p) { return p.state() == v1::PEER_STATE_UP; }

bool LatencyMeasured(const v1::PeerStatus& p) {
  return PeerUp(p) && p.latency().has_p50_seconds() && p.latency().p50_seconds() > 0;
}

bool FullyMeasured(const v1::PeerStatus& p) {
  return LatencyMeasured(p) && p.bandwidth().has_tx_bytes_per_second() &&
         p.bandwidth().has_rx_bytes_per_second() && p.clock().has_offset_seconds();
}

absl::Status LoopbackCluster::WaitAllUp(
    absl::Duration timeout, const PeerCondition& ready,
    std::shared_ptr<grpc::ChannelCredentials> credentials) const {
  const absl::Time deadline = absl::Now() + timeout;
  for (int i = 0; i < size(); ++i) {
    if (processes_[i] == nullptr) continue;
    // The last thing seen missing, for the error.
    std::string missing;
    bool exited = false;
    const bool up = WaitFor(
        [&] {
          if (!processes_[i]->running()) {  // a bad config, or its port taken meanwhile
            exited = true;
            return true;
          }
          auto status = GetStatus(grpc(i), absl::Seconds(2), credentials);
          if (!status.ok()) {
            missing = "its status: " + status.status().ToString();
            return false;
          }
          for (int j = 0; j < size() && peers_ == ClusterPeers::kFullMesh; ++j) {
            if (j == i || processes_[j] == nullptr) continue;
            const v1::PeerStatus* p = FindPeer(*status, nodes_[j].name);
            if (p == nullptr || !ready(*p)) {
              missing = p == nullptr ? nodes_[j].name + " (absent)" : p->ShortDebugString();
              return false;
            }
          }
          return true;
        },
        deadline - absl::Now());
    if (exited) {
      return absl::FailedPreconditionError(
          absl::StrCat(nodes_[i].name, " exited; its log:\n", processes_[i]->Log()));
    }
    if (!up) {
      return absl::DeadlineExceededError(
          absl::StrCat(nodes_[i].name, " did not see every peer ready within ",
                       absl::FormatDuration(timeout), "; last missing: ", missing));
    }
  }
  return absl::OkStatus();
}

}  // namespace gloowatch::testing
