// What reading a training job's own sockets costs the daemon: a 64-rank job
// on one host has 64 x 63 Gloo pair ends there (both ends of 2,016
// connections), made here as loopback connections; JobSockets::Read (one
// sock_diag dump per family, matched by inode) runs on them as the daemon
// runs it every 5 s. Prints the CPU time per read and the share of a core at
// that interval, against the target (< 0.2%).
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "common/clock.h"
#include "daemon/training/job_sockets.h"

ABSL_FLAG(int, ranks, 64, "ranks of the job, all on this host");
ABSL_FLAG(int, reads, 20, "reads to time");
ABSL_FLAG(double, interval_seconds, 5, "the daemon's read interval");

namespace {

double CpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

// A network namespace of its own, with loopback up (needs root): the read
// then dumps the job's sockets, not whatever else this host holds. False
// when not allowed; the bench then runs where it is.
bool OwnNetworkNamespace() {
  if (unshare(CLONE_NEWNET) != 0) return false;
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ifreq ifr{};
  std::snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
  const bool up = fd >= 0 && ioctl(fd, SIOCGIFFLAGS, &ifr) == 0 &&
                  (ifr.ifr_flags |= IFF_UP, ioctl(fd, SIOCSIFFLAGS, &ifr) == 0);
  if (fd >= 0) close(fd);
  return up;
}

uint64_t Inode(int fd) {
  struct stat st {};
  fstat(fd, &st);
  return st.st_ino;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const int ranks = absl::GetFlag(FLAGS_ranks);
  const int connections = ranks * (ranks - 1) / 2;
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit.rlim_max;
  setrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_cur < static_cast<rlim_t>(2 * connections + 64)) {
    std::printf("job_sockets: needs %d file descriptors, the limit is %llu\n", 2 * connections + 64,
                static_cast<unsigned long long>(limit.rlim_cur));
    return 1;
  }
  const bool own = OwnNetworkNamespace();
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(listener, 4096)) {
    std::perror("job_sockets: listen");
    return 1;
  }
  socklen_t len = sizeof(a);
  getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len);
  std::unordered_map<uint64_t, gloowatch::JobSockets::Wanted> wanted;
  std::vector<int> fds;
  for (int i = 0; i < connections; ++i) {
    const int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connect(client, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      std::perror("job_sockets: connect");
      return 1;
    }
    const int server = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (server < 0) {
      std::perror("job_sockets: accept");
      return 1;
    }
    for (int fd : {client, server}) {
      fds.push_back(fd);
      wanted[Inode(fd)] = {};
    }
  }
  auto table = gloowatch::NewSockDiagSocketTable();
  gloowatch::JobSockets sockets(gloowatch::RealClock::Get(), table.get(), {});
  if (!sockets.Read(wanted).ok() || sockets.size() != wanted.size()) {
    std::printf("job_sockets: found %zu of %zu sockets\n", sockets.size(), wanted.size());
    return 1;
  }
  const int reads = absl::GetFlag(FLAGS_reads);
  std::vector<double> cpu;
  for (int i = 0; i < reads; ++i) {
    const double start = CpuSeconds();
    if (absl::Status s = sockets.Read(wanted); !s.ok()) {
      std::printf("job_sockets: %s\n", std::string(s.message()).c_str());
      return 1;
    }
    cpu.push_back(CpuSeconds() - start);
  }
  std::sort(cpu.begin(), cpu.end());
  const double median = cpu[cpu.size() / 2], worst = cpu.back();
  const double interval = absl::GetFlag(FLAGS_interval_seconds);
  const double share = median / interval;
  std::printf(
      "job_sockets: %d ranks on one host, %zu sockets (%d connections), %s: %.2f ms CPU "
      "per read (median of %d, worst %.2f ms)\n",
      ranks, wanted.size(), connections,
      own ? "in a network namespace of their own" : "among this host's other sockets", median * 1e3,
      reads, worst * 1e3);
  std::printf("job_sockets: one read every %.0f s: %.3f%% of a core (target < 0.2%%): %s\n",
              interval, 100 * share, share < 0.002 ? "met" : "SHORT");
  for (int fd : fds) close(fd);
  close(listener);
  return 0;
}
