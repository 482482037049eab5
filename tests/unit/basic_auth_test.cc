// BasicAuth: bcrypt hashes as htpasswd and the exporter toolkit use them,
// remembered credentials, and a bound on bcrypt work under a flood.
#include "daemon/http/basic_auth.h"

#include <crypt.h>

#include <string>

#include "absl/strings/escaping.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace gloowatch {
namespace {

std::string Bcrypt(const std::string& password, const char* prefix = "$2b$") {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  EXPECT_NE(crypt_gensalt_rn(prefix, 4, nullptr, 0, salt, sizeof(salt)), nullptr);
  crypt_data data{};
  const char* hash = crypt_r(password.c_str(), salt, &data);
  EXPECT_NE(hash, nullptr);
  return hash;
}

std::string Header(const std::string& user_password) {
  return "Basic " + absl::Base64Escape(user_password);
}

TEST(BasicAuthTest, AcceptsTheRightUserAndPasswordOnly) {
  for (const char* prefix : {"$2b$", "$2y$", "$2a$"}) {
    BasicAuth auth("prometheus", Bcrypt("s3cret: with colon", prefix), 100);
    const absl::Time now = absl::Now();
    EXPECT_EQ(auth.Check(Header("prometheus:s3cret: with colon"), now),
              BasicAuth::Verdict::kAllowed)
        << prefix;
    EXPECT_EQ(auth.Check("basic " + absl::Base64Escape("prometheus:s3cret: with colon"), now),
              BasicAuth::Verdict::kAllowed);
    for (const std::string& bad :
         {Header("prometheus:s3cret"), Header("Prometheus:s3cret: with colon"),
          Header("prometheus"), std::string("Bearer abc"), std::string("Basic !!!"),
          std::string(""), std::string("Basic")}) {
      EXPECT_EQ(auth.Check(bad, now), BasicAuth::Verdict::kDenied) << bad;
    }
  }
}

TEST(BasicAuthTest, UnknownCredentialsAreVerifiedAtMostNTimesASecond) {
  BasicAuth auth("prometheus", Bcrypt("right"), 3);
  absl::Time now = absl::FromUnixSeconds(1000);
  // Known-good credentials, remembered after their first check, pass even
  // while a flood of wrong passwords is being turned away.
  ASSERT_EQ(auth.Check(Header("prometheus:right"), now), BasicAuth::Verdict::kAllowed);
  EXPECT_EQ(auth.Check(Header("prometheus:wrong1"), now), BasicAuth::Verdict::kDenied);
  EXPECT_EQ(auth.Check(Header("prometheus:wrong2"), now), BasicAuth::Verdict::kDenied);
  EXPECT_EQ(auth.Check(Header("prometheus:wrong3"), now), BasicAuth::Verdict::kTooManyAttempts);
  EXPECT_EQ(auth.Check(Header("prometheus:right"), now), BasicAuth::Verdict::kAllowed);
  now += absl::Seconds(1);
  EXPECT_EQ(auth.Check(Header("prometheus:wrong3"), now), BasicAuth::Verdict::kDenied);
}

}  // namespace
}  // namespace gloowatch
