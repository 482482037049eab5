#include "common/user_text.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace gloowatch {

std::string Clip(absl::string_view text) {
  constexpr size_t kShown = 48;
  if (text.size() <= kShown) return absl::CHexEscape(text);
  return absl::StrCat(absl::CHexEscape(text.substr(0, kShown)), "...");
}

std::string Quote(absl::string_view text) { return absl::StrCat("'", Clip(text), "'"); }

}  // namespace gloowatch
