// Scores `explain-log` on a corpus of real failure logs that users posted in
// public issue threads (tests/client/corpus/, one excerpt per file, cited in
// manifest.tsv). Absolute paths of the posters' machines are shortened
// to ".../" and their last four components (shortened=yes): no cause is read
// from a path's prefix, and no machine's layout is kept in the tree. Each row names the cause a
// correct reading gives and the 1-based line of the log that shows it (for a failure, the ROOT
// cause: the OOM-killed rank, not the peers' timeouts that follow).
//
// Scoring rule:
//  - A failure log is right when ExplainLog's root cause is the expected id
//    (or one listed in also_ok) AND hits[root_cause].line_of_example equals
//    the manifest line exactly. Exact equality, not "anywhere in
//    first_line..last_line of that hit": a hit can span the whole log
//    (dozens of repeated retries), so the wider rule would accept a root
//    cause shown far from the line a human points at. line_of_example is the
//    first line at the hit's worst severity, which is what the manifest
//    records (e.g. the "[E socket.cpp]" line after "[W socket.cpp]" retries).
//  - A healthy log (the run worked, possibly printing warnings) is right when
//    it has no error at all (root_cause == -1).
//
// It fails below 90% of the failures right on the right line, on any false
// alarm on a healthy log, and below the score measured when the corpus last
// grew (a regression); raise that floor as signatures improve. A held-out set
// outside the repository is scored the same way: tune to causes, not to
// these files. Every miss is printed with the file, the
// expected cause and line, and what explain-log said.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "client/explain_log/explain_log.h"
#include "gtest/gtest.h"
#include "tests/support/subprocess.h"

namespace gloowatch::client {
namespace {

// Measured with the signatures of 2026-12-08, after the fourth held-out
// round (28 logs of threads the corpus had not seen: 21 of 22 failures right
// by the corpus's rules before any change, and no false alarm on 6 healthy
// logs; two of the misses were one cause, a log that ends on the store's
// bind warnings, now its root cause). The misses left: two logs of only the
// store host's IPv6 lookup failing, which a run that goes on prints too (a
// healthy log of the corpus is that line alone), a traceback pasted up to
// its `raise _env_error("MASTER_ADDR")` line without the exception,
// DeepSpeed's ssh check cut before DeepSpeed's own error (its
// CalledProcessError alone), a loopback pair connect timeout of a one-host
// Horovod test read as the wrong interface, and macOS's uv_accept failing
// under a security product read as a local socket error; a floor only.
constexpr int kMinFailuresRight = 292;
// The corpus's size, so that a file dropped from the manifest fails too.
constexpr int kMinFailures = 298;
constexpr int kMinHealthy = 33;
constexpr int kMaxHealthyFalseAlarms = 0;

struct Row {
  std::string file, source, kind, cause;
  int line = 0;
  std::vector<std::string> also_ok;
  std::string shortened, fix;
};

std::string CorpusDir() { return gloowatch::testing::SourceDir() + "/tests/client/corpus"; }

std::vector<Row> ReadManifest() {
  std::ifstream in(CorpusDir() + "/manifest.tsv");
  EXPECT_TRUE(in.good()) << "cannot open " << CorpusDir() << "/manifest.tsv";
  std::vector<Row> rows;
  std::string text;
  bool header = true;
  while (std::getline(in, text)) {
    if (text.empty()) continue;
    std::vector<std::string> f = absl::StrSplit(text, '\t');
    if (header) {
      EXPECT_EQ(absl::StrJoin(f, ","), "file,source,kind,cause,line,also_ok,shortened,fix");
      header = false;
      continue;
    }
    EXPECT_EQ(f.size(), 8u) << text;
    if (f.size() != 8) continue;
    Row r;
    r.file = f[0];
    r.source = f[1];
    r.kind = f[2];
    r.cause = f[3];
    r.line = f[4] == "-" ? 0 : std::atoi(f[4].c_str());
    if (f[5] != "-") r.also_ok = absl::StrSplit(f[5], ',');
    r.shortened = f[6];
    r.fix = f[7];
    rows.push_back(std::move(r));
  }
  return rows;
}

LogExplanation Explain(const Row& r) {
  std::ifstream in(CorpusDir() + "/" + r.file, std::ios::binary);
  EXPECT_TRUE(in.good()) << r.file;
  return ExplainLog(in, r.file);
}

std::string Got(const LogExplanation& e) {
  if (e.root_cause < 0) {
    std::vector<std::string> ids;
    for (const auto& h : e.hits)
      ids.push_back(absl::StrCat(h.id, "(", LogSeverityName(h.severity), ")"));
    return absl::StrCat("no error", ids.empty() ? "" : "; hits: ", absl::StrJoin(ids, ", "));
  }
  const SignatureHit& h = e.hits[e.root_cause];
  return absl::StrCat(h.id, " @ line ", h.line_of_example);
}

TEST(ExplainLogCorpus, ManifestIsWellFormed) {
  const std::vector<Row> rows = ReadManifest();
  ASSERT_FALSE(rows.empty());
  std::set<std::string> listed;
  std::set<std::string> ids;
  for (const auto& s : LogSignatures()) ids.insert(s.id);
  for (const Row& r : rows) {
    SCOPED_TRACE(r.file);
    EXPECT_TRUE(listed.insert(r.file).second) << "listed twice";
    EXPECT_TRUE(r.kind == "failure" || r.kind == "healthy") << r.kind;
    EXPECT_TRUE(r.shortened == "yes" || r.shortened == "no") << r.shortened;
    EXPECT_FALSE(r.source.empty());
    if (r.kind == "failure") {
      EXPECT_FALSE(r.cause.empty() || r.cause == "-");
      EXPECT_GT(r.line, 0);
      EXPECT_FALSE(r.fix.empty() || r.fix == "-");
      // The expected line must exist in the excerpt.
      std::ifstream in(CorpusDir() + "/" + r.file);
      int lines = 0;
      for (std::string l; std::getline(in, l);) ++lines;
      EXPECT_LE(r.line, lines);
    } else {
      EXPECT_EQ(r.cause, "-");
    }
  }
  // Every excerpt in the directory is in the manifest.
  for (const auto& entry : std::filesystem::directory_iterator(CorpusDir())) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() == ".log") {
      EXPECT_TRUE(listed.count(name)) << name << " not listed";
    }
  }
}

TEST(ExplainLogCorpus, Score) {
  const std::vector<Row> rows = ReadManifest();
  int failures = 0, right = 0, healthy = 0, false_alarms = 0;
  std::vector<std::string> misses;
  std::set<std::string> ids;
  for (const auto& s : LogSignatures()) ids.insert(s.id);
  std::set<std::string> uncovered;  // expected causes no signature has yet
  for (const Row& r : rows) {
    const LogExplanation e = Explain(r);
    if (r.kind == "healthy") {
      ++healthy;
      if (e.root_cause >= 0) {
        ++false_alarms;
        misses.push_back(absl::StrCat(r.file, ": expected no error, got ", Got(e)));
      }
      continue;
    }
    ++failures;
    if (!ids.count(r.cause)) uncovered.insert(r.cause);
    bool ok = false;
    if (e.root_cause >= 0) {
      const SignatureHit& h = e.hits[e.root_cause];
      const bool id_ok =
          h.id == r.cause || std::find(r.also_ok.begin(), r.also_ok.end(), h.id) != r.also_ok.end();
      ok = id_ok && h.line_of_example == r.line;
    }
    if (ok) {
      ++right;
    } else {
      misses.push_back(absl::StrCat(
          r.file, ": expected ", r.cause, " @ line ", r.line,
          r.also_ok.empty() ? "" : absl::StrCat(" (or ", absl::StrJoin(r.also_ok, ","), ")"),
          ", got ", Got(e)));
    }
  }
  const double pct = failures ? 100.0 * right / failures : 0.0;
  std::ostringstream report;
  report << "right cause on right line: " << right << "/" << failures << " = "
         << static_cast<int>(pct * 10 + 0.5) / 10.0
         << "%; false alarms on healthy: " << false_alarms << "/" << healthy << "\n";
  for (const auto& m : misses) report << "  MISS " << m << "\n";
  if (!uncovered.empty())
    report << "  causes no signature covers yet: " << absl::StrJoin(uncovered, ", ") << "\n";
  std::cout << report.str();
  RecordProperty("score", report.str());

  EXPECT_GE(failures, kMinFailures);
  EXPECT_GE(healthy, kMinHealthy);
  EXPECT_GE(right * 10, failures * 9) << "below 90%\n" << report.str();
  EXPECT_GE(right, kMinFailuresRight) << report.str();
  EXPECT_LE(false_alarms, kMaxHealthyFalseAlarms) << report.str();
}

// The corpus as a user pastes it from a terminal or a form that wraps long
// lines: every line wider than `width` columns is cut into lines of at most
// that many, the prefix not repeated, trailing blanks trimmed as a copy
// does. `word` breaks at the last blank before the width (a form, `fold
// -s`), else exactly at the width (a terminal, mid-word). `first_of` maps
// each original line (1-based) to the wrapped line it starts on.
std::string Wrap(const std::string& text, size_t width, bool word, std::vector<int>* first_of) {
  std::string out;
  int physical = 0;
  first_of->assign(1, 0);
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    first_of->push_back(physical + 1);
    // Columns are UTF-8 code points.
    std::vector<size_t> starts;
    for (size_t i = 0; i < line.size(); ++i) {
      if ((static_cast<unsigned char>(line[i]) & 0xc0) != 0x80) starts.push_back(i);
    }
    size_t column = 0;
    do {
      size_t end_column = std::min(starts.size(), column + width);
      size_t next_column = end_column;
      if (word && end_column < starts.size()) {
        for (size_t c = end_column; c > column + width / 2; --c) {
          if (line[starts[c]] == ' ') {
            end_column = c;
            next_column = c + 1;
            break;
          }
        }
      }
      const size_t from = column < starts.size() ? starts[column] : line.size();
      const size_t to = end_column < starts.size() ? starts[end_column] : line.size();
      absl::StrAppend(&out, absl::StripTrailingAsciiWhitespace(line.substr(from, to - from)), "\n");
      ++physical;
      column = next_column;
    } while (column < starts.size());
  }
  return out;
}

struct Score {
  int failures = 0, right = 0, healthy = 0, false_alarms = 0;
  std::vector<std::string> misses;
};

Score ScoreWrapped(size_t width, bool word) {
  Score score;
  for (const Row& r : ReadManifest()) {
    std::ifstream file(CorpusDir() + "/" + r.file, std::ios::binary);
    std::stringstream text;
    text << file.rdbuf();
    std::vector<int> first_of;
    std::istringstream in(Wrap(text.str(), width, word, &first_of));
    const LogExplanation e = ExplainLog(in, r.file);
    if (r.kind == "healthy") {
      ++score.healthy;
      if (e.root_cause >= 0) {
        ++score.false_alarms;
        score.misses.push_back(absl::StrCat(r.file, ": expected no error, got ", Got(e)));
      }
      continue;
    }
    ++score.failures;
    const int line = first_of.at(r.line);
    bool ok = false;
    if (e.root_cause >= 0) {
      const SignatureHit& h = e.hits[e.root_cause];
      ok = (h.id == r.cause ||
            std::find(r.also_ok.begin(), r.also_ok.end(), h.id) != r.also_ok.end()) &&
           h.line_of_example == line;
    }
    if (ok) {
      ++score.right;
    } else {
      score.misses.push_back(
          absl::StrCat(r.file, ": expected ", r.cause, " @ line ", line, ", got ", Got(e)));
    }
  }
  return score;
}

// Wrapping must not cost the explanation: a message cut over two or three
// lines is matched on the line it starts on, and no wrap makes a false
// alarm. Floors measured on 2026-12-07 on 276 failures (269 right
// unwrapped; before the reading stage joined wraps, 80 of 163 cut at 80
// columns and 76 word-wrapped at 80; see docs/client.md).
TEST(ExplainLogCorpus, WrappedByATerminalOrAForm) {
  struct Case {
    size_t width;
    bool word;
    int min_right;
  };
  for (const Case& c : {Case{60, false, 244}, Case{80, false, 259}, Case{100, false, 266},
                        Case{120, false, 264}, Case{160, false, 267}, Case{60, true, 247},
                        Case{80, true, 255}, Case{100, true, 259}, Case{120, true, 264}}) {
    const Score s = ScoreWrapped(c.width, c.word);
    std::ostringstream report;
    report << (c.word ? "word-wrapped" : "cut") << " at " << c.width << ": " << s.right << "/"
           << s.failures << " right, false alarms " << s.false_alarms << "/" << s.healthy << "\n";
    for (const auto& m : s.misses) report << "  MISS " << m << "\n";
    std::cout << report.str();
    EXPECT_GE(s.failures, kMinFailures);
    EXPECT_GE(s.right, c.min_right) << report.str();
    EXPECT_EQ(s.false_alarms, 0) << report.str();
  }
}

}  // namespace
}  // namespace gloowatch::client
