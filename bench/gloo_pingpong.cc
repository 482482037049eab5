// gloo_pingpong: the floor under gloowatch's latency probe. Two processes
// (this one and a forked child) ping-pong a fixed-size message over one Gloo
// TCP pair in sync mode with bound buffers, exactly as gloowatch's command
// pair does, but with nothing of gloowatch around it. Comparing its round
// trip with sockperf's gives the cost of Gloo's framing; comparing
// gloowatch's with it gives the cost of gloowatch itself.
//
//   gloo_pingpong --address 127.0.0.1 --bytes 14 --seconds 4 --cpus 0,0
//                 [--burst 1000 --gap_ms 80]
//
// With --responder_netns NS --responder_address IP the child moves into that
// network namespace first (root only), for a veth link between namespaces.
// Prints "p50_us P50 p99_us P99 round_trips N" (round-trip times; the first
// 1000 round trips are a warm-up and not counted).
#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gloo/transport/buffer.h"
#include "gloo/transport/context.h"
#include "gloo/transport/pair.h"
#include "gloo/transport/tcp/device.h"

namespace {

constexpr int kSlotPing = 1;
constexpr int kSlotPong = 2;
constexpr int kWarmUp = 1000;

struct Options {
  std::string address = "127.0.0.1";
  // The responder's own address and network namespace (a veth link between
  // two namespaces); by default it shares the requester's.
  std::string responder_address;
  std::string responder_netns;
  size_t bytes = 14;
  double seconds = 4;
  int cpu_requester = -1;
  int cpu_responder = -1;
  // 0: back to back. Otherwise bursts of `burst` round trips `gap_ms` apart,
  // as gloowatch's probe loop sends them.
  int burst = 0;
  int gap_ms = 0;
};

bool Parse(int argc, char** argv, Options* o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--address") {
      o->address = value;
    } else if (flag == "--responder_address") {
      o->responder_address = value;
    } else if (flag == "--responder_netns") {
      o->responder_netns = value;
    } else if (flag == "--bytes") {
      if (!absl::SimpleAtoi(value, &o->bytes) || o->bytes < 1) return false;
    } else if (flag == "--seconds") {
      if (!absl::SimpleAtod(value, &o->seconds) || o->seconds <= 0) return false;
    } else if (flag == "--burst") {
      if (!absl::SimpleAtoi(value, &o->burst) || o->burst < 0) return false;
    } else if (flag == "--gap_ms") {
      if (!absl::SimpleAtoi(value, &o->gap_ms) || o->gap_ms < 0) return false;
    } else if (flag == "--cpus") {
      std::vector<std::string> cpus = absl::StrSplit(value, ',');
      if (cpus.size() != 2 || !absl::SimpleAtoi(cpus[0], &o->cpu_requester) ||
          !absl::SimpleAtoi(cpus[1], &o->cpu_responder)) {
        return false;
      }
    } else {
      return false;
    }
  }
  return argc % 2 == 1;
}

void Pin(int cpu) {
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof(set), &set) != 0) std::perror("sched_setaffinity");
}

bool WriteAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = write(fd, p, n);
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool ReadAll(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t r = read(fd, p, n);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// One side: creates its pair, swaps addresses over the pipes, connects,
// switches to sync mode. Rank 0 pings, rank 1 echoes until the pair closes.
int RunSide(const Options& o, int rank, int write_fd, int read_fd) {
  Pin(rank == 0 ? o.cpu_requester : o.cpu_responder);
  if (rank == 1 && !o.responder_netns.empty()) {
    // Still single-threaded, so the whole process may change namespace.
    const std::string path = "/run/netns/" + o.responder_netns;
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
      std::perror(path.c_str());
      return 1;
    }
    close(fd);
  }
  gloo::transport::tcp::attr attr;
  attr.hostname = rank == 1 && !o.responder_address.empty() ? o.responder_address : o.address;
  auto device = gloo::transport::tcp::CreateDevice(attr);
  auto context = device->createContext(rank, 2);
  context->setTimeout(std::chrono::seconds(10));
  auto& pair = context->createPair(1 - rank);
  std::vector<char> out(o.bytes, 1), in(o.bytes, 0);
  auto send = pair->createSendBuffer(rank == 0 ? kSlotPing : kSlotPong, out.data(), out.size());
  auto recv = pair->createRecvBuffer(rank == 0 ? kSlotPong : kSlotPing, in.data(), in.size());
  const std::vector<char> mine = pair->address().bytes();
  const uint32_t size = static_cast<uint32_t>(mine.size());
  uint32_t peer_size = 0;
  if (!WriteAll(write_fd, &size, sizeof(size)) || !WriteAll(write_fd, mine.data(), size) ||
      !ReadAll(read_fd, &peer_size, sizeof(peer_size)) || peer_size > 4096) {
    return 1;
  }
  std::vector<char> peer(peer_size);
  if (!ReadAll(read_fd, peer.data(), peer_size)) return 1;
  try {
    pair->connect(peer);
    pair->setSync(/*sync=*/true, /*busyPoll=*/false);
    if (rank == 1) {
      while (true) {
        recv->waitRecv();
        std::memcpy(out.data(), in.data(), out.size());
        send->send();
        send->waitSend();
      }
    }
    std::vector<double> rtts;
    const absl::Time end = absl::Now() + absl::Seconds(o.seconds);
    for (int i = 0; absl::Now() < end; ++i) {
      const absl::Time start = absl::Now();
      send->send();
      send->waitSend();
      recv->waitRecv();
      if (i >= kWarmUp) rtts.push_back(absl::ToDoubleMicroseconds(absl::Now() - start));
      if (o.burst > 0 && i >= kWarmUp && (i - kWarmUp) % o.burst == o.burst - 1) {
        absl::SleepFor(absl::Milliseconds(o.gap_ms));
      }
    }
    if (rtts.empty()) return 1;
    std::sort(rtts.begin(), rtts.end());
    std::printf("p50_us %.3f p99_us %.3f round_trips %zu\n", rtts[rtts.size() / 2],
                rtts[std::min(rtts.size() - 1, rtts.size() * 99 / 100)], rtts.size());
    std::fflush(stdout);
  } catch (const std::exception& e) {
    if (rank == 0) {
      std::fprintf(stderr, "gloo_pingpong: %s\n", e.what());
      return 1;
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!Parse(argc, argv, &o)) {
    std::fprintf(
        stderr,
        "usage: gloo_pingpong [--address IP] [--responder_address IP --responder_netns NS] "
        "[--bytes N] [--seconds S] [--cpus A,B] [--burst N --gap_ms MS]\n");
    return 2;
  }
  int to_child[2], to_parent[2];
  if (pipe(to_child) != 0 || pipe(to_parent) != 0) return 1;
  // Forked before any Gloo thread exists; each side makes its own device.
  const pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) _exit(RunSide(o, /*rank=*/1, to_parent[1], to_child[0]));
  const int rc = RunSide(o, /*rank=*/0, to_child[1], to_parent[0]);
  // The responder ends when its pair sees the requester's side close.
  kill(child, SIGTERM);
  waitpid(child, nullptr, 0);
  return rc;
}
