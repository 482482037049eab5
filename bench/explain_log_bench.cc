// explain-log throughput and memory on a large log: a training job's output
// with Gloo failures sprinkled in, written to a temporary file and read back
// through OpenLog as the CLI does. Prints MB/s against the target and how
// much the resident set grew (it must not grow with the file).
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "client/explain_log/explain_log.h"
#include "client/explain_log/log_input.h"

ABSL_FLAG(int, megabytes, 256, "Size of the generated log");
ABSL_FLAG(double, target_mb_per_second, 100, "Throughput target");

namespace {

// This process's CPU time (user and system), seconds: the scan's cost on one
// core whatever else the machine runs, where wall time also counts the
// waits of a shared machine.
double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

long RssKiB() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// Lines as a torch.distributed Gloo job prints them; one in 2,000 a failure.
void WriteLog(const std::string& path, size_t bytes) {
  const char* normal[] = {
      "2024-05-01 12:00:00,123 INFO train.py:88 epoch 3 step 1200 loss 0.5132 lr 3.0e-4 "
      "throughput 1834.2 samples/s",
      "[W socket.cpp:663] [c10d] The client socket has failed to connect to [localhost]:29500 "
      "(errno: 97 - Address family not supported by protocol).",
      "  File \"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py\", line "
      "1536, in all_reduce",
      "rank 3: grad norm 1.2331, clip 1.0, tokens 65536, time 0.231 s",
  };
  const char* failures[] = {
      "RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out "
      "waiting 1800000ms for recv operation to complete",
      "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by "
      "peer [10.0.0.2]:42311",
  };
  std::ofstream out(path, std::ios::binary);
  size_t written = 0;
  for (size_t i = 0; written < bytes; ++i) {
    const std::string line = i % 2000 == 1999 ? failures[(i / 2000) % 2] : normal[i % 4];
    out << line << '\n';
    written += line.size() + 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const size_t bytes = static_cast<size_t>(absl::GetFlag(FLAGS_megabytes)) << 20;
  char path[] = "/tmp/gloowatch_explain_bench_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return 1;
  close(fd);
  WriteLog(path, bytes);
  // Warm the page cache and the signature table, so the figure is the scan.
  {
    auto warm = gloowatch::client::OpenLog(path);
    if (!warm.ok()) return 1;
    std::string line;
    while (std::getline(**warm, line)) {
    }
  }
  const long rss_before = RssKiB();
  auto in = gloowatch::client::OpenLog(path);
  if (!in.ok()) return 1;
  const absl::Time start = absl::Now();
  const double cpu_start = CpuSeconds();
  const gloowatch::client::LogExplanation e = gloowatch::client::ExplainLog(**in, path);
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  const double cpu_seconds = CpuSeconds() - cpu_start;
  const long rss_after = RssKiB();
  std::remove(path);
  const double mb_per_second = bytes / 1e6 / seconds;
  const double target = absl::GetFlag(FLAGS_target_mb_per_second);
  // On a shared machine the wall time includes waiting for a core; the CPU
  // time is what the scan itself costs.
  std::cout << absl::StrFormat(
      "explain-log: %d MiB, %d lines, %d signatures in %.2f s: %.0f MB/s (target >= %.0f MB/s, "
      "one core): %s\n",
      bytes >> 20, e.lines, e.hits.size(), seconds, mb_per_second, target,
      mb_per_second >= target ? "met" : "SHORT");
  std::cout << absl::StrFormat(
      "explain-log on-CPU: %.2f s of CPU time, %.0f MB/s per core busy (the scan alone, whatever "
      "the machine's load)\n",
      cpu_seconds, bytes / 1e6 / cpu_seconds);
  std::cout << absl::StrFormat(
      "explain-log memory: resident set grew %.1f MiB over the %d MiB scan (target: flat, < 16 "
      "MiB): %s\n",
      (rss_after - rss_before) / 1024.0, bytes >> 20,
      rss_after - rss_before < 16 * 1024 ? "met" : "SHORT");
  return 0;
}
