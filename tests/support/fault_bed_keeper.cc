#include "tests/support/fault_bed_keeper.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"

namespace gloowatch::testing {
namespace {

// The keeper stops itself after this long in all, or this long without a
// request: the catalogue's rows take about 15 minutes on one bed.
constexpr absl::Duration kLifetime = absl::Hours(1);
constexpr absl::Duration kIdle = absl::Minutes(15);
constexpr absl::Duration kUpBound = absl::Minutes(4);

// Closes the fd on every path.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

bool SocketAddress(const std::string& path, sockaddr_un* addr) {
  *addr = {};
  addr->sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr->sun_path)) return false;
  std::memcpy(addr->sun_path, path.c_str(), path.size() + 1);
  return true;
}

// A connected socket to the keeper, or -1.
int Connect(const std::string& path) {
  sockaddr_un addr;
  if (!SocketAddress(path, &addr)) return -1;
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = send(fd, text.data() + done, text.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// Reads one line (without its newline) within `deadline`; false on EOF,
// error or timeout.
class LineReader {
 public:
  explicit LineReader(int fd) : fd_(fd) {}
  bool Next(std::string* line, absl::Time deadline) {
    while (true) {
      const size_t nl = buffer_.find('\n');
      if (nl != std::string::npos) {
        *line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return true;
      }
      const int64_t left = absl::ToInt64Milliseconds(deadline - absl::Now());
      if (left <= 0) return false;
      pollfd p{fd_, POLLIN, 0};
      const int r = poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
      if (r < 0 && errno != EINTR) return false;
      if (r <= 0) continue;
      char buf[65536];
      const ssize_t n = read(fd_, buf, sizeof(buf));
      if (n <= 0) return false;
      buffer_.append(buf, static_cast<size_t>(n));
    }
  }

 private:
  int fd_;
  std::string buffer_;
};

std::string OneLine(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

// The keeper: serves requests until "down", its lifetime or its idle bound.
void Serve(FaultBed& bed, int listener, std::ostream& log) {
  const absl::Time born = absl::Now();
  absl::Time last_request = born;
  while (absl::Now() - born < kLifetime && absl::Now() - last_request < kIdle) {
    pollfd p{listener, POLLIN, 0};
    if (poll(&p, 1, 1000) <= 0) continue;
    Fd client(accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
    if (client.get() < 0) continue;
    LineReader reader(client.get());
    std::string request;
    if (!reader.Next(&request, absl::Now() + absl::Seconds(10))) continue;
    last_request = absl::Now();
    std::vector<std::string> words = absl::StrSplit(request, ' ', absl::SkipWhitespace());
    if (words.empty()) continue;
    if (words[0] == "ping") {
      WriteAll(client.get(), "pong\n");
    } else if (words[0] == "down") {
      log << "down requested" << std::endl;
      WriteAll(client.get(), "bye\n");
      return;
    } else if (words[0] == "run" && words.size() == 3) {
      RowOptions options;
      int healthy_seconds = 0;
      if (absl::SimpleAtoi(words[2], &healthy_seconds) && healthy_seconds > 0) {
        options.healthy_duration = absl::Seconds(healthy_seconds);
      }
      log << "run " << words[1] << std::endl;
      // A client that went away does not stop the row: the bed is left clean.
      const int fd = client.get();
      CatalogueLog to_client = [fd, &log](const std::string& line) {
        log << line << std::endl;
        WriteAll(fd, absl::StrCat("log ", OneLine(line), "\n"));
      };
      CatalogueLog previous = bed.SwapLog(to_client);
      const RowResult result = RunRow(bed, words[1], options);
      bed.SwapLog(previous);
      WriteAll(client.get(), absl::StrCat("result ", ToJson(result).dump(), "\n"));
      last_request = absl::Now();
    } else {
      WriteAll(client.get(), absl::StrCat("error unknown request: ", OneLine(request), "\n"));
    }
  }
  log << "stopping: " << (absl::Now() - born >= kLifetime ? "lifetime" : "idle") << " bound"
      << std::endl;
}

// The keeper process: builds the bed, tells `ready_fd` ("ok" or the error),
// serves. Its exit removes the bed (NetnsCluster's destructor, or its signal
// handlers on SIGTERM).
int RunKeeper(const KeeperPaths& paths, CatalogueBed kind, CatalogueSchedule schedule,
              int ready_fd) {
  std::ofstream log(paths.log, std::ios::app);
  auto to_log = [&log](const std::string& line) { log << line << std::endl; };
  absl::StatusOr<std::unique_ptr<FaultBed>> bed = FaultBed::Create(kind, schedule, to_log);
  if (!bed.ok()) {
    const std::string why = OneLine(bed.status().ToString());
    log << "bed: " << why << std::endl;
    WriteAll(ready_fd, absl::StrCat("error ", why, "\n"));
    return 1;
  }
  sockaddr_un addr;
  if (!SocketAddress(paths.socket, &addr)) {
    WriteAll(ready_fd, "error socket path too long\n");
    return 1;
  }
  unlink(paths.socket.c_str());
  Fd listener(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (listener.get() < 0 ||
      bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listener.get(), 4) != 0) {
    WriteAll(ready_fd, absl::StrCat("error cannot listen on ", paths.socket, "\n"));
    return 1;
  }
  std::ofstream(paths.pid) << getpid() << std::endl;
  WriteAll(ready_fd, "ok\n");
  close(ready_fd);
  Serve(**bed, listener.get(), log);
  bed->reset();
  unlink(paths.socket.c_str());
  unlink(paths.pid.c_str());
  log << "bed removed" << std::endl;
  return 0;
}

std::string Ask(const std::string& socket, const std::string& request, absl::Duration timeout) {
  Fd fd(Connect(socket));
  if (fd.get() < 0 || !WriteAll(fd.get(), request + "\n")) return "";
  LineReader reader(fd.get());
  std::string line;
  return reader.Next(&line, absl::Now() + timeout) ? line : "";
}

pid_t KeeperPid(const KeeperPaths& paths) {
  std::ifstream in(paths.pid);
  pid_t pid = 0;
  in >> pid;
  return pid;
}

}  // namespace

KeeperPaths KeeperPathsOf(const std::string& dir, CatalogueBed bed) {
  const std::string base = absl::StrCat(dir, "/", CatalogueBedName(bed));
  return {base + ".sock", base + ".pid", base + ".log"};
}

bool KeeperAlive(const std::string& dir, CatalogueBed bed) {
  return Ask(KeeperPathsOf(dir, bed).socket, "ping", absl::Seconds(5)) == "pong";
}

int KeeperUp(const std::string& dir, CatalogueBed bed, CatalogueSchedule schedule) {
  const std::string reason = NetnsUnavailableReason();
  if (!reason.empty()) {
    // ctest's SKIP_REGULAR_EXPRESSION, as gtest prints it.
    std::cout << "[  SKIPPED ] netns harness unavailable: " << reason << std::endl;
    return 0;
  }
  if (KeeperAlive(dir, bed)) {
    std::cout << CatalogueBedName(bed) << " bed already up (" << dir << ")" << std::endl;
    return 0;
  }
  mkdir(dir.c_str(), 0755);
  const KeeperPaths paths = KeeperPathsOf(dir, bed);
  int ready[2];
  if (pipe2(ready, O_CLOEXEC) != 0) {
    std::cerr << "pipe: " << strerror(errno) << std::endl;
    return 1;
  }
  const pid_t child = fork();
  if (child < 0) {
    std::cerr << "fork: " << strerror(errno) << std::endl;
    return 1;
  }
  if (child == 0) {
    close(ready[0]);
    // A session of its own, and no stdio of ctest's: ctest waits for the
    // test's output to end, and must not wait for the keeper.
    setsid();
    const int null = open("/dev/null", O_RDWR);
    const int log = open(paths.log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (null >= 0) dup2(null, 0);
    if (log >= 0) {
      dup2(log, 1);
      dup2(log, 2);
    }
    signal(SIGPIPE, SIG_IGN);
    _exit(RunKeeper(paths, bed, schedule, ready[1]));
  }
  close(ready[1]);
  Fd from_keeper(ready[0]);
  LineReader reader(from_keeper.get());
  std::string line;
  const absl::Time deadline = absl::Now() + kUpBound;
  bool answered = reader.Next(&line, deadline);
  if (!answered) {
    // The pipe can read as closed before the keeper's "ok" (the bed's
    // subprocesses handle descriptors of their own): the socket says.
    while (absl::Now() < deadline && waitpid(child, nullptr, WNOHANG) == 0) {
      if (KeeperAlive(dir, bed)) {
        answered = true;
        line = "ok";
        break;
      }
      absl::SleepFor(absl::Milliseconds(200));
    }
  }
  if (answered && line == "ok") {
    std::cout << CatalogueBedName(bed) << " bed up: keeper pid " << child << ", log " << paths.log
              << std::endl;
    return 0;
  }
  std::cerr << CatalogueBedName(bed)
            << " bed not up: " << (answered ? line : "no answer from the keeper") << "\n";
  std::ifstream log(paths.log);
  std::cerr << log.rdbuf() << std::endl;
  kill(child, SIGTERM);
  return 1;
}

int KeeperDown(const std::string& dir, CatalogueBed bed) {
  const KeeperPaths paths = KeeperPathsOf(dir, bed);
  const pid_t pid = KeeperPid(paths);
  const std::string answer = Ask(paths.socket, "down", absl::Seconds(30));
  if (pid > 0) {
    // The keeper removes its bed (daemons, namespaces) before it exits.
    const absl::Time deadline = absl::Now() + absl::Seconds(60);
    while (kill(pid, 0) == 0 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(100));
    if (kill(pid, 0) == 0) {
      std::cerr << "keeper " << pid << " did not stop: SIGTERM" << std::endl;
      kill(pid, SIGTERM);  // its signal handlers remove the namespaces
      absl::SleepFor(absl::Seconds(5));
      kill(pid, SIGKILL);
    }
  }
  DeleteStaleNamespaces();
  std::cout << CatalogueBedName(bed) << " bed down" << (answer == "bye" ? "" : " (no keeper)")
            << std::endl;
  return 0;
}

absl::StatusOr<RowResult> RunRowOnKeeper(const std::string& dir, CatalogueBed bed,
                                         const std::string& row, absl::Duration healthy,
                                         absl::Duration timeout, const CatalogueLog& log) {
  const KeeperPaths paths = KeeperPathsOf(dir, bed);
  Fd fd(Connect(paths.socket));
  if (fd.get() < 0) {
    return absl::UnavailableError(absl::StrCat("no keeper at ", paths.socket));
  }
  if (!WriteAll(fd.get(), absl::StrCat("run ", row, " ", absl::ToInt64Seconds(healthy), "\n"))) {
    return absl::UnavailableError("the keeper closed the connection");
  }
  LineReader reader(fd.get());
  const absl::Time deadline = absl::Now() + timeout;
  std::string line;
  while (reader.Next(&line, deadline)) {
    absl::string_view rest = line;
    if (absl::ConsumePrefix(&rest, "log ")) {
      if (log) log(std::string(rest));
    } else if (absl::ConsumePrefix(&rest, "result ")) {
      nlohmann::json j = nlohmann::json::parse(rest, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded()) return absl::DataLossError("the keeper's result is not JSON");
      return RowResultFromJson(j);
    } else {
      return absl::InternalError(absl::StrCat("keeper: ", line));
    }
  }
  return absl::DeadlineExceededError(absl::StrCat("no result for ", row, " within ",
                                                  absl::FormatDuration(timeout), " (keeper log ",
                                                  paths.log, ")"));
}

}  // namespace gloowatch::testing
