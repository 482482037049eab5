#include "tests/support/free_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <set>

#include "absl/synchronization/mutex.h"

namespace gloowatch::testing {
namespace {

int KernelPickedPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
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
  // The kernel may pick a just-closed port again: a cluster whose daemons
  // were handed the same port twice never comes up. Never repeat one.
  static absl::Mutex mu;
  static auto* handed_out = new std::set<int>;
  absl::MutexLock lock(&mu);
  int port = KernelPickedPort();
  for (int tries = 0; tries < 1000 && handed_out->count(port) > 0; ++tries) {
    port = KernelPickedPort();
  }
  handed_out->insert(port);
  return port;
}

}  // namespace gloowatch::testing
