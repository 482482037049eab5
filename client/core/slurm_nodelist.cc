#include "client/core/slurm_nodelist.h"

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gloowatch::client {
namespace {

// Top-level entries: commas inside brackets belong to the brackets.
absl::StatusOr<std::vector<std::string>> SplitTopLevel(absl::string_view text) {
  std::vector<std::string> out;
  std::string current;
  int depth = 0;
  for (char c : text) {
    if (c == '[') {
      if (++depth > 1) return absl::InvalidArgumentError("nested '[' in the host list");
    } else if (c == ']') {
      if (--depth < 0) return absl::InvalidArgumentError("']' without '[' in the host list");
    }
    if (c == ',' && depth == 0) {
      out.push_back(std::move(current));
      current.clear();
      continue;
    }
    current.push_back(c);
  }
  if (depth != 0) return absl::InvalidArgumentError("unclosed '[' in the host list");
  out.push_back(std::move(current));
  return out;
}

std::string Padded(uint64_t n, size_t width) {
  std::string s = absl::StrCat(n);
  if (s.size() < width) s.insert(0, width - s.size(), '0');
  return s;
}

// The values of one bracket group, e.g. "01-03,7".
absl::StatusOr<std::vector<std::string>> ExpandGroup(absl::string_view group, size_t max_names) {
  std::vector<std::string> out;
  for (absl::string_view part : absl::StrSplit(group, ',')) {
    std::vector<absl::string_view> bounds = absl::StrSplit(part, absl::MaxSplits('-', 1));
    uint64_t low = 0, high = 0;
    auto numeric = [](absl::string_view s) {
      return !s.empty() && s.size() <= 9 &&
             std::all_of(s.begin(), s.end(), [](char c) { return absl::ascii_isdigit(c); });
    };
    if (!numeric(bounds[0]) || (bounds.size() == 2 && !numeric(bounds[1]))) {
      return absl::InvalidArgumentError(
          absl::StrCat("'[", group, "]': '", part, "' is not a number or a range N-M"));
    }
    absl::SimpleAtoi(bounds[0], &low);
    high = low;
    if (bounds.size() == 2) absl::SimpleAtoi(bounds[1], &high);
    if (low > high) {
      return absl::InvalidArgumentError(
          absl::StrCat("'[", group, "]': range ", part, " runs backwards"));
    }
    if (high - low + out.size() >= max_names) {
      return absl::InvalidArgumentError(
          absl::StrCat("'[", group, "]' names more than ", max_names, " hosts"));
    }
    for (uint64_t n = low; n <= high; ++n) out.push_back(Padded(n, bounds[0].size()));
  }
  return out;
}

absl::Status ExpandEntry(absl::string_view entry, size_t max_names, std::vector<std::string>* out) {
  std::vector<std::string> names = {""};
  while (!entry.empty()) {
    const size_t open = entry.find('[');
    const absl::string_view literal = entry.substr(0, open);
    for (std::string& n : names) absl::StrAppend(&n, literal);
    if (open == absl::string_view::npos) break;
    const size_t close = entry.find(']', open);
    absl::StatusOr<std::vector<std::string>> values =
        ExpandGroup(entry.substr(open + 1, close - open - 1), max_names);
    if (!values.ok()) return values.status();
    if (names.size() * values->size() > max_names) {
      return absl::InvalidArgumentError(
          absl::StrCat("the host list names more than ", max_names, " hosts"));
    }
    std::vector<std::string> next;
    for (const std::string& n : names) {
      for (const std::string& v : *values) next.push_back(absl::StrCat(n, v));
    }
    names = std::move(next);
    entry.remove_prefix(close + 1);
  }
  for (std::string& n : names) {
    if (out->size() >= max_names) {
      return absl::InvalidArgumentError(
          absl::StrCat("the host list names more than ", max_names, " hosts"));
    }
    out->push_back(std::move(n));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ExpandNodeList(absl::string_view text, size_t max_names) {
  absl::StatusOr<std::vector<std::string>> entries = SplitTopLevel(text);
  if (!entries.ok()) return entries.status();
  std::vector<std::string> out;
  for (const std::string& raw : *entries) {
    absl::string_view entry = absl::StripAsciiWhitespace(raw);
    if (entry.empty()) continue;
    if (absl::Status s = ExpandEntry(entry, max_names, &out); !s.ok()) return s;
  }
  if (out.empty()) return absl::InvalidArgumentError("the host list is empty");
  return out;
}

}  // namespace gloowatch::client
