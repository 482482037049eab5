// "1 daemon", "3 daemons": a count and its noun, agreeing.
#pragma once

#include <cstddef>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace gloowatch::client {

// `plural` defaults to the noun with an "s".
inline std::string Counted(size_t n, absl::string_view noun, absl::string_view plural = "") {
  if (n == 1) return absl::StrCat(n, " ", noun);
  return plural.empty() ? absl::StrCat(n, " ", noun, "s") : absl::StrCat(n, " ", plural);
}

}  // namespace gloowatch::client
