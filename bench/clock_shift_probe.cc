// clock_shift_probe: prints how far this process's clocks are shifted from
// the kernel's, as seen through the calls gloowatchd makes. Run it under the
// same LD_PRELOAD/FAKETIME environment as a daemon to learn the shift that
// libfaketime really applies (the "true" offset the benchmark compares with).
//
// Each line is `name shift_ns`:
//   realtime   clock_gettime(CLOCK_REALTIME) through libc (what libfaketime
//              intercepts) minus the kernel's CLOCK_REALTIME
//   absl_now   absl::Now() (the daemon's wall clock) minus the kernel's
//   monotonic  clock_gettime(CLOCK_MONOTONIC) through libc minus the kernel's
//              (must be 0: the daemon times durations with it)
// The kernel's clocks are read with a raw system call, which libfaketime does
// not see. Each figure is the median of many interleaved reads, so the cost
// of a read does not bias it by more than a few hundred nanoseconds.
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace {

int64_t Nanos(const timespec& ts) { return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec; }

// The kernel's clock, bypassing libc (and so any LD_PRELOAD interposer).
int64_t KernelNanos(clockid_t id) {
  timespec ts{};
#if defined(__x86_64__)
  // libfaketime can also intercept syscall(3); the instruction itself it cannot.
  long ret;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "0"(static_cast<long>(SYS_clock_gettime)), "D"(static_cast<long>(id)), "S"(&ts)
                   : "rcx", "r11", "memory");
  (void)ret;
#else
  syscall(SYS_clock_gettime, id, &ts);
#endif
  return Nanos(ts);
}

int64_t LibcNanos(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return Nanos(ts);
}

template <typename Read>
int64_t MedianShift(Read read, clockid_t kernel_clock) {
  constexpr int kReads = 2001;
  std::vector<int64_t> shifts;
  shifts.reserve(kReads);
  for (int i = 0; i < kReads; ++i) {
    // Kernel before and after: the midpoint is when `read` ran.
    const int64_t before = KernelNanos(kernel_clock);
    const int64_t value = read();
    const int64_t after = KernelNanos(kernel_clock);
    shifts.push_back(value - (before + (after - before) / 2));
  }
  std::nth_element(shifts.begin(), shifts.begin() + kReads / 2, shifts.end());
  return shifts[kReads / 2];
}

}  // namespace

int main() {
  std::printf("realtime %lld\n", static_cast<long long>(MedianShift(
                                     [] { return LibcNanos(CLOCK_REALTIME); }, CLOCK_REALTIME)));
  std::printf("absl_now %lld\n",
              static_cast<long long>(
                  MedianShift([] { return absl::ToUnixNanos(absl::Now()); }, CLOCK_REALTIME)));
  std::printf("monotonic %lld\n", static_cast<long long>(MedianShift(
                                      [] { return LibcNanos(CLOCK_MONOTONIC); }, CLOCK_MONOTONIC)));
  return 0;
}
