#include "transport/preflight_mesh.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/failure.h"
#include "gloo/transport/context.h"
#include "gloo/transport/device.h"
#include "gloo/transport/pair.h"
#include "gloo/transport/tcp/address.h"
#include "gloo/transport/unbound_buffer.h"
#include "transport/gloo_boundary.h"
#include "transport/preflight_reverse.h"
#include "transport/probe_link.h"

namespace gloowatch {

using transport::v1::PreflightReply;
using transport::v1::PreflightStep;

namespace {

// The unbound-buffer slot of the one message each way over every pair.
constexpr uint64_t kSlotPreflight = 0x70666c74;  // "pflt"

// A mesh prepared but never connected is dropped this long after its
// timeout, so a client that vanished between the phases frees its slot.
constexpr absl::Duration kConnectGrace = absl::Seconds(60);

std::chrono::milliseconds Millis(absl::Duration d) {
  return absl::ToChronoMilliseconds(std::max(d, absl::Milliseconds(1)));
}

}  // namespace

struct PreflightMeshes::Mesh {
  bool ready = false;       // device and pairs exist
  bool connecting = false;  // Connect owns it until it ends
  uint32_t rank = 0;
  uint32_t hosts = 0;
  absl::Duration timeout;
  absl::Duration expires;  // on the monotonic clock
  std::shared_ptr<gloo::transport::Device> device;
  std::shared_ptr<gloo::transport::Context> context;
  std::vector<std::string> pair_addresses;  // ours, per rank, as sent
  ReverseListener reverse;
};

void PreflightMeshes::Handle(const PreflightStep& step) {
  switch (step.step_case()) {
    case PreflightStep::kPrepare:
      Prepare(step.id(), step.session(), step.prepare());
      return;
    case PreflightStep::kConnect:
      Connect(step.id(), step.session(), step.connect());
      return;
    case PreflightStep::STEP_NOT_SET:
      Fail(step.id(), absl::InvalidArgumentError("empty preflight step"));
      return;
  }
}

PreflightMeshes::~PreflightMeshes() {
  absl::MutexLock lock(&mu_);
  auto ended = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return threads_ == 0; };
  mu_.Await(absl::Condition(&ended));
}

void PreflightMeshes::Fail(uint64_t id, const absl::Status& status) {
  PreflightReply reply;
  reply.set_id(id);
  reply.set_code(static_cast<int>(status.code()));
  reply.set_message(std::string(status.message()));
  reply_(reply);
}

void PreflightMeshes::DropStale() {
  const absl::Duration now = clock_->Monotonic();
  for (auto it = meshes_.begin(); it != meshes_.end();) {
    if (it->second->ready && !it->second->connecting && it->second->expires < now) {
      it = meshes_.erase(it);
    } else {
      ++it;
    }
  }
}

void PreflightMeshes::Prepare(uint64_t id, const std::string& session,
                              const transport::v1::PreflightPrepare& prepare) {
  // The daemon checked the fields; these bounds hold whatever it sends.
  if (prepare.hosts() < 2 || prepare.hosts() > kMaxHosts || prepare.rank() >= prepare.hosts() ||
      prepare.timeout_ms() == 0 || prepare.timeout_ms() > 3600 * 1000) {
    Fail(id, absl::InvalidArgumentError("preflight mesh parameters out of bounds"));
    return;
  }
  auto mesh = std::make_shared<Mesh>();
  mesh->rank = prepare.rank();
  mesh->hosts = prepare.hosts();
  mesh->timeout = absl::Milliseconds(prepare.timeout_ms());
  {
    absl::MutexLock lock(&mu_);
    DropStale();
    if (meshes_.count(session) != 0) {
      Fail(id, absl::AlreadyExistsError(absl::StrCat("preflight session '", session,
                                                     "' already has a mesh on this host")));
      return;
    }
    if (meshes_.size() >= kMaxMeshes) {
      Fail(id, absl::ResourceExhaustedError(
                   absl::StrCat(kMaxMeshes,
                                " preflight meshes are already open on this host "
                                "(the limit); retry when they end")));
      return;
    }
    meshes_[session] = mesh;
    ++threads_;
  }
  std::thread([this, id, session, mesh, address = prepare.address()] {
    PreflightReply reply;
    reply.set_id(id);
    // Without the probes' timer slack: the probing device's loop may defer
    // idle ticks by 100 ms to save CPU, but a connect waits for one (the
    // listening socket leaves the loop), and a mesh lives for seconds.
    absl::StatusOr<std::shared_ptr<gloo::transport::Device>> device =
        CreateGlooDevice(address, /*loop_timer_slack=*/std::nullopt);
    absl::Status status = device.status();
    if (status.ok()) {
      mesh->device = *device;
      status = GuardGloo("create the mesh's pairs", [&] {
        // As ProcessGroupGloo's context: one per device, the job's size, and
        // a pair per other rank. Gloo waits 5 pair timeouts for a connect,
        // so this makes the connect deadline the job's timeout.
        mesh->context = mesh->device->createContext(static_cast<int>(mesh->rank),
                                                    static_cast<int>(mesh->hosts));
        mesh->context->setTimeout(Millis(mesh->timeout / 5));
        for (uint32_t r = 0; r < mesh->hosts; ++r) {
          if (r == mesh->rank) {
            reply.add_pair_addresses("");
            continue;
          }
          const std::vector<char> bytes =
              mesh->context->createPair(static_cast<int>(r))->address().bytes();
          reply.add_pair_addresses(std::string(bytes.begin(), bytes.end()));
        }
        return absl::OkStatus();
      });
    }
    if (status.ok()) {
      // The reverse round's listener, on the IP Gloo's pairs listen on.
      mesh->pair_addresses.assign(reply.pair_addresses().begin(), reply.pair_addresses().end());
      absl::StatusOr<ReverseListener> listener = ReverseListener::Open(
          reply.pair_addresses(mesh->rank == 0 ? 1 : 0), static_cast<int>(mesh->hosts));
      status = listener.status();
      if (status.ok()) {
        mesh->reverse = *std::move(listener);
        reply.set_reverse_address(mesh->reverse.address());
      }
    }
    absl::MutexLock lock(&mu_);
    if (!status.ok()) {
      meshes_.erase(session);
      reply.Clear();
      reply.set_id(id);
      reply.set_code(static_cast<int>(status.code()));
      reply.set_message(std::string(status.message()));
    } else {
      mesh->ready = true;
      mesh->expires = clock_->Monotonic() + mesh->timeout + kConnectGrace;
    }
    reply_(reply);
    --threads_;
  }).detach();
}

namespace {

struct PairOutcome {
  bool tried = false;
  bool connected = false;  // the TCP connection formed
  absl::Status status;
  absl::Duration connect_time;
  absl::Duration exchange_time;
  std::string peer;
};

// Connects every pair (a bounded pool of threads: a connect may wait a whole
// timeout) and, as soon as a pair is connected, posts one message each way
// over it: the other side posts when the same pair connects on its side,
// whatever its other pairs are doing. Then waits for every message, each
// within a timeout of its post.
std::vector<PairOutcome> RunMesh(PreflightMeshes::Mesh& mesh,
                                 const v1::PreflightConnectRequest& request, const Clock* clock) {
  const int hosts = static_cast<int>(mesh.hosts);
  const int self = static_cast<int>(mesh.rank);
  std::vector<PairOutcome> out(hosts);
  std::vector<uint64_t> sent(hosts, static_cast<uint64_t>(self)), got(hosts, ~uint64_t{0});
  std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> sends(hosts), recvs(hosts);
  std::vector<absl::Duration> posted(hosts);
  std::atomic<int> next{0};
  auto worker = [&] {
    for (int r; (r = next.fetch_add(1)) < hosts;) {
      const std::string& bytes = request.peer_pair_addresses(r);
      if (r == self || bytes.empty()) continue;
      PairOutcome& o = out[r];
      o.tried = true;
      o.peer = GlooAddressToString(bytes);
      if (bytes.size() > gloo::transport::Address::kMaxByteSize || o.peer.empty()) {
        o.status = absl::InvalidArgumentError("not a Gloo TCP address");
        continue;
      }
      const absl::Duration start = clock->Monotonic();
      o.status = GuardGloo("connect", [&] {
        mesh.context->getPair(r)->connect(std::vector<char>(bytes.begin(), bytes.end()));
        return absl::OkStatus();
      });
      o.connect_time = clock->Monotonic() - start;
      if (!o.status.ok()) continue;
      o.connected = true;
      posted[r] = clock->Monotonic();
      o.status = GuardGloo("post", [&] {
        sends[r] = mesh.context->createUnboundBuffer(&sent[r], sizeof(uint64_t));
        recvs[r] = mesh.context->createUnboundBuffer(&got[r], sizeof(uint64_t));
        recvs[r]->recv(r, kSlotPreflight);
        sends[r]->send(r, kSlotPreflight);
        return absl::OkStatus();
      });
    }
  };
  const size_t threads =
      std::min<size_t>(PreflightMeshes::kMaxConnectThreads, static_cast<size_t>(hosts - 1));
  std::vector<std::thread> pool;
  for (size_t i = 0; i < threads; ++i) pool.emplace_back(worker);
  for (std::thread& t : pool) t.join();

  for (int r = 0; r < hosts; ++r) {
    PairOutcome& o = out[r];
    if (!o.tried || !o.status.ok()) continue;
    const absl::Duration deadline = posted[r] + mesh.timeout;
    o.status = GuardGloo("exchange", [&] {
      if (!recvs[r]->waitRecv(Millis(deadline - clock->Monotonic()))) {
        return absl::AbortedError("receive aborted");
      }
      if (!sends[r]->waitSend(Millis(deadline - clock->Monotonic()))) {
        return absl::AbortedError("send aborted");
      }
      if (got[r] != static_cast<uint64_t>(r)) {
        return ProtocolError(absl::StrCat("rank ", r, "'s pair answered as rank ", got[r]));
      }
      return absl::OkStatus();
    });
    o.exchange_time = clock->Monotonic() - posted[r];
  }
  return out;
}

}  // namespace

void PreflightMeshes::Connect(uint64_t id, const std::string& session,
                              const v1::PreflightConnectRequest& request) {
  std::shared_ptr<Mesh> mesh;
  {
    absl::MutexLock lock(&mu_);
    DropStale();
    auto it = meshes_.find(session);
    if (it == meshes_.end()) {
      Fail(id, absl::NotFoundError(
                   absl::StrCat("no preflight mesh '", session,
                                "' on this host (never prepared, expired, or already connected)")));
      return;
    }
    mesh = it->second;
    if (!mesh->ready || mesh->connecting) {
      Fail(id, absl::FailedPreconditionError(
                   absl::StrCat("preflight mesh '", session, "' is not ready to connect")));
      return;
    }
    if (request.peer_pair_addresses_size() != static_cast<int>(mesh->hosts)) {
      Fail(id, absl::InvalidArgumentError(
                   absl::StrCat("peer_pair_addresses: ", request.peer_pair_addresses_size(),
                                " addresses for a mesh of ", mesh->hosts, " hosts")));
      return;
    }
    if (request.peer_reverse_addresses_size() != 0 &&
        request.peer_reverse_addresses_size() != static_cast<int>(mesh->hosts)) {
      Fail(id, absl::InvalidArgumentError(
                   absl::StrCat("peer_reverse_addresses: ", request.peer_reverse_addresses_size(),
                                " addresses for a mesh of ", mesh->hosts, " hosts")));
      return;
    }
    mesh->connecting = true;
    ++threads_;
  }
  std::thread([this, id, session, mesh, request] {
    PreflightReply reply;
    reply.set_id(id);
    v1::PreflightConnectResponse* connected = reply.mutable_connected();
    std::thread store([&] {
      if (!request.master_addr().empty()) {
        *connected->mutable_master() =
            CheckStore(request.master_addr(), request.master_port(), mesh->timeout);
      }
    });
    // Gloo's direction of every pair; the reverse round runs at the same
    // time as the mesh, within the same timeout.
    std::vector<bool> listened(mesh->hosts, false);
    std::vector<ReverseTask> tasks(mesh->hosts);
    for (uint32_t r = 0; r < mesh->hosts; ++r) {
      if (r == mesh->rank || request.peer_pair_addresses(r).empty()) continue;
      absl::StatusOr<bool> connects =
          GlooConnectsFrom(mesh->pair_addresses[r], request.peer_pair_addresses(r));
      if (!connects.ok()) continue;
      listened[r] = !*connects;
      if (request.peer_reverse_addresses_size() == 0 || request.peer_reverse_addresses(r).empty()) {
        continue;
      }
      if (listened[r]) {
        tasks[r].connect_to = request.peer_reverse_addresses(r);
      } else {
        tasks[r].await = true;
      }
    }
    std::vector<ReverseOutcome> reversed;
    std::thread reverse([&] {
      reversed = RunReverseRound(mesh->reverse, mesh->rank, tasks, mesh->timeout, clock_);
    });
    const std::vector<PairOutcome> outcomes = RunMesh(*mesh, request, clock_);
    store.join();
    reverse.join();
    for (uint32_t r = 0; r < mesh->hosts; ++r) {
      if (r == mesh->rank) continue;
      const PairOutcome& o = outcomes[r];
      v1::PreflightPairResult* p = connected->add_pairs();
      p->set_rank(r);
      p->set_tried(o.tried);
      p->set_peer_address(o.peer);
      p->set_listened(listened[r]);
      if (reversed[r].tried) {
        const ReverseOutcome& back = reversed[r];
        v1::PreflightReverseResult* rev = p->mutable_reverse();
        rev->set_tried(true);
        rev->set_ok(back.status.ok());
        rev->set_seconds(absl::ToDoubleSeconds(back.took));
        rev->set_address(back.address);
        if (!back.status.ok()) {
          rev->set_reason(FailureReasonOf(back.status));
          rev->set_message(std::string(back.status.message()));
        }
      }
      if (!o.tried) continue;
      p->set_ok(o.status.ok());
      p->set_connected(o.connected);
      p->set_seconds(absl::ToDoubleSeconds(o.connect_time + o.exchange_time));
      if (!o.status.ok()) {
        p->set_reason(FailureReasonOf(o.status));
        p->set_message(std::string(o.status.message()));
      }
    }
    {
      absl::MutexLock lock(&mu_);
      meshes_.erase(session);
    }
    reply_(reply);
    absl::MutexLock lock(&mu_);
    --threads_;
  }).detach();
}

v1::PreflightMasterResult CheckStore(const std::string& host, uint32_t port,
                                     absl::Duration timeout) {
  v1::PreflightMasterResult result;
  result.set_checked(true);
  const absl::Time start = absl::Now();
  const absl::Time deadline = start + timeout;
  auto fail = [&](v1::FailureReason reason, std::string message) {
    result.set_ok(false);
    result.set_reason(reason);
    result.set_message(std::move(message));
    result.set_seconds(absl::ToDoubleSeconds(absl::Now() - start));
    return result;
  };
  if (port == 0 || port > 65535) {
    return fail(v1::FAILURE_REASON_OTHER, absl::StrCat("MASTER_PORT ", port, " is not a port"));
  }
  addrinfo hints;
  std::memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  const std::string service = std::to_string(port);
  if (int rv = getaddrinfo(host.c_str(), service.c_str(), &hints, &list); rv != 0) {
    return fail(v1::FAILURE_REASON_UNREACHABLE,
                absl::StrCat("MASTER_ADDR '", host, "' does not resolve: ", gai_strerror(rv)));
  }
  std::string last_error = "no address";
  for (addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
    char text[NI_MAXHOST] = {0};
    char serv[NI_MAXSERV] = {0};
    getnameinfo(ai->ai_addr, ai->ai_addrlen, text, sizeof(text), serv, sizeof(serv),
                NI_NUMERICHOST | NI_NUMERICSERV);
    const std::string address = ai->ai_family == AF_INET6 ? absl::StrCat("[", text, "]:", serv)
                                                          : absl::StrCat(text, ":", serv);
    result.set_address(address);
    const int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      last_error = strerror(errno);
      continue;
    }
    int error = 0;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      error = errno;
      if (error == EINPROGRESS) {
        pollfd p{fd, POLLOUT, 0};
        const int64_t ms = std::max<int64_t>(absl::ToInt64Milliseconds(deadline - absl::Now()), 0);
        const int ready = poll(&p, 1, static_cast<int>(std::min<int64_t>(ms, 3600 * 1000)));
        if (ready == 0) {
          error = ETIMEDOUT;
        } else {
          socklen_t len = sizeof(error);
          getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len);
        }
      }
    }
    close(fd);
    if (error == 0) {
      freeaddrinfo(list);
      result.set_ok(true);
      result.set_seconds(absl::ToDoubleSeconds(absl::Now() - start));
      return result;
    }
    last_error = absl::StrCat(address, ": ", strerror(error));
    if (absl::Now() >= deadline) break;
  }
  freeaddrinfo(list);
  return fail(ClassifyMessage(last_error), last_error);
}

}  // namespace gloowatch
