#include "daemon/supervisor/transport_launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"

namespace gloowatch {
namespace {

std::string DescribeExit(int status) {
  if (WIFEXITED(status)) return absl::StrCat("exited with code ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return absl::StrCat("was killed by signal ", WTERMSIG(status), " (",
                        strsignal(WTERMSIG(status)), ")");
  }
  return absl::StrCat("ended with status ", status);
}

class TransportProcess final : public LaunchedTransport {
 public:
  explicit TransportProcess(pid_t pid) : pid_(pid) {}
  // Never leaves a zombie, even if the supervisor did not wait.
  ~TransportProcess() override {
    if (!reaped_) {
      Kill();
      Wait();
    }
  }

  std::string name() const override { return absl::StrCat("process ", pid_); }
  pid_t pid() const override { return pid_; }
  void Kill() override { kill(pid_, SIGKILL); }
  std::string Wait() override {
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    return DescribeExit(status);
  }

 private:
  const pid_t pid_;
  bool reaped_ = false;
};

class ProcessLauncher final : public TransportLauncher {
 public:
  ProcessLauncher(std::string executable, std::string log_level)
      : executable_(std::move(executable)), log_level_(std::move(log_level)) {}

  absl::StatusOr<std::unique_ptr<LaunchedTransport>> Launch(
      int fd, const std::string& gloo_address) override {
    // Everything the child needs is built before fork: after it, only
    // async-signal-safe calls.
    std::vector<std::string> args = {executable_, "--transport_fd=3",
                                     absl::StrCat("--gloo_address=", gloo_address),
                                     absl::StrCat("--log_level=", log_level_)};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
      if (fd == 3) {
        fcntl(3, F_SETFD, 0);  // dup2 onto itself would keep close-on-exec
      } else {
        dup2(fd, 3);
      }
      execv(argv[0], argv.data());
      _exit(127);
    }
    const int fork_error = errno;
    close(fd);  // the child has its copy
    if (pid < 0) return absl::UnavailableError(absl::StrCat("fork: ", strerror(fork_error)));
    return std::make_unique<TransportProcess>(pid);
  }

 private:
  const std::string executable_;
  const std::string log_level_;
};

}  // namespace

std::unique_ptr<TransportLauncher> NewProcessLauncher(std::string executable,
                                                      std::string log_level) {
  return std::make_unique<ProcessLauncher>(std::move(executable), std::move(log_level));
}

}  // namespace gloowatch
