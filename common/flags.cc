#include "common/flags.h"

#include <algorithm>
#include <map>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"

namespace gloowatch {

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
      return absl::InvalidArgumentError(absl::StrCat("unknown flag '", arg, "'"));
    }
    if (!rules.allowed.empty() && std::find(rules.allowed.begin(), rules.allowed.end(),
                                            flag->Name()) == rules.allowed.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("flag '--", flag->Name(), "' does not apply to this command"));
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
