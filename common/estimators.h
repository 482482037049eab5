// Pure statistics used by the probes: clock offset from four timestamps,
// sliding-window percentiles, capped exponential backoff.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <random>
#include <vector>

#include "absl/time/time.h"

namespace gloowatch {

// One NTP-style exchange: t0 we send, t1 peer receives, t2 peer sends, t3 we
// receive. t0/t3 are our wall clock, t1/t2 the peer's.
struct TimestampSample {
  absl::Time t0, t1, t2, t3;
};

struct OffsetEstimate {
  absl::Duration offset;  // peer clock minus ours: ((t1-t0)+(t2-t3))/2
  absl::Duration delay;   // network round trip: (t3-t0)-(t2-t1)
  absl::Duration error;   // delay/2: |true offset - offset| <= error
};

OffsetEstimate EstimateOffset(const TimestampSample& s);

// The sample with the smallest delay wins (least queueing, tightest bound).
// Samples with negative delay (clock stepped mid-exchange) are skipped;
// nullopt when none is usable.
std::optional<OffsetEstimate> BestOffset(const std::vector<TimestampSample>& samples);

// Keeps (time, value) samples younger than `window`, plus at most
// `max_samples` of them, and answers percentiles over what is kept.
class PercentileWindow {
 public:
  PercentileWindow(absl::Duration window, size_t max_samples = 4096);
  void Add(absl::Time at, double value);
  // Drops samples older than now - window.
  void Expire(absl::Time now);
  // Nearest-rank percentile, q in [0, 1]; nullopt when empty.
  std::optional<double> Percentile(double q) const;
  size_t size() const { return samples_.size(); }
  absl::Duration window() const { return window_; }

 private:
  absl::Duration window_;
  size_t max_samples_;
  std::deque<std::pair<absl::Time, double>> samples_;
};

// Capped exponential backoff with full jitter on top of a floor:
// the n-th consecutive failure waits uniform[initial*2^(n-1)/2, initial*2^(n-1)],
// never more than max. Reset() after a success.
class Backoff {
 public:
  Backoff(absl::Duration initial, absl::Duration max, uint64_t seed = 0);
  absl::Duration Next();
  void Reset() { failures_ = 0; }
  int failures() const { return failures_; }

 private:
  absl::Duration initial_, max_;
  int failures_ = 0;
  std::mt19937_64 rng_;
};

// interval scaled by a uniform factor in [1-jitter, 1+jitter].
absl::Duration Jittered(absl::Duration interval, double jitter, std::mt19937_64& rng);

}  // namespace gloowatch
