// Coverage of explain-log measured against what the software can say, not
// against the logs we happen to have: client/explain_log/catalogue/*.tsv lists
// the error, warning and information texts of Gloo, torch.distributed and the
// launchers around them, each with the cause it stands for (a signature id) or
// `not_a_cause` and why. This test fails when an entry is unclassified or
// malformed, and when a line built from an entry's template -- placeholders
// filled with plausible values, alone and behind the prefixes launchers and
// log collectors put on lines -- is not explained as that entry says: its
// cause found on that line (the root cause when it was printed as an error),
// the values the entry lists quoted in the detail, and no error at all for a
// line that is not a cause.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/explain_log/explain_log.h"
#include "gtest/gtest.h"
#include "re2/re2.h"
#include "tests/support/subprocess.h"

namespace gloowatch::client {
namespace {

constexpr absl::string_view kHeader =
    "id\ttemplate\tproject\tfile\tfunction\treleases\tseverity\tcause\tnote\tvalues";

struct Entry {
  std::string source;  // catalogue file and line, for messages
  std::string id, text, project, file, function, releases, severity, cause, note;
  std::vector<std::string> values;  // placeholders whose value the detail must quote
};

// One plausible value per placeholder. Distinct values, so a detail that
// quotes the wrong field is caught; addresses of private ranges, as logs show.
const std::map<std::string, std::string>& Fill() {
  static const auto* fill = new std::map<std::string, std::string>{
      {"src_line", "598"},
      {"date", "0501"},
      {"time", "12:00:00.123456789"},
      {"host", "node-b"},
      {"host2", "node-a"},
      {"ip", "10.1.2.5"},
      {"port", "29500"},
      {"port2", "41234"},
      {"peer", "[10.1.2.5]:41234"},
      {"rank", "3"},
      {"rank2", "5"},
      {"size", "8"},
      {"n", "2"},
      {"m", "6"},
      {"n2", "7"},
      {"timeout_ms", "1800000"},
      {"timeout_s", "900"},
      {"ms", "1800123"},
      {"seq", "1580"},
      {"key", "rank_5"},
      {"path", "/job/rdzv/shared"},
      {"iface", "eth7"},
      {"pid", "4242"},
      {"fd", "12"},
      {"scheme", "envv"},
      {"value", "4(x2)"},
      {"run_id", "job42"},
  };
  return *fill;
}

// How lines reach a log: alone, and behind a rank tag (PyTorch's, torchrun's
// --tee), Ray's worker tag, srun --label, a journald line, a Python logging
// timestamp.
const std::vector<std::string>& Prefixes() {
  static const auto* prefixes = new std::vector<std::string>{
      "",
      "[rank3]:",
      "[default3]:",
      "(RayTrainWorker pid=4242, ip=10.1.2.5) ",
      "3: ",
      "May  1 12:00:00 node-b python3[4242]: ",
      "2024-05-01 12:00:00,123 ",
  };
  return *prefixes;
}

std::vector<std::string> Placeholders(absl::string_view text) {
  static const RE2* placeholder = new RE2(R"(\{([a-z_0-9]+)\})");
  std::vector<std::string> names;
  re2::StringPiece in(text.data(), text.size());
  std::string name;
  while (RE2::FindAndConsume(&in, *placeholder, &name)) names.push_back(name);
  return names;
}

std::string Instantiate(const std::string& text) {
  std::string out = text;
  for (const auto& [name, value] : Fill()) {
    const std::string from = absl::StrCat("{", name, "}");
    for (size_t at = out.find(from); at != std::string::npos;
         at = out.find(from, at + value.size())) {
      out.replace(at, from.size(), value);
    }
  }
  return out;
}

std::string CatalogueDir() {
  return gloowatch::testing::SourceDir() + "/client/explain_log/catalogue";
}

std::vector<Entry> ReadCatalogue(std::vector<std::string>* problems) {
  std::vector<Entry> entries;
  std::vector<std::filesystem::path> files;
  for (const auto& f : std::filesystem::directory_iterator(CatalogueDir())) {
    if (f.path().extension() == ".tsv") files.push_back(f.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& path : files) {
    std::ifstream in(path);
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
      ++number;
      const std::string where = absl::StrCat(path.filename().string(), ":", number);
      if (number == 1) {
        if (line != kHeader) problems->push_back(absl::StrCat(where, ": header is not ", kHeader));
        continue;
      }
      if (line.empty()) continue;
      std::vector<std::string> f = absl::StrSplit(line, '\t');
      if (f.size() != 10) {
        problems->push_back(absl::StrCat(where, ": ", f.size(), " fields, not 10"));
        continue;
      }
      Entry e{where, f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], {}};
      if (f[9] != "-") e.values = absl::StrSplit(f[9], ',');
      entries.push_back(std::move(e));
    }
  }
  return entries;
}

const LogSignature* FindSignature(absl::string_view id) {
  for (const auto& s : LogSignatures()) {
    if (id == s.id) return &s;
  }
  return nullptr;
}

// What is wrong with how explain-log reads `line` for `entry`, or "".
std::string Judge(const Entry& entry, const std::string& line) {
  std::istringstream in(line + "\n");
  const LogExplanation e = ExplainLog(in, "catalogue");
  std::vector<std::string> got;
  for (const auto& h : e.hits)
    got.push_back(absl::StrCat(h.id, "(", LogSeverityName(h.severity), ")"));
  const std::string seen = got.empty() ? "no signature" : absl::StrJoin(got, ", ");
  if (entry.cause == "not_a_cause") {
    return e.root_cause < 0 ? "" : absl::StrCat("an error where there is none: ", seen);
  }
  if (e.hits.size() != 1 || e.hits[0].id != entry.cause) {
    return absl::StrCat("expected ", entry.cause, ", got ", seen);
  }
  const SignatureHit& h = e.hits[0];
  if (entry.severity == "error" && h.signature->severity == LogSeverity::kError &&
      e.root_cause != 0) {
    return absl::StrCat("printed as an error but not reported as one: ", seen);
  }
  for (const auto& value : entry.values) {
    const std::string filled = Instantiate(absl::StrCat("{", value, "}"));
    if (!absl::StrContains(h.detail, filled)) {
      return absl::StrCat("detail \"", h.detail, "\" does not quote ", value, " (", filled, ")");
    }
  }
  return "";
}

TEST(ExplainLogCatalogue, EveryEntryIsWellFormedAndClassified) {
  std::vector<std::string> problems;
  const std::vector<Entry> entries = ReadCatalogue(&problems);
  std::set<std::string> ids;
  const std::set<std::string> severities = {"error", "warning", "info", "debug"};
  for (const Entry& e : entries) {
    auto problem = [&](const std::string& what) {
      problems.push_back(absl::StrCat(e.source, " ", e.id, ": ", what));
    };
    if (e.id.empty() || !ids.insert(e.id).second) problem("id empty or repeated");
    if (e.text.empty()) problem("no template");
    for (const std::string* field : {&e.project, &e.file, &e.function, &e.releases}) {
      if (field->empty()) problem("a source field is empty (project, file, function, releases)");
    }
    if (!severities.count(e.severity)) problem(absl::StrCat("severity '", e.severity, "'"));
    if (e.cause.empty() || e.cause == "-") {
      problem("unclassified");
    } else if (e.cause == "not_a_cause") {
      if (e.note.empty() || e.note == "-") problem("not_a_cause without why");
    } else if (FindSignature(e.cause) == nullptr) {
      problem(absl::StrCat("cause '", e.cause, "' is no signature"));
    }
    const std::vector<std::string> names = Placeholders(e.text);
    for (const auto& name : names) {
      if (!Fill().count(name)) problem(absl::StrCat("placeholder {", name, "} has no value"));
    }
    for (const auto& value : e.values) {
      if (std::find(names.begin(), names.end(), value) == names.end()) {
        problem(absl::StrCat("value '", value, "' is no placeholder of the template"));
      }
    }
  }
  EXPECT_GE(entries.size(), 500u);
  EXPECT_TRUE(problems.empty()) << absl::StrJoin(problems, "\n");
}

TEST(ExplainLogCatalogue, EveryTemplateIsExplainedAsItsEntrySays) {
  std::vector<std::string> problems;
  const std::vector<Entry> entries = ReadCatalogue(&problems);
  std::map<std::string, std::pair<int, int>> by_project;  // right, all (entry x prefix)
  std::vector<std::string> misses;
  for (const Entry& entry : entries) {
    const std::string line = Instantiate(entry.text);
    for (const std::string& prefix : Prefixes()) {
      auto& [right, all] = by_project[entry.project];
      ++all;
      const std::string wrong = Judge(entry, prefix + line);
      if (wrong.empty()) {
        ++right;
      } else {
        misses.push_back(
            absl::StrCat(entry.source, " ", entry.id, " [prefix \"", prefix, "\"]: ", wrong));
      }
    }
  }
  std::ostringstream report;
  for (const auto& [project, counts] : by_project) {
    report << project << ": " << counts.first << "/" << counts.second << " lines explained\n";
  }
  std::cout << report.str();
  RecordProperty("coverage", report.str());
  EXPECT_TRUE(misses.empty()) << misses.size() << " lines not explained as catalogued:\n"
                              << absl::StrJoin(misses, "\n");
}

}  // namespace
}  // namespace gloowatch::client
