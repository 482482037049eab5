#include "client/explain_log/explain_log.h"

#include <algorithm>
#include <memory>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "client/core/plural.h"
#include "re2/re2.h"
#include "re2/set.h"

namespace gloowatch::client {
namespace {

// RE2 matches in linear time, so a huge or binary file costs a scan, not a
// backtracking blow-up. Lines are cut at 1 MiB: Ray and some launchers put a
// whole traceback on one line.
constexpr size_t kMaxLineBytes = 1 << 20;
constexpr size_t kExampleBytes = 300;
constexpr size_t kDetailBytes = 200;

RE2::Options MatchOptions(bool case_sensitive) {
  RE2::Options options;
  options.set_case_sensitive(case_sensitive);
  options.set_log_errors(false);
  options.set_encoding(RE2::Options::EncodingLatin1);  // logs may hold any bytes
  return options;
}

// Every signature in one automaton: a line costs one pass whatever the size
// of the table, and most lines match none. Indices are table positions.
const RE2::Set& SignatureSet() {
  static const RE2::Set* set = [] {
    RE2::Options options = MatchOptions(false);
    options.set_max_mem(64 << 20);
    auto* s = new RE2::Set(options, RE2::UNANCHORED);
    for (const auto& signature : LogSignatures()) s->Add(signature.regex, nullptr);
    s->Compile();
    return s;
  }();
  return *set;
}

const std::vector<std::unique_ptr<RE2>>& CompiledSignatures() {
  static const auto* compiled = [] {
    auto* v = new std::vector<std::unique_ptr<RE2>>;
    for (const auto& s : LogSignatures()) {
      v->push_back(std::make_unique<RE2>(s.regex, MatchOptions(false)));
    }
    return v;
  }();
  return *compiled;
}

// A line PyTorch's C++ code logged as a warning, which for the store client
// means a retry that may yet succeed: c10's "[W socket.cpp:558]" or "[W427
// 01:04:16.149509694 socket.cpp:752]" (also after a launcher's prefix such
// as "trainer/0 [1]:"), glog's "W0412 ..." at the start, warnings.warn's
// UserWarning; and Gloo's connect loop (debug_logger.cc) logs each failed
// attempt at ERROR but with "willRetry=1". A Python logger's WARNING is not
// one: Ray logs a Gloo exception that way.
bool LoggedAsWarning(absl::string_view line) {
  static const RE2* warning = new RE2(
      R"(\[W(\d{3,4} [\d:.]+)? ?[\w.]+\.(cpp|cc|h|hpp):\d+\]|^\s*W\d{4} |\bUserWarning\b|\bwillRetry=(1|true)\b)",
      MatchOptions(true));
  return RE2::PartialMatch(re2::StringPiece(line.data(), line.size()), *warning);
}

// A warning whose wait ended unanswered, so no retry follows: a connect that
// timed out or found no route (the address is unreachable or filtered; a
// start-up race is refused, not dropped, and may still succeed), and socket.cpp's
// "waitForInput: socket ... timed out after N ms", logged just before the
// store's wait gives up and throws.
bool UnansweredRetry(absl::string_view line) {
  // ETIMEDOUT is 110 on Linux, 60 on macOS, WSAETIMEDOUT 10060 on Windows;
  // 2.4+ logs it as "The server socket on ADDR has timed out, will retry".
  // No route (EHOSTUNREACH 113, macOS 65; ENETUNREACH 101, macOS 51) is the
  // same: an ICMP answer from a REJECT rule or no path, not a start-up race.
  static const RE2* unanswered = new RE2(
      R"(errno: (?:110|60|113|65|101|51)\b|Connection timed out|Operation timed out|No route to host|Network is unreachable|system error: 1006[05]\b|has timed out, will retry|waitForInput: socket .*timed out after)",
      MatchOptions(true));
  return RE2::PartialMatch(re2::StringPiece(line.data(), line.size()), *unanswered);
}

// libstdc++'s "terminate called after throwing an instance of 'T'", then
// "  what():  MESSAGE": a C++ exception no one caught (Gloo's IoException or
// EnforceNotMet on a background thread), so the process aborts. When a
// signature named the message, the abort ("Aborted (core dumped)", mpirun's
// "exited on signal 6 (Aborted)", exit code -6) is that cause's echo, not a
// crash of its own. Within a few lines: other ranks' output interleaves.
constexpr int kUncaughtToAbortLines = 20;

bool UncaughtException(absl::string_view line) {
  return absl::StrContains(line, "terminate called after throwing an instance of");
}

bool AbortLine(absl::string_view line) {
  static const RE2* abort = new RE2(
      R"(\bAborted\b|SIGABRT|\bsignal 6\b|exitcode\s*:\s*-6\b|Signal 6 \()", MatchOptions(true));
  return RE2::PartialMatch(re2::StringPiece(line.data(), line.size()), *abort);
}

// A line of Python source that a traceback quotes: a `raise X(...)`
// statement, or a message's string literal continued on its own line.
// Messages are often written into the raise, so the source repeats the
// error's words (with `{}` where the values go); the exception's own line
// after it is the error, this one is code.
bool QuotesSource(absl::string_view line) {
  static const RE2* source = new RE2(
      R"(^\s*raise\s+[\w.]+\(|^\s+[rbfuRBFU]?(?:"[^"]*"|'[^']*')(?:\s*[rbfuRBFU]?(?:"[^"]*"|'[^']*'))*\s*[,)]*\s*$)",
      MatchOptions(true));
  return RE2::PartialMatch(re2::StringPiece(line.data(), line.size()), *source);
}

std::string Printable(absl::string_view s, size_t limit) {
  std::string out;
  for (char c : s.substr(0, limit)) {
    unsigned char u = static_cast<unsigned char>(c);
    out.push_back((u < 0x20 && u != '\t') || u == 0x7f ? '?' : c);
  }
  return out;
}

// One piece of a rewrite filled from `match`; `complete` says whether every
// group it names matched, `any` whether one did.
std::string FillRewrite(absl::string_view piece, const std::vector<re2::StringPiece>& match,
                        bool* complete, bool* any) {
  std::string out;
  *complete = true;
  *any = false;
  for (size_t c = 0; c < piece.size(); ++c) {
    if (piece[c] == '\\' && c + 1 < piece.size() && piece[c + 1] >= '1' && piece[c + 1] <= '9') {
      const size_t group = static_cast<size_t>(piece[c + 1] - '0');
      if (group < match.size() && match[group].data() != nullptr) {
        out.append(match[group].data(), match[group].size());
        *any = true;
      } else {
        *complete = false;
      }
      ++c;
    } else {
      out.push_back(piece[c]);
    }
  }
  return out;
}

// `rewrite` with \N replaced by group N of `regex` on `line`. A rewrite may
// hold one piece per alternative of the regex, split by '|': the first piece
// whose groups all matched is used. Otherwise the last piece, with the groups
// of other alternatives left empty; when every group it names is, there is
// no detail.
std::string Detail(const RE2& regex, const char* rewrite, absl::string_view line) {
  if (rewrite == nullptr) return "";
  const int groups = regex.NumberOfCapturingGroups();
  std::vector<re2::StringPiece> match(groups + 1);
  if (!regex.Match(re2::StringPiece(line.data(), line.size()), 0, line.size(), RE2::UNANCHORED,
                   match.data(), groups + 1)) {
    return "";
  }
  const std::vector<absl::string_view> pieces = absl::StrSplit(rewrite, '|');
  std::string out;
  bool complete = false, any = false;
  for (absl::string_view piece : pieces) {
    out = FillRewrite(piece, match, &complete, &any);
    if (complete && any) break;
  }
  return any ? Printable(out, kDetailBytes) : "";
}

// The timestamp at the start of a line (see LogTimeKind), if any.
bool ParseTime(absl::string_view line, std::string* text, LogTimeKind* kind, double* seconds) {
  static const RE2* iso =
      new RE2(R"(^\s*\[?((\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?))",
              MatchOptions(true));
  static const RE2* glog =
      new RE2(R"(^\s*\[?([IWEF](\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?))",
              MatchOptions(true));
  static const RE2* syslog =
      new RE2(R"(^\s*(([A-Z][a-z]{2}) +(\d{1,2}) (\d{2}):(\d{2}):(\d{2})))", MatchOptions(true));
  const re2::StringPiece in(line.data(), line.size());
  std::string t, fraction, month_name;
  int year = 0, month = 0, day = 0, h = 0, m = 0, sec = 0;
  auto frac = [&] { return fraction.empty() ? 0.0 : std::stod("0." + fraction); };
  if (RE2::PartialMatch(in, *iso, &t, &year, &month, &day, &h, &m, &sec, &fraction)) {
    *kind = LogTimeKind::kDated;
    *seconds = absl::ToUnixSeconds(absl::FromCivil(absl::CivilSecond(year, month, day, h, m, sec),
                                                   absl::LocalTimeZone())) +
               frac();
  } else if (RE2::PartialMatch(in, *glog, &t, &month, &day, &h, &m, &sec, &fraction)) {
    *kind = LogTimeKind::kMonthDay;
    *seconds = ((month * 31 + day) * 24 + h) * 3600.0 + m * 60 + sec + frac();
  } else if (RE2::PartialMatch(in, *syslog, &t, &month_name, &day, &h, &m, &sec)) {
    static constexpr absl::string_view kMonths = "JanFebMarAprMayJunJulAugSepOctNovDec";
    const size_t at = kMonths.find(month_name);
    if (at == absl::string_view::npos || at % 3 != 0) return false;
    *kind = LogTimeKind::kSyslog;
    *seconds = ((static_cast<int>(at / 3) * 31 + day) * 24 + h) * 3600.0 + m * 60 + sec;
  } else {
    return false;
  }
  *text = t;
  return true;
}

// "rank N" from a file name (rank3.log, rank_3, worker-rank-3) or from
// PyTorch's "[rankN]:" line prefix.
std::string RankFromName(absl::string_view source) {
  static const RE2* rank = new RE2(R"(rank[_-]?(\d+))", MatchOptions(false));
  std::string n;
  const absl::string_view base = source.substr(source.find_last_of('/') + 1);
  if (RE2::PartialMatch(re2::StringPiece(base.data(), base.size()), *rank, &n)) {
    return "rank " + n;
  }
  return "";
}

std::string RankFromLine(absl::string_view line) {
  static const RE2* rank = new RE2(R"(^\s*\[rank(\d+)\]:)", MatchOptions(true));
  std::string n;
  if (RE2::PartialMatch(re2::StringPiece(line.data(), line.size()), *rank, &n)) {
    return "rank " + n;
  }
  return "";
}

// Whether the space-separated `ids` holds `id`.
bool ListsId(const char* ids, absl::string_view id) {
  if (ids == nullptr) return false;
  for (absl::string_view listed : absl::StrSplit(ids, ' ', absl::SkipEmpty())) {
    if (listed == id) return true;
  }
  return false;
}

// A hit that explains the root cause (LogSignature::explains) and came
// before it becomes the root, as an error: it is the reason for it, even
// where each of its lines was logged as a retry. Evidence of a state
// (explains_in_any_order) counts after the root too: logs hold the context
// of a failure on either side of it (another thread's denied connect, a
// rank's interface choice logged after its error).
void PromoteTheExplanation(LogExplanation& e) {
  if (e.root_cause < 0) return;
  const SignatureHit& root = e.hits[e.root_cause];
  for (size_t i = 0; i < e.hits.size(); ++i) {
    SignatureHit& h = e.hits[i];
    if (static_cast<int>(i) == e.root_cause || !ListsId(h.signature->explains, root.id) ||
        (h.first_line > root.line_of_example && !h.signature->explains_in_any_order)) {
      continue;
    }
    h.severity = LogSeverity::kError;
    e.root_cause = static_cast<int>(i);
    return;
  }
}

}  // namespace

bool SignatureCompiles(size_t index) { return CompiledSignatures().at(index)->ok(); }

LogExplanation ExplainLog(std::istream& in, absl::string_view source) {
  const absl::Span<const LogSignature> signatures = LogSignatures();
  LogExplanation e;
  e.source = std::string(source);
  e.rank = RankFromName(source);
  const auto& regexes = CompiledSignatures();
  const RE2::Set& set = SignatureSet();
  std::vector<SignatureHit> by_sig(regexes.size());
  std::vector<bool> example_is_retry(regexes.size(), false);
  std::vector<int> matched;
  std::string line;
  int uncaught_at = 0;          // the line of the last uncaught C++ exception, if any
  bool uncaught_named = false;  // whether a signature named its message
  while (std::getline(in, line)) {
    ++e.lines;
    if (line.find('\0') != std::string::npos) e.binary = true;
    if (line.size() > kMaxLineBytes) line.resize(kMaxLineBytes);
    absl::string_view view = absl::StripTrailingAsciiWhitespace(line);
    if (e.rank.empty()) e.rank = RankFromLine(view);
    if (UncaughtException(view)) {
      uncaught_at = e.lines;
      uncaught_named = false;
    }
    matched.clear();
    if (!set.Match(re2::StringPiece(view.data(), view.size()), &matched)) continue;
    // Only the few lines that match pay for this second look.
    if (QuotesSource(view)) continue;
    // The line counts for the first signature in table order that accepts it.
    std::sort(matched.begin(), matched.end());
    const auto chosen = std::find_if(matched.begin(), matched.end(), [&](int m) {
      return signatures[m].accept == nullptr || signatures[m].accept(view);
    });
    if (chosen == matched.end()) continue;
    const size_t i = static_cast<size_t>(*chosen);
    SignatureHit& h = by_sig[i];
    LogSeverity severity = signatures[i].severity;
    const bool retry = signatures[i].warning_is_retry && LoggedAsWarning(view);
    if (severity == LogSeverity::kError && retry && !UnansweredRetry(view)) {
      severity = LogSeverity::kWarning;
    }
    if (uncaught_at > 0 && e.lines - uncaught_at <= kUncaughtToAbortLines) {
      if (signatures[i].stage == Stage::kProcess && uncaught_named && AbortLine(view)) {
        severity = LogSeverity::kWarning;
        uncaught_at = 0;
      } else if (severity == LogSeverity::kError && !AbortLine(view)) {
        uncaught_named = true;
      }
    }
    // The first line that shows the signature at its worst stands for it;
    // among equals, a line logged as an error before a retry's warning.
    const bool first = h.count++ == 0;
    if (first) h.first_line = e.lines;
    if (first || severity > h.severity ||
        (severity == h.severity && example_is_retry[i] && !retry)) {
      example_is_retry[i] = retry;
      h.severity = severity;
      h.example = Printable(absl::StripLeadingAsciiWhitespace(view), kExampleBytes);
      h.detail = Detail(*regexes[i], signatures[i].detail, view);
      h.line_of_example = e.lines;
      h.time.clear();
      h.time_kind = LogTimeKind::kNone;
      ParseTime(view, &h.time, &h.time_kind, &h.time_seconds);
    }
    h.last_line = e.lines;
  }
  for (size_t i = 0; i < by_sig.size(); ++i) {
    if (by_sig[i].count == 0) continue;
    by_sig[i].id = signatures[i].id;
    by_sig[i].signature = &signatures[i];
    e.hits.push_back(std::move(by_sig[i]));
  }
  std::sort(e.hits.begin(), e.hits.end(), [](const SignatureHit& a, const SignatureHit& b) {
    return a.first_line < b.first_line;
  });
  for (size_t i = 0; i < e.hits.size(); ++i) {
    const SignatureHit& h = e.hits[i];
    e.worst = std::max(e.worst, h.severity);
    if (h.severity != LogSeverity::kError) continue;
    if (e.root_cause < 0) {
      e.root_cause = static_cast<int>(i);
      continue;
    }
    const SignatureHit& best = e.hits[e.root_cause];
    if (h.signature->stage < best.signature->stage ||
        (h.signature->stage == best.signature->stage && h.line_of_example < best.line_of_example)) {
      e.root_cause = static_cast<int>(i);
    }
  }
  PromoteTheExplanation(e);
  return e;
}

std::string RenderExplanationText(const LogExplanation& e) {
  std::string out;
  if (e.hits.empty()) {
    absl::StrAppend(&out, e.source, ": no known signatures in ", e.lines, " lines",
                    e.binary ? " (input looks binary)" : "", "\n");
    return out;
  }
  absl::StrAppend(&out, e.source, ": ", e.hits.size(), " known signature",
                  e.hits.size() == 1 ? "" : "s", " in ", e.lines, " lines\n");
  if (e.root_cause >= 0) {
    const SignatureHit& root = e.hits[e.root_cause];
    absl::StrAppend(&out, "root cause: ", root.id, " (line ", root.line_of_example, ")",
                    root.detail.empty() ? "" : absl::StrCat(": ", root.detail), "\n");
  } else {
    absl::StrAppend(&out, "no errors; warnings only\n");
  }
  absl::StrAppend(&out, "\n");
  size_t width = 9;
  for (const auto& h : e.hits) width = std::max(width, h.id.size());
  absl::StrAppendFormat(&out, "%-*s %-8s %6s %7s %7s\n", static_cast<int>(width), "SIGNATURE",
                        "SEVERITY", "COUNT", "FIRST", "LAST");
  for (const auto& h : e.hits) {
    absl::StrAppendFormat(&out, "%-*s %-8s %6d %7d %7d\n", static_cast<int>(width), h.id,
                          LogSeverityName(h.severity), h.count, h.first_line, h.last_line);
  }
  for (const auto& h : e.hits) {
    absl::StrAppend(&out, "\n", h.id, " (", LogSeverityName(h.severity), ", line ",
                    h.line_of_example, "): ", h.example, "\n");
    if (!h.detail.empty()) absl::StrAppend(&out, "  seen:  ", h.detail, "\n");
    absl::StrAppend(&out, "  cause: ", h.signature->cause, "\n", "  fix:   ", h.signature->fix,
                    "\n");
  }
  return out;
}

nlohmann::json ExplanationToJson(const LogExplanation& e) {
  nlohmann::json j;
  j["schema"] = "gloowatch.explain_log.v1";
  j["source"] = e.source;
  j["lines"] = e.lines;
  j["binary"] = e.binary;
  j["rank"] = e.rank;
  j["severity"] = e.hits.empty() ? "none" : LogSeverityName(e.worst);
  j["root_cause"] = nullptr;
  j["signatures"] = nlohmann::json::array();
  for (const auto& h : e.hits) {
    j["signatures"].push_back({{"id", h.id},
                               {"severity", LogSeverityName(h.severity)},
                               {"count", h.count},
                               {"first_line", h.first_line},
                               {"last_line", h.last_line},
                               {"line", h.line_of_example},
                               {"example", h.example},
                               {"detail", h.detail},
                               {"time", h.time},
                               {"cause", h.signature->cause},
                               {"fix", h.signature->fix}});
  }
  if (e.root_cause >= 0) {
    const SignatureHit& root = e.hits[e.root_cause];
    j["root_cause"] = {
        {"id", root.id},     {"line", root.line_of_example},   {"detail", root.detail},
        {"time", root.time}, {"cause", root.signature->cause}, {"fix", root.signature->fix}};
  }
  return j;
}

int ExplanationExitCode(const LogExplanation& e) {
  if (e.hits.empty()) return 0;
  switch (e.worst) {
    case LogSeverity::kError:
      return 2;
    case LogSeverity::kWarning:
      return 1;
    case LogSeverity::kInfo:
      return 0;
  }
  return 0;
}

namespace {

const SignatureHit& Hit(const JobExplanation& job, CauseRef ref) {
  return job.logs[ref.log].hits[ref.hit];
}

// Whether x's line came before y's: known only where both start with
// timestamps of one kind.
std::optional<bool> EarlierInTime(const SignatureHit& x, const SignatureHit& y) {
  if (x.time_kind == LogTimeKind::kNone || x.time_kind != y.time_kind) return std::nullopt;
  return x.time_seconds < y.time_seconds;
}

// Earlier in the failure chain, then earlier in time, then the order the
// logs were given in.
bool Before(const JobExplanation& job, CauseRef a, CauseRef b) {
  const SignatureHit& x = Hit(job, a);
  const SignatureHit& y = Hit(job, b);
  if (x.signature->stage != y.signature->stage) return x.signature->stage < y.signature->stage;
  if (x.time_seconds != y.time_seconds) {
    if (std::optional<bool> earlier = EarlierInTime(x, y)) return *earlier;
  }
  return a.log < b.log;
}

std::string Who(const JobExplanation& job, CauseRef ref) {
  const LogExplanation& log = job.logs[ref.log];
  const SignatureHit& h = Hit(job, ref);
  std::string where = absl::StrCat(log.source, " line ", h.line_of_example);
  if (!h.time.empty()) absl::StrAppend(&where, ", ", h.time);
  return log.rank.empty() ? where : absl::StrCat(log.rank, " (", where, ")");
}

}  // namespace

JobExplanation ExplainJob(std::vector<LogExplanation> logs) {
  JobExplanation job;
  job.logs = std::move(logs);
  std::vector<CauseRef> roots;
  for (size_t i = 0; i < job.logs.size(); ++i) {
    if (job.logs[i].root_cause >= 0) roots.push_back({static_cast<int>(i), job.logs[i].root_cause});
  }
  if (roots.empty()) return job;
  std::stable_sort(roots.begin(), roots.end(),
                   [&](CauseRef a, CauseRef b) { return Before(job, a, b); });
  job.root = roots.front();
  job.echoes.assign(roots.begin() + 1, roots.end());
  // The echoes read best in the order they happened.
  std::stable_sort(job.echoes.begin(), job.echoes.end(), [&](CauseRef a, CauseRef b) {
    if (std::optional<bool> earlier = EarlierInTime(Hit(job, a), Hit(job, b))) return *earlier;
    return a.log < b.log;
  });
  return job;
}

std::string RenderJobText(const JobExplanation& job) {
  std::string out = absl::StrCat(Counted(job.logs.size(), "log"), "\n");
  if (job.root.log < 0) {
    absl::StrAppend(&out, "no errors in any of them\n");
  } else {
    const SignatureHit& root = Hit(job, job.root);
    absl::StrAppend(&out, "root cause: ", Who(job, job.root), ": ", root.id,
                    root.detail.empty() ? "" : absl::StrCat(" (", root.detail, ")"), "\n",
                    "  cause: ", root.signature->cause, "\n", "  fix:   ", root.signature->fix,
                    "\n");
    if (!job.echoes.empty()) absl::StrAppend(&out, "then, its echo:\n");
    for (CauseRef echo : job.echoes) {
      const SignatureHit& h = Hit(job, echo);
      absl::StrAppend(&out, "  ", Who(job, echo), ": ", h.id,
                      h.detail.empty() ? "" : absl::StrCat(" (", h.detail, ")"), "\n");
    }
  }
  for (const LogExplanation& log : job.logs)
    absl::StrAppend(&out, "\n", RenderExplanationText(log));
  return out;
}

nlohmann::json JobToJson(const JobExplanation& job) {
  nlohmann::json j;
  j["schema"] = "gloowatch.explain_log.v1";
  j["logs"] = nlohmann::json::array();
  LogSeverity worst = LogSeverity::kInfo;
  bool any = false;
  for (const LogExplanation& log : job.logs) {
    j["logs"].push_back(ExplanationToJson(log));
    worst = std::max(worst, log.worst);
    any = any || !log.hits.empty();
  }
  j["severity"] = any ? LogSeverityName(worst) : "none";
  auto ref = [&](CauseRef r) {
    const SignatureHit& h = Hit(job, r);
    return nlohmann::json{{"source", job.logs[r.log].source},
                          {"rank", job.logs[r.log].rank},
                          {"id", h.id},
                          {"line", h.line_of_example},
                          {"time", h.time},
                          {"detail", h.detail},
                          {"cause", h.signature->cause},
                          {"fix", h.signature->fix}};
  };
  j["root_cause"] = job.root.log < 0 ? nlohmann::json(nullptr) : ref(job.root);
  j["echoes"] = nlohmann::json::array();
  for (CauseRef echo : job.echoes) j["echoes"].push_back(ref(echo));
  return j;
}

int JobExitCode(const JobExplanation& job) {
  int code = 0;
  for (const LogExplanation& log : job.logs) code = std::max(code, ExplanationExitCode(log));
  return code;
}

}  // namespace gloowatch::client
