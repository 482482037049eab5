#include "client/core/run_command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace gloowatch::client {
namespace {

constexpr size_t kMaxOutput = 1 << 20;

}  // namespace

absl::StatusOr<CommandOutput> RunProgram(const std::vector<std::string>& argv,
                                         absl::Duration timeout) {
  if (argv.empty()) return absl::InvalidArgumentError("no program to run");
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  }
  if (pid == 0) {
    // Its own process group, so a timeout kills what it started too.
    setpgid(0, 0);
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    const int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    execvp(args[0], args.data());
    const std::string msg = absl::StrCat("cannot run ", argv[0], ": ", std::strerror(errno), "\n");
    (void)!write(STDERR_FILENO, msg.data(), msg.size());
    _exit(127);
  }
  close(fds[1]);
  CommandOutput out;
  const absl::Time deadline = absl::Now() + timeout;
  bool timed_out = false;
  for (;;) {
    const int64_t left = absl::ToInt64Milliseconds(deadline - absl::Now());
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int r = poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    char buf[4096];
    const ssize_t n = read(fds[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: the program (and its children) closed the pipe
    if (out.output.size() < kMaxOutput) out.output.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  // A program may close its output and still run: its exit is bounded by
  // the same deadline.
  while (!timed_out) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) break;
    if (absl::Now() >= deadline) {
      timed_out = true;
      break;
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  if (timed_out) {
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (timed_out) {
    return absl::DeadlineExceededError(absl::StrCat(argv[0], " did not finish within ",
                                                    absl::FormatDuration(timeout), "; killed it"));
  }
  if (WIFEXITED(status)) {
    out.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    out.exit_code = 128 + WTERMSIG(status);
  }
  if (out.exit_code == 127 && out.output.rfind("cannot run ", 0) == 0) {
    return absl::NotFoundError(out.output.substr(0, out.output.find('\n')));
  }
  return out;
}

}  // namespace gloowatch::client
