#include "common/flags.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"

namespace gloowatch {
namespace {

// Edit distance with adjacent swaps (optimal string alignment): "deamons"
// is one edit from "daemons", as a typist sees it.
size_t EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

// "; did you mean --daemons?" for a flag name close to one the command
// takes, spelled with dashes when the user typed dashes.
std::string Suggestion(absl::string_view typed, const std::string& name,
                       const std::vector<std::string>& allowed) {
  std::string match = ClosestMatch(name, allowed);
  if (match.empty()) return "";
  if (typed.find('-') != absl::string_view::npos) {
    std::replace(match.begin(), match.end(), '_', '-');
  }
  return absl::StrCat("; did you mean --", match, "?");
}

}  // namespace

std::string ClosestMatch(absl::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = 3;  // at most 2 edits
  for (const std::string& c : candidates) {
    const size_t d = EditDistance(word, c);
    if (d < best_distance && d * 2 < word.size()) {
      best = c;
      best_distance = d;
    }
  }
  if (!best.empty() || word.size() < 3) return best;
  for (const std::string& c : candidates) {
    if (!absl::StartsWith(c, word)) continue;
    if (!best.empty()) return "";  // ambiguous
    best = c;
  }
  return best;
}

absl::StatusOr<std::vector<std::string>> ParseFlags(int argc, char** argv, int start,
                                                    const FlagRules& rules) {
  const std::vector<std::string>& repeatable = rules.repeatable;
  std::vector<std::string> positional;
  std::map<std::string, std::vector<std::string>> repeated;
  for (int i = start; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      for (++i; i < argc; ++i) positional.push_back(argv[i]);
      break;
    }
    if (arg == "-" || !absl::StartsWith(arg, "-")) {
      positional.push_back(arg);
      continue;
    }
    std::string body = arg.substr(absl::StartsWith(arg, "--") ? 2 : 1);
    std::string name = body, value;
    bool has_value = false;
    if (auto eq = body.find('='); eq != std::string::npos) {
      name = body.substr(0, eq);
      value = body.substr(eq + 1);
      has_value = true;
    }
    // Accept --report-path for --report_path: dashes read better on a CLI.
    std::replace(name.begin(), name.end(), '-', '_');
    if (auto alias = rules.aliases.find(name); alias != rules.aliases.end()) name = alias->second;
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    bool negated = false;
    if (flag == nullptr && absl::StartsWith(name, "no")) {
      flag = absl::FindCommandLineFlag(name.substr(2));
      negated = flag != nullptr && flag->IsOfType<bool>();
      if (!negated) flag = nullptr;
    }
    if (flag == nullptr || absl::StartsWith(flag->Filename(), "absl/")) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag '", arg, "'",
                       Suggestion(body.substr(0, body.find('=')), name, rules.allowed)));
    }
    if (!rules.allowed.empty() && std::find(rules.allowed.begin(), rules.allowed.end(),
                                            flag->Name()) == rules.allowed.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("flag '--", flag->Name(), "' does not apply to this command",
                       Suggestion(body.substr(0, body.find('=')), name, rules.allowed)));
    }
    if (flag->IsOfType<bool>() && !has_value) {
      value = negated ? "false" : "true";
    } else if (!has_value) {
      if (i + 1 >= argc) {
        return absl::InvalidArgumentError(absl::StrCat("flag '--", name, "' needs a value"));
      }
      value = argv[++i];
    }
    if (std::find(repeatable.begin(), repeatable.end(), flag->Name()) != repeatable.end()) {
      repeated[std::string(flag->Name())].push_back(value);
      continue;
    }
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad value '", value, "' for --", flag->Name(), ": ", error));
    }
  }
  for (const auto& [name, values] : repeated) {
    std::string error;
    std::string joined = absl::StrJoin(values, ",");
    if (!absl::FindCommandLineFlag(name)->ParseFrom(joined, &error)) {
      return absl::InvalidArgumentError(absl::StrCat("bad value for --", name, ": ", error));
    }
  }
  return positional;
}

bool WantsHelp(int argc, char** argv, int start) {
  for (int i = start; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (arg == "--") return false;
    if (arg == "--help" || arg == "-h" || arg == "-help") return true;
  }
  return false;
}

std::string DescribeFlags(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) {
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr) continue;
    const std::string value = flag->DefaultValue();
    absl::StrAppend(&out, "  --", name, value.empty() ? "" : absl::StrCat("=", value), "\n      ",
                    flag->Help(), "\n");
  }
  return out;
}

}  // namespace gloowatch
