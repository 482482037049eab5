// gloowatchd: probes every configured peer over Gloo pairs and exports the
// figures to Prometheus and a gRPC status API.
#include <malloc.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/config.h"
#include "common/exit_codes.h"
#include "common/flags.h"
#include "common/log.h"
#include "common/version.h"
#include "daemon/daemon.h"
#include "daemon/supervisor/transport_launcher.h"
#include "daemon/system/systemd_notify.h"
#include "google/protobuf/stubs/logging.h"
#include "transport/transport_main.h"

ABSL_FLAG(std::string, config, "/etc/gloowatch/gloowatchd.yaml", "Path of the YAML config");
ABSL_FLAG(std::string, check_config, "",
          "Validate this config file, print the result and exit (0 valid, 1 invalid)");
ABSL_FLAG(std::string, node, "",
          "This node's name, over the config's node:; the config's peers may then list "
          "this node too (one file for every host)");
ABSL_FLAG(bool, version, false, "Print the version and exit");
ABSL_FLAG(std::string, log_level, "info", "debug, info, warning or error");
// Internal: set by the daemon when it re-executes itself as its transport
// process (see daemon/transport.h).
ABSL_FLAG(int, transport_fd, -1, "internal");
ABSL_FLAG(std::string, gloo_address, "", "internal");

namespace gloowatch {
namespace {

bool ParseLogLevel(const std::string& name, LogLevel* level) {
  if (name == "debug")
    *level = LogLevel::kDebug;
  else if (name == "info")
    *level = LogLevel::kInfo;
  else if (name == "warning")
    *level = LogLevel::kWarning;
  else if (name == "error")
    *level = LogLevel::kError;
  else
    return false;
  return true;
}

// libprotobuf logs every request it cannot parse (invalid UTF-8 in a string
// field, say) at ERROR; a client could flood the journal with them.
void LogProtobuf(google::protobuf::LogLevel level, const char* /*file*/, int /*line*/,
                 const std::string& message) {
  static LogRateLimiter* const limiter = new LogRateLimiter(absl::Minutes(1), RealClock::Get());
  uint64_t suppressed = 0;
  if (!limiter->Allow(message.substr(0, 80), &suppressed)) return;
  const LogLevel ours = level >= google::protobuf::LOGLEVEL_ERROR     ? LogLevel::kError
                        : level == google::protobuf::LOGLEVEL_WARNING ? LogLevel::kWarning
                                                                      : LogLevel::kInfo;
  Log(ours, "protobuf: %s%s", message, SuppressedSuffix(suppressed));
}

ConfigOptions CommandLineConfigOptions() {
  ConfigOptions options;
  options.node = absl::GetFlag(FLAGS_node);
  return options;
}

// Ticks the daemon, answers systemd and the signals until SIGTERM or SIGINT.
// Under systemd (Type=notify): ready once both ports listen; watchdog pings
// only while every probe thread makes progress, so a hung Gloo call gets the
// service restarted.
void ServeUntilStopped(Daemon& daemon, const sigset_t& signals) {
  SystemdNotifier systemd;
  auto probing = [&daemon] {
    const v1::Topology topology = daemon.Status().topology();
    const size_t peers = topology.cluster_nodes() > 0 ? topology.cluster_nodes() - 1 : 0;
    const size_t probed = topology.probed_peers();
    return probed == peers ? absl::StrCat("probing ", peers, " peers")
                           : absl::StrCat("probing ", probed, " of ", peers, " peers (sampled)");
  };
  systemd.Ready(probing());
  absl::Duration loop_tick = absl::Seconds(1);
  if (systemd.watchdog_enabled()) {
    loop_tick = std::min(loop_tick, systemd.watchdog_interval() / 2);
  }
  bool healthy = true;
  while (true) {
    timespec tick = absl::ToTimespec(loop_tick);
    const int sig = sigtimedwait(&signals, nullptr, &tick);
    daemon.Tick();
    if (sig == SIGTERM || sig == SIGINT) {
      GW_LOG(kInfo, "signal %d: shutting down", sig);
      systemd.Stopping();
      break;
    }
    if (systemd.watchdog_enabled()) {
      const bool now_healthy = daemon.Healthy();
      if (now_healthy) systemd.WatchdogPing();
      if (now_healthy != healthy) {
        if (now_healthy) {
          GW_LOG(kInfo, "probe threads progress again; watchdog pings resumed");
        } else {
          GW_LOG(kError,
                 "a probe thread is stuck in a Gloo call; withholding watchdog pings "
                 "so that systemd restarts the daemon");
        }
        healthy = now_healthy;
      }
    }
    if (sig == SIGHUP) {
      systemd.Reloading();
      absl::StatusOr<Config> next =
          LoadConfigFile(absl::GetFlag(FLAGS_config), CommandLineConfigOptions());
      absl::Status reloaded = next.ok() ? daemon.Reload(*std::move(next)) : next.status();
      if (!reloaded.ok()) {
        GW_LOG(kError, "SIGHUP: reload refused, keeping the running config: %s",
               reloaded.message());
        // Where `systemctl status` shows it, not only in the journal.
        const std::string why(reloaded.message());
        systemd.Ready(absl::StrCat(probing(), "; last reload REFUSED: ",
                                   why.substr(0, std::min<size_t>(why.find('\n'), 200))));
      } else {
        systemd.Ready(probing());
      }
    }
  }
}

int CheckConfig(const std::string& path) {
  absl::StatusOr<Config> config = LoadConfigFile(path, CommandLineConfigOptions());
  if (!config.ok()) {
    std::cerr << config.status().message() << "\n";
    return 1;
  }
  std::cout << path << ": OK (node " << config->node << ", " << config->peers.size() << " peers)\n";
  return 0;
}

int Run() {
  if (absl::GetFlag(FLAGS_version)) {
    std::cout << "gloowatchd " << GLOOWATCH_VERSION << " (Gloo " << GLOOWATCH_GLOO_VERSION << ")\n";
    return 0;
  }
  LogLevel level;
  if (!ParseLogLevel(absl::GetFlag(FLAGS_log_level), &level)) {
    std::cerr << "gloowatchd: --log_level must be debug, info, warning or error\n";
    return kExitUsage;
  }
  SetLogLevel(level);
  google::protobuf::SetLogHandler(&LogProtobuf);

  if (const std::string path = absl::GetFlag(FLAGS_check_config); !path.empty()) {
    return CheckConfig(path);
  }

  if (const int fd = absl::GetFlag(FLAGS_transport_fd); fd >= 0) {
    signal(SIGPIPE, SIG_IGN);
    return RunTransport(absl::GetFlag(FLAGS_gloo_address), fd);
  }

  absl::StatusOr<Config> config =
      LoadConfigFile(absl::GetFlag(FLAGS_config), CommandLineConfigOptions());
  if (!config.ok()) {
    GW_LOG(kError, "%s", config.status().message());
    return kExitConfig;
  }

  // Signals are taken synchronously by this thread only; a peer that closes
  // a socket under us must not kill the process with SIGPIPE.
  signal(SIGPIPE, SIG_IGN);
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  absl::StatusOr<std::unique_ptr<Daemon>> daemon =
      Daemon::Start(*std::move(config), RealClock::Get(),
                    NewProcessLauncher("/proc/self/exe", absl::GetFlag(FLAGS_log_level)));
  if (!daemon.ok()) {
    GW_LOG(kError, "%s", daemon.status().message());
    return kExitUnavailable;
  }
  GW_LOG(kInfo, "gloowatchd %s ready", GLOOWATCH_VERSION);
  ServeUntilStopped(**daemon, signals);
  (*daemon)->Shutdown(absl::Seconds(1));
  daemon->reset();
  return 0;
}

}  // namespace
}  // namespace gloowatch

int main(int argc, char** argv) {
  // Every prober and responder is a thread, and glibc would give each thread
  // that allocates its own arena (up to 8 per core), each keeping what it
  // freed. Two arenas are plenty for our allocation rate. A fixed mmap
  // threshold keeps the bandwidth regions out of the arenas: the one the
  // gate keeps between transfers is its own mapping, and a larger one a
  // peer asked for goes back to the kernel when its transfer ends.
  mallopt(M_ARENA_MAX, 2);
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  // Debian's abseil is built without NDEBUG, so every Mutex lock would also
  // update a process-wide lock graph. The unit tests keep that check; the
  // daemon, with a lock per probe and a hundred threads, does not pay for it.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  const std::vector<std::string> flags = {"config", "check_config", "node", "version", "log_level"};
  if (gloowatch::WantsHelp(argc, argv, 1)) {
    std::cout << "usage: gloowatchd [--config FILE] [--node NAME] | --check-config FILE | "
                 "--version\n"
                 "Probes Gloo pairs to every configured peer and exports what it measures; see "
                 "docs/config.md.\n\nflags:\n"
              << gloowatch::DescribeFlags(flags)
              << "exit codes: 0 clean stop, 1 invalid config with --check-config, 64 bad flag,\n"
                 "  69 a port or the Gloo interface unavailable, 78 invalid config\n";
    return gloowatch::kExitOk;
  }
  // Dashes or underscores (--check-config, --check_config); the internal
  // flags of the transport process too.
  std::vector<std::string> allowed = flags;
  allowed.insert(allowed.end(), {"transport_fd", "gloo_address"});
  absl::StatusOr<std::vector<std::string>> args =
      gloowatch::ParseFlags(argc, argv, 1, {{}, allowed, {}});
  if (!args.ok() || !args->empty()) {
    std::cerr << "gloowatchd: "
              << (args.ok() ? "unexpected argument '" + args->front() + "'"
                            : std::string(args.status().message()))
              << " (gloowatchd --help)\n";
    return gloowatch::kExitUsage;
  }
  return gloowatch::Run();
}
