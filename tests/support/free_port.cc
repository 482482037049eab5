#include "tests/support/free_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <set>

#include "absl/synchronization/mutex.h"

namespace gloowatch::testing {
namespace {

// The first port the kernel hands out for bind(0) and connect: every Gloo
// pair listens on one of those, so a port picked from that range can be taken
// by a pair before the daemon it was meant for binds it.
int EphemeralLow() {
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 0;
  if (!(range >> low)) return 32768;  // Linux's default
  return low;
}

bool Bindable(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

int KernelPickedPort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace

int FreePort() {
  // Never repeat one: a cluster whose daemons were handed the same port
  // twice never comes up.
  static absl::Mutex mu;
  static auto* handed_out = new std::set<int>;
  // Below the ephemeral range nothing takes a port unasked. A random start
  // keeps test processes that run side by side apart.
  static const int high = EphemeralLow();
  static const int low = high / 2;
  static std::mt19937 rng(std::random_device{}());
  absl::MutexLock lock(&mu);
  if (high - low >= 1024) {
    const int span = high - low;
    const int start = std::uniform_int_distribution<int>(0, span - 1)(rng);
    for (int i = 0; i < span; ++i) {
      const int port = low + (start + i) % span;
      if (handed_out->count(port) == 0 && Bindable(port)) {
        handed_out->insert(port);
        return port;
      }
    }
  }
  int port = KernelPickedPort();
  for (int tries = 0; tries < 1000 && handed_out->count(port) > 0; ++tries) {
    port = KernelPickedPort();
  }
  handed_out->insert(port);
  return port;
}

}  // namespace gloowatch::testing
