#include "tests/support/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "absl/time/clock.h"

namespace gloowatch::testing {

ProcessResult RunProcess(const std::vector<std::string>& argv,
                         const std::optional<std::map<std::string, std::string>>& env,
                         const std::string& stdin_data, absl::Duration timeout) {
  ProcessResult r;
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    r.err = "pipe failed";
    return r;
  }
  std::vector<std::string> env_strings;
  if (env) {
    for (const auto& [k, v] : *env) env_strings.push_back(k + "=" + v);
  }
  pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    setpgid(0, 0);
    std::vector<char*> args, envp;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    if (env) {
      for (auto& e : env_strings) envp.push_back(e.data());
      envp.push_back(nullptr);
      execve(args[0], args.data(), envp.data());
    } else {
      execv(args[0], args.data());
    }
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  size_t written = 0;
  if (stdin_data.empty()) {
    close(in[1]);
    in[1] = -1;
  } else {
    fcntl(in[1], F_SETFL, O_NONBLOCK);
  }
  signal(SIGPIPE, SIG_IGN);
  const absl::Time deadline = absl::Now() + timeout;
  bool out_open = true, err_open = true;
  while (out_open || err_open) {
    int ms = static_cast<int>(absl::ToInt64Milliseconds(deadline - absl::Now()));
    if (ms <= 0) {
      r.timed_out = true;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      break;
    }
    pollfd fds[3] = {{out_open ? out[0] : -1, POLLIN, 0},
                     {err_open ? err[0] : -1, POLLIN, 0},
                     {in[1], POLLOUT, 0}};
    if (poll(fds, 3, ms) < 0) continue;
    char buf[65536];
    for (int k = 0; k < 2; ++k) {
      if (fds[k].revents == 0) continue;
      ssize_t n = read(fds[k].fd, buf, sizeof buf);
      if (n <= 0) {
        (k == 0 ? out_open : err_open) = false;
      } else {
        (k == 0 ? r.out : r.err).append(buf, n);
      }
    }
    if (in[1] >= 0 && fds[2].revents != 0) {
      ssize_t n = write(in[1], stdin_data.data() + written, stdin_data.size() - written);
      if (n > 0) written += n;
      if (n < 0 || written == stdin_data.size()) {
        close(in[1]);
        in[1] = -1;
      }
    }
  }
  if (in[1] >= 0) close(in[1]);
  close(out[0]);
  close(err[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  return r;
}

}  // namespace gloowatch::testing
