#include "transport/transport_main.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "common/clock.h"
#include "common/exit_codes.h"
#include "transport/transport.h"

namespace gloowatch {

int RunTransport(const std::string& gloo_address, int fd) {
  // The daemon's death must end us too, even if it could not tell us.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() == 1) return kExitOk;
  // The daemon's thread that started us had its signals blocked.
  sigset_t none;
  sigemptyset(&none);
  pthread_sigmask(SIG_SETMASK, &none, nullptr);
  // A preflight of N hosts holds up to about 2N sockets at once (its Gloo
  // pairs and the reverse round's connects): take the hard limit, as systemd
  // expects of a program that needs more than its soft default of 1024.
  rlimit files;
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }
  // Never freed: the process ends with _Exit, around threads that may be
  // inside Gloo calls or sending a heartbeat, rather than tear down what they
  // use.
  auto* transport = new Transport(gloo_address, fd, RealClock::Get());
  const int code = transport->Run();
  std::fflush(stderr);
  std::_Exit(code);
}

}  // namespace gloowatch
