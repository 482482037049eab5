#include "common/estimators.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gloowatch {

OffsetEstimate EstimateOffset(const TimestampSample& s) {
  OffsetEstimate e;
  e.offset = ((s.t1 - s.t0) + (s.t2 - s.t3)) / 2;
  e.delay = (s.t3 - s.t0) - (s.t2 - s.t1);
  e.error = e.delay / 2;
  return e;
}

std::optional<OffsetEstimate> BestOffset(const std::vector<TimestampSample>& samples) {
  std::optional<OffsetEstimate> best;
  for (const TimestampSample& s : samples) {
    OffsetEstimate e = EstimateOffset(s);
    if (e.delay < absl::ZeroDuration()) continue;
    if (!best || e.delay < best->delay) best = e;
  }
  return best;
}

PercentileWindow::PercentileWindow(absl::Duration window, size_t max_samples)
    : window_(window), max_samples_(max_samples) {}

void PercentileWindow::Add(absl::Time at, double value) {
  samples_.emplace_back(at, value);
  Expire(at);
  while (samples_.size() > max_samples_) samples_.pop_front();
}

void PercentileWindow::Expire(absl::Time now) {
  const absl::Time cutoff = now - window_;
  // Samples normally arrive in time order, but a wall-clock step can break
  // that, so scan everything rather than only the front.
  samples_.erase(std::remove_if(samples_.begin(), samples_.end(),
                                [cutoff](const auto& s) { return s.first < cutoff; }),
                 samples_.end());
}

std::optional<double> PercentileWindow::Percentile(double q) const {
  if (samples_.empty()) return std::nullopt;
  if (!(q >= 0.0)) q = 0.0;  // also catches NaN
  if (q > 1.0) q = 1.0;
  std::vector<double> values;
  values.reserve(samples_.size());
  for (const auto& s : samples_) values.push_back(s.second);
  // Nearest rank: the smallest value with at least q*N values at or below it.
  // The epsilon keeps 0.07*100 = 7.000000000000001 at rank 7, not 8.
  const size_t n = values.size();
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(n) - 1e-9));
  rank = std::clamp<size_t>(rank, 1, n);
  auto nth = values.begin() + static_cast<std::ptrdiff_t>(rank - 1);
  std::nth_element(values.begin(), nth, values.end());
  return *nth;
}

Backoff::Backoff(absl::Duration initial, absl::Duration max, uint64_t seed)
    : initial_(initial), max_(max), rng_(seed) {}

absl::Duration Backoff::Next() {
  if (failures_ < std::numeric_limits<int>::max()) ++failures_;
  if (initial_ <= absl::ZeroDuration() || max_ <= absl::ZeroDuration()) {
    return absl::ZeroDuration();
  }
  // Double step by step so large failure counts cannot overflow.
  absl::Duration base = std::min(initial_, max_);
  for (int i = 1; i < failures_ && base < max_; ++i) {
    base = base > max_ / 2 ? max_ : base * 2;
  }
  const int64_t hi = absl::ToInt64Nanoseconds(base);
  const int64_t lo = hi / 2;
  return absl::Nanoseconds(std::uniform_int_distribution<int64_t>(lo, hi)(rng_));
}

absl::Duration Jittered(absl::Duration interval, double jitter, std::mt19937_64& rng) {
  if (!(jitter > 0.0)) return interval;  // exact, and leaves rng untouched
  jitter = std::min(jitter, 1.0);
  const double factor = std::uniform_real_distribution<double>(1.0 - jitter, 1.0 + jitter)(rng);
  return interval * factor;
}

}  // namespace gloowatch
