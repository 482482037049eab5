// HTTP basic auth against one user's bcrypt hash, as Prometheus' exporter
// toolkit checks it. bcrypt is slow on purpose (tens of milliseconds), and
// the /metrics server has one thread: accepted credentials are remembered
// (their SHA-256, never the password), and at most a few unknown ones are
// verified per second, so a flood of wrong passwords cannot stall scrapes.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace gloowatch {

class BasicAuth {
 public:
  enum class Verdict { kAllowed, kDenied, kTooManyAttempts };

  BasicAuth(std::string user, std::string bcrypt_hash, int verifications_per_second = 4);
  ~BasicAuth();
  BasicAuth(const BasicAuth&) = delete;
  BasicAuth& operator=(const BasicAuth&) = delete;

  // `authorization` is the Authorization header's value ("Basic <base64>"),
  // empty when there was none. `now` paces the bcrypt verifications.
  Verdict Check(absl::string_view authorization, absl::Time now);

 private:
  using Digest = std::array<uint8_t, 32>;
  bool Verify(absl::string_view user, absl::string_view password) const;

  const std::string user_;
  const std::string hash_;
  const int verifications_per_second_;
  std::deque<Digest> accepted_;  // most recent first, a few at most
  absl::Time window_start_ = absl::InfinitePast();
  int verifications_in_window_ = 0;
};

}  // namespace gloowatch
