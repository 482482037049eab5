#include "daemon/http/basic_auth.h"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <algorithm>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"

namespace gloowatch {
namespace {

constexpr size_t kRememberedCredentials = 4;

bool SameBytes(absl::string_view a, absl::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace

BasicAuth::BasicAuth(std::string user, std::string bcrypt_hash, int verifications_per_second)
    : user_(std::move(user)),
      hash_(std::move(bcrypt_hash)),
      verifications_per_second_(verifications_per_second) {}

BasicAuth::~BasicAuth() = default;

bool BasicAuth::Verify(absl::string_view user, absl::string_view password) const {
  if (!SameBytes(user, user_)) return false;
  // crypt_r's state is 32 KiB: on the heap, not the server thread's stack.
  auto data = std::make_unique<crypt_data>();
  const std::string key(password);
  const char* computed = crypt_r(key.c_str(), hash_.c_str(), data.get());
  return computed != nullptr && SameBytes(computed, hash_);
}

BasicAuth::Verdict BasicAuth::Check(absl::string_view authorization, absl::Time now) {
  absl::string_view encoded = absl::StripAsciiWhitespace(authorization);
  // The scheme is case-insensitive (RFC 7617).
  if (encoded.size() < 6 || !absl::StartsWithIgnoreCase(encoded, "basic ")) {
    return Verdict::kDenied;
  }
  encoded = absl::StripLeadingAsciiWhitespace(encoded.substr(6));
  std::string credentials;
  if (!absl::Base64Unescape(encoded, &credentials)) return Verdict::kDenied;
  const size_t colon = credentials.find(':');
  if (colon == std::string::npos) return Verdict::kDenied;

  Digest digest;
  SHA256(reinterpret_cast<const unsigned char*>(credentials.data()), credentials.size(),
         digest.data());
  for (const Digest& known : accepted_) {
    if (CRYPTO_memcmp(known.data(), digest.data(), digest.size()) == 0) return Verdict::kAllowed;
  }
  if (now - window_start_ >= absl::Seconds(1)) {
    window_start_ = now;
    verifications_in_window_ = 0;
  }
  if (verifications_in_window_ >= verifications_per_second_) return Verdict::kTooManyAttempts;
  ++verifications_in_window_;
  if (!Verify(absl::string_view(credentials).substr(0, colon),
              absl::string_view(credentials).substr(colon + 1))) {
    return Verdict::kDenied;
  }
  accepted_.push_front(digest);
  if (accepted_.size() > kRememberedCredentials) accepted_.pop_back();
  return Verdict::kAllowed;
}

}  // namespace gloowatch
