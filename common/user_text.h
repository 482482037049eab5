// Text that came from outside (a config file, an RPC field) shown inside our
// own messages: escaped and truncated, so hostile input cannot inject lines,
// hide characters or balloon an error past a client's metadata limit.
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace gloowatch {

// C-escaped (a NUL byte shows as \x00), at most 48 characters of the input
// followed by "..." when longer.
std::string Clip(absl::string_view text);
// Clip(text) in single quotes.
std::string Quote(absl::string_view text);

}  // namespace gloowatch
