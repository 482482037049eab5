#include "client/explain_log/explain_log.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "client/core/plural.h"
#include "client/explain_log/log_lines.h"
#include "client/explain_log/unrecognised.h"
#include "client/sources/clock_offsets.h"
#include "re2/re2.h"
#include "re2/set.h"

namespace gloowatch::client {
namespace {

// RE2 matches in linear time, so a huge or binary file costs a scan, not a
// backtracking blow-up (lines are cut at kMaxLineBytes, log_lines.h).
constexpr size_t kExampleBytes = 300;
constexpr size_t kDetailBytes = 200;

RE2::Options MatchOptions(bool case_sensitive) {
  RE2::Options options;
  options.set_case_sensitive(case_sensitive);
  options.set_log_errors(false);
  options.set_encoding(RE2::Options::EncodingLatin1);  // logs may hold any bytes
  return options;
}

// Every signature in one automaton, and after them the fallback's patterns
// (unrecognised.h): a line costs one pass whatever the size of the table,
// and most lines match none. Indices below LogSignatures().size() are table
// positions; a pattern that does not compile holds its place with one that
// never matches, so the positions after it stay right.
const RE2::Set& SignatureSet() {
  static const RE2::Set* set = [] {
    RE2::Options options = MatchOptions(false);
    options.set_max_mem(64 << 20);
    auto* s = new RE2::Set(options, RE2::UNANCHORED);
    constexpr char kNever[] = R"([^\x00-\xff])";
    for (const auto& signature : LogSignatures()) {
      if (s->Add(signature.regex, nullptr) < 0) s->Add(kNever, nullptr);
    }
    for (int p = 0; p < kFallbackPatterns; ++p) {
      if (s->Add(FallbackPatternRegex(static_cast<FallbackPattern>(p)), nullptr) < 0) {
        s->Add(kNever, nullptr);
      }
    }
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

// c10d's TCPStore connect-and-validate loop (2.4+) numbers its tries. A
// connection that is accepted and then reset or closed, try after try, is no
// start-up race (a store not yet listening refuses) and no passing glitch
// (the loop exists to retry one of those): from the third try on it is the
// error it will end in. A refused connect stays a retry however often: rank
// 0 may still be loading.
constexpr int kTriesOfAPersistentReset = 3;

bool PersistentReset(absl::string_view line) {
  static const RE2* reset = new RE2(
      R"(failed to connect/validate to host \S+ - retrying \(try=(\d+)\b[^)]*\): (?:Connection reset by peer|Failed to recv, got 0 bytes|Broken pipe))",
      MatchOptions(true));
  int tries = 0;
  return RE2::PartialMatch(re2::StringPiece(line.data(), line.size()), *reset, &tries) &&
         tries >= kTriesOfAPersistentReset;
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
  // A zone (Kubernetes' "Z", "+02:00") when the line says it; else local.
  static const RE2* iso = new RE2(
      R"(^\s*\[?((\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?)(Z|[+-]\d{2}:?\d{2})?)",
      MatchOptions(true));
  static const RE2* glog =
      new RE2(R"(^\s*\[?([IWEF](\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?))",
              MatchOptions(true));
  // Newer glog writes the year: "I20240501 12:00:00.123456".
  static const RE2* dated_glog =
      new RE2(R"(^\s*\[?([IWEF](\d{4})(\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?))",
              MatchOptions(true));
  static const RE2* syslog =
      new RE2(R"(^\s*(([A-Z][a-z]{2}) +(\d{1,2}) (\d{2}):(\d{2}):(\d{2})))", MatchOptions(true));
  const re2::StringPiece in(line.data(), line.size());
  std::string t, fraction, month_name, zone;
  int year = 0, month = 0, day = 0, h = 0, m = 0, sec = 0;
  auto frac = [&] { return fraction.empty() ? 0.0 : std::stod("0." + fraction); };
  if (RE2::PartialMatch(in, *iso, &t, &year, &month, &day, &h, &m, &sec, &fraction, &zone)) {
    *kind = LogTimeKind::kDated;
    absl::TimeZone tz = absl::LocalTimeZone();
    if (zone == "Z") {
      tz = absl::UTCTimeZone();
    } else if (!zone.empty()) {
      const int sign = zone[0] == '-' ? -1 : 1;
      const std::string digits = absl::StrReplaceAll(zone.substr(1), {{":", ""}});
      tz = absl::FixedTimeZone(
          sign * (std::stoi(digits.substr(0, 2)) * 3600 + std::stoi(digits.substr(2, 2)) * 60));
    }
    *seconds =
        absl::ToUnixSeconds(absl::FromCivil(absl::CivilSecond(year, month, day, h, m, sec), tz)) +
        frac();
  } else if (RE2::PartialMatch(in, *dated_glog, &t, &year, &month, &day, &h, &m, &sec, &fraction)) {
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
// rank's interface choice logged after its error). Among several, the table
// decides as it does for one line (the specific before the generic: the
// store host's failed IPv4 lookup before its IPv6 one), then the line. An
// explanation can itself have one (a host name that does not resolve, then
// the store's connect timeout, then the rendezvous that wraps it): followed
// down to the first.
void PromoteTheExplanation(LogExplanation& e) {
  const LogSignature* const table = LogSignatures().data();
  std::vector<bool> was_root(e.hits.size(), false);
  while (e.root_cause >= 0 && !was_root[e.root_cause]) {
    was_root[e.root_cause] = true;
    const SignatureHit& root = e.hits[e.root_cause];
    int best = -1;
    for (size_t i = 0; i < e.hits.size(); ++i) {
      const SignatureHit& h = e.hits[i];
      if (static_cast<int>(i) == e.root_cause || was_root[i] || h.signature == nullptr ||
          !ListsId(h.signature->explains, root.id) ||
          (h.first_line > root.line_of_example && !h.signature->explains_in_any_order)) {
        continue;
      }
      if (best < 0 || h.signature - table < e.hits[best].signature - table) {
        best = static_cast<int>(i);
      }
    }
    if (best < 0) return;
    e.hits[best].severity = LogSeverity::kError;
    e.root_cause = best;
  }
}

// A log with no error that ends on a setup error's line logged as a warning
// (c10d's bind of the store's port, tried on each address before the error
// that none worked) was cut there: users often post just those lines. The
// bind is its root cause. Not a connect retried while the store starts (a
// refusal, its host not resolving yet while its pods start), which a run
// that goes on prints too, nor a warning of its own kind (a loopback fallback).
void PromoteTheLastRetry(LogExplanation& e, int last_text_line) {
  int last = -1;
  for (size_t i = 0; i < e.hits.size(); ++i) {
    if (last < 0 || e.hits[i].last_line > e.hits[last].last_line) last = static_cast<int>(i);
  }
  if (last < 0) return;
  SignatureHit& h = e.hits[last];
  if (h.signature == nullptr || h.severity != LogSeverity::kWarning ||
      h.last_line < last_text_line || !h.signature->warning_is_retry ||
      h.signature->severity != LogSeverity::kError || h.signature->stage != Stage::kSetup) {
    return;
  }
  h.severity = LogSeverity::kError;
  absl::StrAppend(&h.detail, h.detail.empty() ? "" : "; ", "the log ends while it retries");
  e.root_cause = last;
  e.worst = LogSeverity::kError;
}

// A line near a signature's (this many physical lines before or after it)
// is part of that failure's output (a traceback's header, the C++ terminate
// wrapper, the exception repeated), not an unrecognised error of its own.
constexpr int kNearSignatureLines = 5;

// Reads one log: each logical line gets one pass of the signature set, and
// is judged against the signatures that match it, or else the fallback.
class Explainer {
 public:
  explicit Explainer(absl::string_view source)
      : signatures_(LogSignatures()),
        regexes_(CompiledSignatures()),
        set_(SignatureSet()),
        by_sig_(signatures_.size()),
        example_is_retry_(signatures_.size(), false) {
    e_.source = std::string(source);
    e_.rank = RankFromName(source);
  }

  void Line(const LogicalLine& joined) {
    const LogicalLine& l = Reading(joined);
    if (!absl::StripAsciiWhitespace(l.text).empty()) last_text_line_ = l.last_line;
    if (!l.prefix.rank.empty()) {
      if (line_rank_.empty()) line_rank_ = l.prefix.rank;
      several_ranks_ = several_ranks_ || line_rank_ != l.prefix.rank;
    }
    if (UncaughtException(l.text)) {
      uncaught_at_ = l.line;
      uncaught_named_ = false;
    }
    const bool ends_distributed_traceback = tracebacks_.Ends(
        l.prefix.stream, l.text, fallback_[kTracebackStart], fallback_[kDistributedFrame]);
    CommitCandidatesBefore(l.line - kNearSignatureLines);
    if (!signature_matches_.empty() && JudgeMatches(l)) {
      // What came just before is this failure's own output.
      candidates_.clear();
      last_signature_line_ = l.last_line;
      return;
    }
    Fallback(l, ends_distributed_traceback);
  }

  LogExplanation Finish(const LogReader& reader) {
    CommitCandidatesBefore(std::numeric_limits<int>::max());
    e_.lines = reader.physical_lines();
    e_.bytes = reader.bytes();
    e_.not_text = reader.not_text();
    e_.binary = reader.saw_nul() || !e_.not_text.empty();
    if (!e_.not_text.empty()) return std::move(e_);  // nothing in it is a log's
    if (e_.rank.empty() && !several_ranks_ && !line_rank_.empty()) {
      e_.rank = "rank " + line_rank_;
    }
    for (size_t i = 0; i < by_sig_.size(); ++i) {
      if (by_sig_[i].count == 0) continue;
      by_sig_[i].id = signatures_[i].id;
      by_sig_[i].signature = &signatures_[i];
      e_.hits.push_back(std::move(by_sig_[i]));
    }
    if (unrecognised_.count > 0) e_.hits.push_back(std::move(unrecognised_));
    std::sort(e_.hits.begin(), e_.hits.end(), [](const SignatureHit& a, const SignatureHit& b) {
      return a.first_line < b.first_line;
    });
    // The root: a signature's error of the earliest stage, the earliest line
    // among equals; the fallback only when no signature found an error.
    auto rank_of = [](const SignatureHit& h) {
      return std::make_tuple(h.unrecognised(), h.signature->stage, h.line_of_example);
    };
    for (size_t i = 0; i < e_.hits.size(); ++i) {
      const SignatureHit& h = e_.hits[i];
      e_.worst = std::max(e_.worst, h.severity);
      if (h.severity != LogSeverity::kError) continue;
      if (e_.root_cause < 0 || rank_of(h) < rank_of(e_.hits[e_.root_cause])) {
        e_.root_cause = static_cast<int>(i);
      }
    }
    PromoteTheExplanation(e_);
    if (e_.root_cause < 0) PromoteTheLastRetry(e_, last_text_line_);
    return std::move(e_);
  }

 private:
  struct Candidate {
    int line = 0;
    Stage stage = Stage::kSetup;
    std::string example, rank, time;
    LogTimeKind time_kind = LogTimeKind::kNone;
    double time_seconds = 0;
  };

  // The line as matched, after one pass of the set (signature_matches_ and
  // fallback_ hold its answer). A join that may have eaten a blank is
  // matched with one too (rare: a wrap at the widest width): the reading
  // that names the more specific cause (the earlier in the table) wins; on
  // a tie (the same cause, its values may differ) the log's other wide
  // lines decide: ragged below the widest, a form's word wrap lost a blank;
  // else a terminal cut inside a word.
  const LogicalLine& Reading(const LogicalLine& joined) {
    Match(joined);
    if (joined.uncertain_joins.empty()) return joined;
    auto most_specific = [&] {
      return signature_matches_.empty()
                 ? std::numeric_limits<int>::max()
                 : *std::min_element(signature_matches_.begin(), signature_matches_.end());
    };
    const int without = most_specific();
    unspaced_matches_ = signature_matches_;
    bool unspaced_fallback[kFallbackPatterns];
    std::copy(std::begin(fallback_), std::end(fallback_), unspaced_fallback);
    SpaceUncertainJoins(joined, &spaced_);
    Match(spaced_);
    const int with = most_specific();
    if (with < without || (with == without && joined.word_wrapped)) return spaced_;
    signature_matches_.swap(unspaced_matches_);
    std::copy(std::begin(unspaced_fallback), std::end(unspaced_fallback), fallback_);
    return joined;
  }

  // An error of the stack that no signature named: a candidate, counted
  // once no signature's line comes within kNearSignatureLines after it.
  void Fallback(const LogicalLine& l, bool ends_distributed_traceback) {
    const bool error_shape =
        fallback_[kErrorShape] || l.prefix.level == 'E' || l.prefix.level == 'F';
    const bool stack = fallback_[kStackWords] && !fallback_[kOtherStack];
    if (!((error_shape && stack) || ends_distributed_traceback)) return;
    if (last_signature_line_ > 0 && l.line - last_signature_line_ <= kNearSignatureLines) return;
    if (!ReportUnrecognised(l.text, l.prefix.level, LoggedAsWarning(l.text))) return;
    Candidate c;
    c.line = l.line;
    c.stage = UnrecognisedStage(l.text);
    c.example = Printable(absl::StripLeadingAsciiWhitespace(l.shown), kExampleBytes);
    c.rank = l.prefix.rank;
    LineTime(l, &c.time, &c.time_kind, &c.time_seconds);
    candidates_.push_back(std::move(c));
  }

  // One pass of the set: the signatures that match, and the fallback's
  // patterns that do.
  void Match(const LogicalLine& l) {
    matched_.clear();
    set_.Match(re2::StringPiece(l.text.data(), l.text.size()), &matched_);
    std::fill(std::begin(fallback_), std::end(fallback_), false);
    signature_matches_.clear();
    for (int m : matched_) {
      if (m < static_cast<int>(signatures_.size())) {
        signature_matches_.push_back(m);
      } else {
        fallback_[m - signatures_.size()] = true;
      }
    }
  }

  // The line's own timestamp: the one its prefix started with, else one at
  // the start of the message (c10's "[W501 12:00:00.1 ...]").
  static void LineTime(const LogicalLine& l, std::string* text, LogTimeKind* kind,
                       double* seconds) {
    text->clear();
    *kind = LogTimeKind::kNone;
    *seconds = 0;
    if (l.prefix.timestamped) {
      ParseTime(absl::string_view(l.shown).substr(l.prefix.time_at), text, kind, seconds);
    } else {
      ParseTime(l.text, text, kind, seconds);
    }
  }

  // A logical line joined from several physical ones counts where its
  // message starts, for the first signature in table order, as one line
  // does. A signature whose text starts in a later piece, past the piece
  // that one's text ends in, is that piece's own record (two records that
  // looked like a wrap) and counts on its line, judged on its text.
  bool JudgeMatches(const LogicalLine& l) {
    const int chosen = Judge(l, l.line, l.text, l.shown, signature_matches_);
    if (l.continuations.empty() || chosen < 0) return chosen >= 0;
    auto piece_of = [&](size_t at) {
      size_t piece = 0;
      for (size_t k = 0; k < l.continuations.size(); ++k) {
        if (l.continuations[k].first <= at) piece = k + 1;
      }
      return piece;
    };
    auto span = [&](int m) {
      re2::StringPiece match;
      if (!regexes_[m]->Match(re2::StringPiece(l.text.data(), l.text.size()), 0, l.text.size(),
                              RE2::UNANCHORED, &match, 1)) {
        return std::make_pair(std::string::npos, std::string::npos);
      }
      const size_t at = static_cast<size_t>(match.data() - l.text.data());
      return std::make_pair(at, at + match.size());
    };
    const size_t end = span(chosen).second;
    const size_t taken_to = end == std::string::npos || end == 0 ? 0 : piece_of(end - 1);
    std::vector<std::pair<size_t, int>> later;  // (piece, signature) past the message
    for (int m : signature_matches_) {
      const size_t at = span(m).first;
      if (m != chosen && at != std::string::npos && piece_of(at) > taken_to) {
        later.emplace_back(piece_of(at), m);
      }
    }
    std::sort(later.begin(), later.end());
    std::vector<int> group;
    for (size_t i = 0; i < later.size();) {
      const size_t piece = later[i].first;
      group.clear();
      for (; i < later.size() && later[i].first == piece; ++i) group.push_back(later[i].second);
      const absl::string_view text = l.text.substr(l.continuations[piece - 1].first);
      Judge(l, l.continuations[piece - 1].second, text, text, group);
    }
    return true;
  }

  // Returns the signature the line counted for, or -1.
  int Judge(const LogicalLine& l, int line, absl::string_view text, absl::string_view shown,
            std::vector<int>& matches) {
    // Only the few lines that match pay for this second look: a traceback's
    // source line that quotes the message is code, not the error.
    if (QuotesSource(text)) return -1;
    std::sort(matches.begin(), matches.end());
    const auto chosen = std::find_if(matches.begin(), matches.end(), [&](int m) {
      return signatures_[m].accept == nullptr || signatures_[m].accept(text);
    });
    if (chosen == matches.end()) return -1;
    const size_t i = static_cast<size_t>(*chosen);
    SignatureHit& h = by_sig_[i];
    LogSeverity severity = signatures_[i].severity;
    const bool retry =
        signatures_[i].warning_is_retry && (l.prefix.level == 'W' || LoggedAsWarning(text));
    if (severity == LogSeverity::kError && retry && !UnansweredRetry(text) &&
        !PersistentReset(text)) {
      severity = LogSeverity::kWarning;
    }
    if (uncaught_at_ > 0 && line - uncaught_at_ <= kUncaughtToAbortLines) {
      if (signatures_[i].stage == Stage::kProcess && uncaught_named_ && AbortLine(text)) {
        severity = LogSeverity::kWarning;
        uncaught_at_ = 0;
      } else if (severity == LogSeverity::kError && !AbortLine(text)) {
        uncaught_named_ = true;
      }
    }
    // The first line that shows the signature at its worst stands for it;
    // among equals, a line logged as an error before a retry's warning.
    const bool first = h.count++ == 0;
    if (first) h.first_line = line;
    if (first || severity > h.severity ||
        (severity == h.severity && example_is_retry_[i] && !retry)) {
      example_is_retry_[i] = retry;
      h.severity = severity;
      h.example = Printable(absl::StripLeadingAsciiWhitespace(shown), kExampleBytes);
      h.detail = Detail(*regexes_[i], signatures_[i].detail, text);
      h.line_of_example = line;
      h.rank = l.prefix.rank;
      LineTime(l, &h.time, &h.time_kind, &h.time_seconds);
    }
    h.last_line = std::max(h.last_line, line);
    return static_cast<int>(i);
  }

  // Candidates older than `line` are no signature's neighbours: they count.
  void CommitCandidatesBefore(int line) {
    while (!candidates_.empty() && candidates_.front().line < line) {
      Candidate& c = candidates_.front();
      SignatureHit& h = unrecognised_;
      if (h.count++ == 0) {
        h.id = kUnrecognisedId;
        h.signature = &UnrecognisedSignature(c.stage);
        h.severity = LogSeverity::kError;
        h.first_line = h.line_of_example = c.line;
        h.example = std::move(c.example);
        h.rank = std::move(c.rank);
        h.time = std::move(c.time);
        h.time_kind = c.time_kind;
        h.time_seconds = c.time_seconds;
      }
      h.last_line = c.line;
      candidates_.pop_front();
    }
  }

  const absl::Span<const LogSignature> signatures_;
  const std::vector<std::unique_ptr<RE2>>& regexes_;
  const RE2::Set& set_;
  LogExplanation e_;
  std::vector<SignatureHit> by_sig_;
  std::vector<bool> example_is_retry_;
  std::vector<int> matched_, signature_matches_, unspaced_matches_;
  bool fallback_[kFallbackPatterns] = {};
  LogicalLine spaced_;
  int uncaught_at_ = 0;          // the line of the last uncaught C++ exception, if any
  bool uncaught_named_ = false;  // whether a signature named its message
  std::string line_rank_;        // the first "[rankN]:" seen
  bool several_ranks_ = false;
  TracebackTracker tracebacks_;
  std::deque<Candidate>
      candidates_;  // unrecognised errors that may yet be a signature's neighbours
  int last_signature_line_ = 0;
  int last_text_line_ = 0;  // the last line with any text
  SignatureHit unrecognised_;
};

}  // namespace

bool SignatureHit::unrecognised() const {
  return signature != nullptr && IsUnrecognised(*signature);
}

bool SignatureCompiles(size_t index) { return CompiledSignatures().at(index)->ok(); }

LogExplanation ExplainLog(std::istream& in, absl::string_view source) {
  LogReader reader(in);
  Explainer explainer(source);
  LogicalLine line;
  while (reader.Next(&line)) explainer.Line(line);
  return explainer.Finish(reader);
}

LogExplanation ExplainLog(LogStream& in, absl::string_view source) {
  LogExplanation e = ExplainLog(static_cast<std::istream&>(in), source);
  e.format = in.format();
  const absl::Status status = in.status();
  if (!status.ok()) e.input_warning = std::string(status.message());
  return e;
}

absl::Status InputError(const LogExplanation& e) {
  if (!e.not_text.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(e.source, ": not a text log: ", e.not_text));
  }
  if (!e.input_warning.empty() && e.bytes == 0) {
    return absl::DataLossError(
        absl::StrCat(e.source, ": no text could be read: ", e.input_warning));
  }
  return absl::OkStatus();
}

namespace {

// "most likely connect" for the fallback, "" for a signature.
std::string Confidence(const SignatureHit& h) {
  return h.unrecognised()
             ? absl::StrCat("low confidence, most likely ", StageCategory(h.signature->stage))
             : "";
}

}  // namespace

std::string RenderExplanationText(const LogExplanation& e) {
  std::string out;
  if (!e.not_text.empty()) return absl::StrCat(e.source, ": not a text log: ", e.not_text, "\n");
  const std::string truncated = e.input_warning.empty() ? "" : " (the input ended early)";
  if (e.bytes == 0 && e.lines == 0) {
    return absl::StrCat(e.source, ": empty input, nothing to explain", truncated, "\n");
  }
  const bool has_unrecognised = std::any_of(e.hits.begin(), e.hits.end(),
                                            [](const SignatureHit& h) { return h.unrecognised(); });
  const size_t known = e.hits.size() - (has_unrecognised ? 1 : 0);
  const std::string signatures =
      known == 0 ? "no known signatures"
                 : absl::StrCat(known, " known signature", known == 1 ? "" : "s");
  absl::StrAppend(&out, e.source, ": ", signatures,
                  has_unrecognised ? " and an unrecognised distributed error" : "", " in ", e.lines,
                  " lines", e.binary ? " (input holds NUL bytes)" : "", truncated, "\n");
  if (e.hits.empty()) return out;
  if (e.root_cause >= 0) {
    const SignatureHit& root = e.hits[e.root_cause];
    absl::StrAppend(
        &out, "root cause", root.unrecognised() ? " (low confidence)" : "", ": ", root.id,
        " (line ", root.line_of_example,
        root.rank.empty() || !e.rank.empty() ? "" : absl::StrCat(", rank ", root.rank), ")",
        root.unrecognised() ? absl::StrCat(", most likely ", StageCategory(root.signature->stage))
                            : "",
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
    const std::string confidence = Confidence(h);
    absl::StrAppend(
        &out, "\n", h.id, " (", LogSeverityName(h.severity), ", line ", h.line_of_example,
        h.rank.empty() || !e.rank.empty() ? "" : absl::StrCat(", rank ", h.rank),
        confidence.empty() ? "" : absl::StrCat(", ", confidence), "): ", h.example, "\n");
    if (!h.detail.empty()) absl::StrAppend(&out, "  seen:  ", h.detail, "\n");
    absl::StrAppend(&out, "  cause: ", h.signature->cause, "\n", "  fix:   ", h.signature->fix,
                    "\n");
  }
  return out;
}

namespace {

// A finding as the JSON's root cause, echoes and signatures show it.
nlohmann::json CauseJson(const SignatureHit& h) {
  return {{"id", h.id},
          {"line", h.line_of_example},
          {"detail", h.detail},
          {"time", h.time},
          {"category", StageCategory(h.signature->stage)},
          {"confidence", h.unrecognised() ? "low" : "high"},
          {"cause", h.signature->cause},
          {"fix", h.signature->fix}};
}

}  // namespace

nlohmann::json ExplanationToJson(const LogExplanation& e) {
  nlohmann::json j;
  j["schema"] = "gloowatch.explain_log.v1";
  j["source"] = e.source;
  j["lines"] = e.lines;
  j["bytes"] = e.bytes;
  j["format"] = e.format;
  j["empty"] = e.bytes == 0 && e.lines == 0;
  j["truncated"] = !e.input_warning.empty();
  j["input_warning"] = e.input_warning;
  j["binary"] = e.binary;
  j["not_text"] = e.not_text;
  j["rank"] = e.rank;
  j["severity"] = e.hits.empty() ? "none" : LogSeverityName(e.worst);
  j["root_cause"] = nullptr;
  j["signatures"] = nlohmann::json::array();
  for (const auto& h : e.hits) {
    nlohmann::json hit = CauseJson(h);
    hit["severity"] = LogSeverityName(h.severity);
    hit["count"] = h.count;
    hit["first_line"] = h.first_line;
    hit["last_line"] = h.last_line;
    hit["example"] = h.example;
    hit["rank"] = h.rank;
    j["signatures"].push_back(std::move(hit));
  }
  if (e.root_cause >= 0) {
    j["root_cause"] = CauseJson(e.hits[e.root_cause]);
    j["root_cause"]["rank"] = e.hits[e.root_cause].rank;
  }
  return j;
}

int ExplanationExitCode(const LogExplanation& e) {
  int code = 0;
  if (!e.hits.empty()) {
    switch (e.worst) {
      case LogSeverity::kError:
        code = 2;
        break;
      case LogSeverity::kWarning:
        code = 1;
        break;
      case LogSeverity::kInfo:
        break;
    }
  }
  // What was not read may hold the failure: a truncated log is never clean.
  if (!e.input_warning.empty()) code = std::max(code, 1);
  return code;
}

namespace {

const SignatureHit& Hit(const JobExplanation& job, CauseRef ref) {
  return job.logs[ref.log].hits[ref.hit];
}

// Whether a's line came before b's: known only where both start with
// timestamps of one kind; on one clock where the hosts' offsets are known.
std::optional<bool> EarlierInTime(const JobExplanation& job, CauseRef a, CauseRef b) {
  const SignatureHit& x = Hit(job, a);
  const SignatureHit& y = Hit(job, b);
  if (x.time_kind == LogTimeKind::kNone || x.time_kind != y.time_kind) return std::nullopt;
  const double tx = CorrectedSeconds(job.logs[a.log], x), ty = CorrectedSeconds(job.logs[b.log], y);
  if (tx == ty) return std::nullopt;
  return tx < ty;
}

// Earlier in the failure chain, then earlier in time, then the order the
// logs were given in.
bool Before(const JobExplanation& job, CauseRef a, CauseRef b) {
  const SignatureHit& x = Hit(job, a);
  const SignatureHit& y = Hit(job, b);
  // The fallback's guess never outranks another log's signature.
  if (x.unrecognised() != y.unrecognised()) return y.unrecognised();
  if (x.signature->stage != y.signature->stage) return x.signature->stage < y.signature->stage;
  if (std::optional<bool> earlier = EarlierInTime(job, a, b)) return *earlier;
  return a.log < b.log;
}

std::string Who(const JobExplanation& job, CauseRef ref) {
  const LogExplanation& log = job.logs[ref.log];
  const SignatureHit& h = Hit(job, ref);
  std::string where = absl::StrCat(log.source, " line ", h.line_of_example);
  if (!h.time.empty()) absl::StrAppend(&where, ", ", h.time);
  if (!log.host.empty()) absl::StrAppend(&where, ", ", log.host);
  // A log of several ranks: the rank of the line.
  const std::string rank = log.rank.empty() && !h.rank.empty() ? "rank " + h.rank : log.rank;
  return rank.empty() ? where : absl::StrCat(rank, " (", where, ")");
}

// "times corrected by measured offsets (to h1's clock): h2 +0.84 s".
std::string CorrectionText(const JobExplanation& job) {
  if (job.clock_reference.empty()) {
    return job.clock_note.empty() ? ""
                                  : absl::StrCat("times not corrected: ", job.clock_note, "\n");
  }
  std::map<std::string, double> offsets;
  std::vector<std::string> unknown;
  for (const LogExplanation& log : job.logs) {
    if (log.clock_offset_seconds) {
      if (log.host != job.clock_reference) offsets[log.host] = *log.clock_offset_seconds;
    } else {
      unknown.push_back(log.source);
    }
  }
  std::vector<std::string> parts;
  for (const auto& [host, offset] : offsets) {
    parts.push_back(absl::StrCat(host, " ", OffsetText(offset)));
  }
  std::string out = absl::StrCat(
      "times corrected by measured offsets (to ", job.clock_reference, "'s clock, from the ",
      job.clock_source, "): ", parts.empty() ? "none needed" : absl::StrJoin(parts, ", "), "\n");
  if (!unknown.empty()) {
    absl::StrAppend(
        &out, "  not corrected (host or offset unknown): ", absl::StrJoin(unknown, ", "), "\n");
  }
  return out;
}

}  // namespace

double CorrectedSeconds(const LogExplanation& log, const SignatureHit& hit) {
  return hit.time_seconds - log.clock_offset_seconds.value_or(0);
}

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
    if (std::optional<bool> earlier = EarlierInTime(job, a, b)) return *earlier;
    return a.log < b.log;
  });
  return job;
}

std::string RenderJobText(const JobExplanation& job) {
  std::string out = absl::StrCat(Counted(job.logs.size(), "log"), "\n", CorrectionText(job));
  if (job.root.log < 0) {
    absl::StrAppend(&out, "no errors in any of them\n");
  } else {
    const SignatureHit& root = Hit(job, job.root);
    absl::StrAppend(&out, "root cause", root.unrecognised() ? " (low confidence)" : "", ": ",
                    Who(job, job.root), ": ", root.id,
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
    const LogExplanation& log = job.logs[r.log];
    nlohmann::json cause = CauseJson(h);
    cause["source"] = log.source;
    cause["rank"] = log.rank.empty() && !h.rank.empty() ? "rank " + h.rank : log.rank;
    cause["host"] = log.host;
    return cause;
  };
  j["root_cause"] = job.root.log < 0 ? nlohmann::json(nullptr) : ref(job.root);
  j["echoes"] = nlohmann::json::array();
  for (CauseRef echo : job.echoes) j["echoes"].push_back(ref(echo));
  if (job.clock_reference.empty()) {
    j["clock_correction"] =
        job.clock_note.empty() ? nlohmann::json() : nlohmann::json{{"note", job.clock_note}};
  } else {
    nlohmann::json offsets = nlohmann::json::object();
    for (const LogExplanation& log : job.logs) {
      if (log.clock_offset_seconds) offsets[log.host] = *log.clock_offset_seconds;
    }
    j["clock_correction"] = {
        {"reference", job.clock_reference}, {"source", job.clock_source}, {"offsets", offsets}};
  }
  for (size_t i = 0; i < job.logs.size(); ++i) {
    j["logs"][i]["host"] = job.logs[i].host;
    j["logs"][i]["clock_offset_seconds"] = job.logs[i].clock_offset_seconds
                                               ? nlohmann::json(*job.logs[i].clock_offset_seconds)
                                               : nlohmann::json();
  }
  return j;
}

int JobExitCode(const JobExplanation& job) {
  int code = 0;
  for (const LogExplanation& log : job.logs) code = std::max(code, ExplanationExitCode(log));
  return code;
}

}  // namespace gloowatch::client
