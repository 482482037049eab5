#include "client/explain_log/log_lines.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gloowatch::client {
namespace {

constexpr size_t kReadChunk = 1 << 16;

// The text check reads this much of the input that is not a run of NUL
// bytes; runs this long or longer are holes (a crash or a copytruncate
// leaves them in a text log), shorter ones are binary structure.
constexpr uint64_t kSniffBytes = 64 << 10;
constexpr uint64_t kHoleRun = 64;
// Control bytes (not tab, newline, CR, form feed, escape, backspace) and
// short NUL runs above this share of the sample make it binary: a text log
// has next to none, compressed or machine code about a tenth.
constexpr uint64_t kBinaryPercent = 3;

// A joined logical line stops growing here.
constexpr int kMaxPieces = 8;
// A wrap starts at a line at least this wide (or one whose next word is a
// long one moved down): shorter lines are whole records.
constexpr size_t kMinWrapWidth = 30;
// A line this long is cut by a collector's byte limit, not by a terminal:
// the continuation may repeat even a timestamp.
constexpr size_t kShipperCut = 2048;

bool IsControl(unsigned char c) {
  return (c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v' && c != 0x1b &&
          c != '\b' && c != 0) ||
         c == 0x7f;
}

// Named binary formats, from their first bytes.
std::string MagicFormat(absl::string_view head) {
  struct Magic {
    absl::string_view bytes;
    const char* name;
  };
  static constexpr Magic kMagic[] = {
      {"\177ELF", "an ELF executable or library"},
      {"\x89PNG", "a PNG image"},
      {"\xff\xd8\xff", "a JPEG image"},
      {"GIF87a", "a GIF image"},
      {"GIF89a", "a GIF image"},
      {"%PDF-", "a PDF document"},
      {"PK\x03\x04", "a zip archive (a checkpoint, a wheel?)"},
      {"SQLite format 3", "an SQLite database"},
      {"\3757zXZ", "xz-compressed: decompress it first (gzip and zstd are read)"},
      {"\x04\x22\x4d\x18", "lz4-compressed: decompress it first (gzip and zstd are read)"},
      {"7z\xbc\xaf\x27\x1c", "a 7z archive: extract the logs from it first"},
      {"\xff\xfe", "UTF-16 text: convert it to UTF-8 (iconv -f UTF-16 -t UTF-8)"},
      {"\xfe\xff", "UTF-16 text: convert it to UTF-8 (iconv -f UTF-16 -t UTF-8)"},
  };
  for (const Magic& m : kMagic) {
    if (absl::StartsWith(head, m.bytes)) return m.name;
  }
  if (absl::StartsWith(head, "BZh") && head.size() > 3 && head[3] >= '1' && head[3] <= '9') {
    return "bzip2-compressed: decompress it first (gzip and zstd are read)";
  }
  if (head.size() >= 262 && head.substr(257, 5) == "ustar") {
    return "a tar archive: extract the logs from it first";
  }
  return "";
}

// ESC [ params intermediates final (CSI: colours, cursor moves), ESC ] ...
// BEL or ESC \ (OSC: titles, links), ESC and one more byte; and the bare
// "[0m" / "[1;31m" a paste leaves behind when it drops the invisible ESC.
size_t EscapeLength(absl::string_view s, size_t at) {
  if (s[at] == 0x1b) {
    if (at + 1 >= s.size()) return 1;
    const char kind = s[at + 1];
    size_t p = at + 2;
    if (kind == '[') {
      while (p < s.size() && static_cast<unsigned char>(s[p]) >= 0x20 &&
             static_cast<unsigned char>(s[p]) <= 0x3f) {
        ++p;
      }
      return p < s.size() ? p + 1 - at : p - at;
    }
    if (kind == ']') {
      while (p < s.size() && s[p] != '\a' &&
             !(s[p] == 0x1b && p + 1 < s.size() && s[p + 1] == '\\')) {
        ++p;
      }
      if (p < s.size()) p += s[p] == '\a' ? 1 : 2;
      return p - at;
    }
    if ((kind == '(' || kind == ')') && p < s.size()) return 3;
    return 2;
  }
  // s[at] == '[': a bare SGR, "[" digits and ';' "m".
  size_t p = at + 1;
  while (p < s.size() && p - at <= 16 && ((s[p] >= '0' && s[p] <= '9') || s[p] == ';')) ++p;
  return p > at + 1 && p < s.size() && s[p] == 'm' ? p + 1 - at : 0;
}

bool MayHoldEscapes(absl::string_view s) {
  if (s.find('\x1b') != absl::string_view::npos || s.find('\0') != absl::string_view::npos) {
    return true;
  }
  // A bare SGR ends in "m" right after a digit.
  for (size_t m = s.find('m'); m != absl::string_view::npos; m = s.find('m', m + 1)) {
    if (m >= 2 && absl::ascii_isdigit(static_cast<unsigned char>(s[m - 1]))) {
      const size_t open = s.rfind('[', m);
      if (open != absl::string_view::npos && EscapeLength(s, open) == m + 1 - open) return true;
    }
  }
  return false;
}

// `raw` without escapes, NUL bytes and trailing blanks (CR among them).
// `plain`: its read held none of them (no ESC, NUL or "[0m" at all).
void Clean(absl::string_view raw, bool plain, std::string* out, bool* ends_blank) {
  while (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
  const size_t without_cr = raw.size();
  raw = absl::StripTrailingAsciiWhitespace(raw);
  *ends_blank = raw.size() < without_cr;
  if (plain || !MayHoldEscapes(raw)) {
    out->assign(raw.data(), raw.size());
    return;
  }
  out->clear();
  for (size_t i = 0; i < raw.size();) {
    const char c = raw[i];
    if (c == '\0') {
      ++i;
      continue;
    }
    if (c == 0x1b || c == '[') {
      const size_t n = EscapeLength(raw, i);
      if (n > 0) {
        i += n;
        continue;
      }
    }
    out->push_back(c);
    ++i;
  }
  while (!out->empty() && absl::ascii_isspace(static_cast<unsigned char>(out->back()))) {
    out->pop_back();
  }
}

// Whether no byte of `data` has its high bit set, eight at a time.
bool Ascii(const char* data, size_t n) {
  uint64_t high = 0;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t word;
    std::memcpy(&word, data + i, 8);
    high |= word;
  }
  for (; i < n; ++i) high |= static_cast<unsigned char>(data[i]);
  return (high & 0x8080808080808080ULL) == 0;
}

// Terminal columns: UTF-8 code points, tabs to the next multiple of 8.
size_t Width(absl::string_view s) {
  size_t width = 0;
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '\t') {
      width = (width / 8 + 1) * 8;
    } else if ((u & 0xc0) != 0x80) {
      ++width;
    }
  }
  return width;
}

bool PathChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
         absl::string_view("_.-~$()").find(c) != absl::string_view::npos ||
         static_cast<unsigned char>(c) >= 0x80;
}

// Windows paths get '/': "C:\...\torch\distributed\x.py", "...\site-packages\...".
void SlashWindowsPaths(std::string* s, size_t from) {
  if (s->find('\\', from) == std::string::npos) return;
  const bool windows = s->find(":\\") != std::string::npos ||
                       s->find("...\\") != std::string::npos ||
                       s->find("\\site-packages\\") != std::string::npos ||
                       s->find("\\torch\\") != std::string::npos;
  if (!windows) return;
  for (size_t i = std::max<size_t>(from, 1); i + 1 < s->size(); ++i) {
    if ((*s)[i] != '\\') continue;
    const char before = (*s)[i - 1];
    if ((PathChar(before) || before == ':') && PathChar((*s)[i + 1])) (*s)[i] = '/';
  }
}

// c10's "[W C:/.../c10d/socket.cpp:558]" and "[E /src/.../socket.cpp:9]"
// become "[W socket.cpp:558]", the form Linux builds print.
void ShortenC10FileTags(std::string* s, size_t from) {
  for (size_t open = s->find('[', from); open != std::string::npos; open = s->find('[', open + 1)) {
    if (open + 3 >= s->size() ||
        absl::string_view("IWEF").find((*s)[open + 1]) == absl::string_view::npos) {
      continue;
    }
    const size_t close = s->find(']', open);
    if (close == std::string::npos || close - open > 400) return;
    const absl::string_view inside(s->data() + open, close - open);
    const size_t space = inside.rfind(' ');
    const size_t token = space == absl::string_view::npos ? 2 : space + 1;
    const size_t slash = inside.rfind('/');
    if (slash == absl::string_view::npos || slash < token) continue;
    const absl::string_view file = inside.substr(slash + 1);
    const size_t colon = file.rfind(':');
    if (colon == absl::string_view::npos || !(absl::EndsWith(file.substr(0, colon), ".cpp") ||
                                              absl::EndsWith(file.substr(0, colon), ".cc") ||
                                              absl::EndsWith(file.substr(0, colon), ".h") ||
                                              absl::EndsWith(file.substr(0, colon), ".hpp"))) {
      continue;
    }
    // "[W" + separator kept as printed, the directories dropped.
    const size_t keep = token == 2 && (*s)[open + 2] != ' ' ? open + 2 : open + token;
    s->erase(keep, open + slash + 1 - keep);
    if (token == 2 && (*s)[open + 2] != ' ') s->insert(open + 2, " ");
  }
}

bool StartsWithWord(absl::string_view s, absl::string_view word) {
  return absl::StartsWith(s, word) &&
         (s.size() == word.size() ||
          !absl::ascii_isalnum(static_cast<unsigned char>(s[word.size()])));
}

// Whether `body` is a program's own message in the Unix way, "PROGRAM:
// MESSAGE": argparse's "train.py: error: ..." and "usage: ...", getopt's and
// Slurm's "srun: error: ...", and the tools a launcher runs naming
// themselves (OpenSSH's "ssh: Could not resolve hostname ...", pdsh's
// "pdsh@node-a: ...", "mpirun: ..."). Such a line follows a command line or
// a usage line as wide as the widest, which a wrap would go on with.
bool ProgramMessage(absl::string_view body) {
  const size_t colon = body.find(": ");
  if (colon == 0 || colon == absl::string_view::npos || colon > 64) return false;
  const absl::string_view program = body.substr(0, colon);
  const bool name = std::all_of(program.begin(), program.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
           absl::string_view("_.@+-").find(c) != absl::string_view::npos;
  });
  if (!name) return false;
  if (program == "usage") return true;
  const absl::string_view message = body.substr(colon + 2);
  for (absl::string_view level : {"error: ", "warning: ", "fatal: "}) {
    if (absl::StartsWith(message, level)) return true;
  }
  const absl::string_view tool = program.substr(0, program.find('@'));
  for (absl::string_view launcher_tool :
       {"ssh", "pdsh", "srun", "sbatch", "salloc", "slurmstepd", "mpirun", "mpiexec", "orterun",
        "prterun", "horovodrun", "torchrun", "deepspeed"}) {
    if (tool == launcher_tool) return true;
  }
  return false;
}

// Whether `body` opens a record of its own rather than going on with the
// line before: indentation, a traceback's lines, an exception's or a
// logger's "Name:", a program's own "PROGRAM: message", a level, a tag in
// brackets ("[Gloo]", "[INFO]", c10's "[W ...]"), a rule of dashes or a box
// drawn around a traceback.
bool OpensRecord(absl::string_view body) {
  if (body.empty() || body[0] == '\t' || absl::StartsWith(body, "  ")) return true;
  if (body[0] == ' ') body.remove_prefix(1);  // a cut just before a blank
  if (body.empty()) return true;
  if (body.size() > 2 && body[0] == '[' &&
      absl::ascii_isalpha(static_cast<unsigned char>(body[1]))) {
    // Not an address: "[localhost]:29500".
    const size_t close = body.find(']');
    if (close != absl::string_view::npos && close < 48 &&
        body.substr(1, close).find('[') == absl::string_view::npos &&
        !(close + 2 < body.size() && body[close + 1] == ':' &&
          absl::ascii_isdigit(static_cast<unsigned char>(body[close + 2])))) {
      return true;
    }
  }
  if (body.size() > 1 && body[0] == body[1] &&
      absl::string_view("=-*#~_+").find(body[0]) != absl::string_view::npos) {
    return true;
  }
  if (absl::StartsWith(body, "\xe2\x94") || absl::StartsWith(body, "\xe2\x95")) return true;
  for (absl::string_view start :
       {"Traceback (", "File \"", "File \xe2\x80\x9c", "During handling of", "The above exception",
        "terminate called", "what():", "Exception raised from", "frame #",
        // The shell's and libc's word on a process that ended.
        "Aborted", "Killed", "Terminated", "Segmentation fault", "Bus error",
        // CPython's faulthandler on a fatal signal: its own record each.
        "Fatal Python error: ", "Current thread 0x", "Thread 0x"}) {
    if (absl::StartsWith(body, start)) return true;
  }
  // A progress bar ("100%|###"), a field of a report ("exitcode  : 1"),
  // Python's warnings ("path/x.py:71: FutureWarning:"), a record that holds
  // a time of day near its start.
  const size_t percent = body.find("%|");
  if (percent != absl::string_view::npos && percent <= 4) return true;
  const size_t word_end = std::min(body.find(' '), body.size());
  if (word_end < body.size()) {
    const size_t colon = body.find_first_not_of(' ', word_end);
    if (colon != absl::string_view::npos && body[colon] == ':' && colon > word_end) return true;
  }
  const absl::string_view first_word = body.substr(0, word_end);
  if (first_word.size() > 2 && first_word.back() == ':') {
    const size_t line_colon = first_word.rfind(':', first_word.size() - 2);
    if (line_colon != absl::string_view::npos && line_colon + 2 < first_word.size() &&
        absl::EndsWith(first_word.substr(0, line_colon), ".py") &&
        std::all_of(first_word.begin() + line_colon + 1, first_word.end() - 1,
                    [](char c) { return absl::ascii_isdigit(static_cast<unsigned char>(c)); })) {
      return true;
    }
  }
  // Two digits of minutes, the hour a word of its own (or after ISO's
  // "T"): an IPv6 address ("[2401:db00:21:604e:...]", or its rest cut inside
  // it, "0:13:0]:8835: ...") goes on with the line before.
  for (size_t c = body.find(':'); c != absl::string_view::npos && c < 24;
       c = body.find(':', c + 1)) {
    if (c >= 2 && c + 5 < body.size() &&
        (c == 2 || body[c - 3] == 'T' ||
         !absl::ascii_isalnum(static_cast<unsigned char>(body[c - 3]))) &&
        absl::ascii_isdigit(static_cast<unsigned char>(body[c - 1])) &&
        absl::ascii_isdigit(static_cast<unsigned char>(body[c - 2])) && body[c + 3] == ':' &&
        absl::ascii_isdigit(static_cast<unsigned char>(body[c + 1])) &&
        absl::ascii_isdigit(static_cast<unsigned char>(body[c + 2])) &&
        absl::ascii_isdigit(static_cast<unsigned char>(body[c + 4]))) {
      return true;
    }
  }
  for (absl::string_view level :
       {"INFO", "WARNING", "WARN", "ERROR", "DEBUG", "CRITICAL", "FATAL"}) {
    if (StartsWithWord(body, level)) return true;
  }
  if (ProgramMessage(body)) return true;
  // "RuntimeError: ...", "torch.distributed.DistBackendError".
  size_t p = 0;
  while (p < body.size() && p < 200 &&
         (absl::ascii_isalnum(static_cast<unsigned char>(body[p])) || body[p] == '_' ||
          body[p] == '.')) {
    ++p;
  }
  if (p == 0) return false;
  const absl::string_view name = body.substr(0, p);
  const size_t dot = name.rfind('.');
  const absl::string_view last = dot == absl::string_view::npos ? name : name.substr(dot + 1);
  const bool exception = absl::EndsWith(last, "Error") || absl::EndsWith(last, "Exception") ||
                         absl::EndsWith(last, "Warning") || absl::EndsWith(last, "Interrupt");
  return exception && (p == body.size() || body[p] == ':');
}

// Whether `text` is a whole line on its own: a traceback's frame up to its
// function name, a line of a drawn box.
bool Complete(absl::string_view text) {
  const absl::string_view stripped = absl::StripLeadingAsciiWhitespace(text);
  // A rule ("=====", "-----").
  if (stripped.size() >= 4 && stripped.find_first_not_of(stripped[0]) == absl::string_view::npos &&
      absl::string_view("=-*#~_+").find(stripped[0]) != absl::string_view::npos) {
    return true;
  }
  if (absl::StartsWith(stripped, "File \"") || absl::StartsWith(stripped, "File \xe2\x80\x9c")) {
    const size_t in = stripped.rfind(", in ");
    return in != absl::string_view::npos &&
           (stripped.find("\", line ") != absl::string_view::npos ||
            stripped.find("\xe2\x80\x9d, line ") != absl::string_view::npos) &&
           stripped.substr(in + 5).find(' ') == absl::string_view::npos;
  }
  return absl::EndsWith(text, "\xe2\x94\x82") || absl::EndsWith(text, "\xe2\x95\xae") ||
         absl::EndsWith(text, "\xe2\x95\xaf");
}

// The blank-free run a line starts with: the word a word wrap moved there.
size_t FirstWord(absl::string_view body) {
  const size_t blank = body.find(' ');
  return blank == absl::string_view::npos ? body.size() : blank;
}

// Lines within this many columns of the widest are as good as cut there: a
// word wrap leaves lines that much short of its width.
constexpr size_t kWrapSlack = 12;

}  // namespace

LogReader::LogReader(std::istream& in) : in_(in), buffer_(kReadChunk) {}

void LogReader::Widths::Add(size_t width) {
  ++count_[std::min(width, kTracked)];
  widest_ = std::max(widest_, width);
}

int LogReader::Widths::At(size_t width) const { return count_[std::min(width, kTracked)]; }

int LogReader::Widths::Near(size_t slack) const {
  const size_t top = std::min(widest_, kTracked);
  int n = 0;
  for (size_t w = top - std::min(top, slack); w <= top; ++w) n += count_[w];
  return n;
}

void LogReader::Sniff(const char* data, size_t n, bool at_end) {
  if (sniff_done_) return;
  if (head_.size() < 512) head_.append(data, std::min(n, 512 - head_.size()));
  for (size_t i = 0; i < n && sniffed_ < kSniffBytes; ++i) {
    const unsigned char c = static_cast<unsigned char>(data[i]);
    if (c == 0) {
      ++nul_run_;
      ++nul_total_;
      continue;
    }
    if (nul_run_ > 0 && nul_run_ < kHoleRun) {
      control_bytes_ += nul_run_;
      sniffed_ += nul_run_;
    }
    nul_run_ = 0;
    ++sniffed_;
    if (IsControl(c)) ++control_bytes_;
  }
  if (sniffed_ < kSniffBytes && !at_end && head_.size() < 512) return;
  if (!not_text_.empty()) return;
  std::string magic = MagicFormat(head_);
  if (!magic.empty()) {
    not_text_ = std::move(magic);
    sniff_done_ = true;
    return;
  }
  if (sniffed_ < kSniffBytes && !at_end) return;
  if (at_end && nul_run_ > 0 && nul_run_ < kHoleRun && sniffed_ > 0) {
    control_bytes_ += nul_run_;
    sniffed_ += nul_run_;
  }
  sniff_done_ = true;
  if (sniffed_ == 0) {
    if (nul_total_ > 0) {
      not_text_ = absl::StrCat("only NUL bytes (", nul_total_,
                               "): the text never reached the disk, as after a crash");
    }
    return;
  }
  if (control_bytes_ >= 4 && control_bytes_ * 100 >= sniffed_ * kBinaryPercent) {
    not_text_ = absl::StrFormat("binary data (%d%% of the first %d KiB are control bytes)",
                                control_bytes_ * 100 / sniffed_, (sniffed_ + 1023) / 1024);
  }
}

bool LogReader::NextRaw(absl::string_view* line, bool* plain) {
  carry_.clear();
  bool carrying = false;
  *plain = false;
  while (true) {
    if (pos_ < end_) {
      const char* start = buffer_.data() + pos_;
      const void* newline = std::memchr(start, '\n', end_ - pos_);
      if (newline != nullptr) {
        const size_t n = static_cast<const char*>(newline) - start;
        pos_ += n + 1;
        if (!carrying) {
          *line = absl::string_view(start, std::min(n, kMaxLineBytes));
          *plain = chunk_plain_;
          return true;
        }
        carry_.append(start, std::min(n, kMaxLineBytes - std::min(kMaxLineBytes, carry_.size())));
        *line = carry_;
        return true;
      }
      carry_.append(start,
                    std::min(end_ - pos_, kMaxLineBytes - std::min(kMaxLineBytes, carry_.size())));
      carrying = true;
      pos_ = end_;
    }
    if (eof_ || !not_text_.empty()) {
      if (!carrying) return false;
      *line = carry_;
      return true;
    }
    const std::streamsize got = in_.rdbuf()->sgetn(buffer_.data(), buffer_.size());
    pos_ = 0;
    end_ = got > 0 ? static_cast<size_t>(got) : 0;
    bytes_ += end_;
    // Most reads hold nothing to clean and only ASCII: their lines skip the
    // per-line checks (widths are byte counts then).
    const char* data = buffer_.data();
    const bool nul = end_ > 0 && std::memchr(data, '\0', end_) != nullptr;
    saw_nul_ = saw_nul_ || nul;
    chunk_plain_ = !nul && Ascii(data, end_) && std::memchr(data, '\x1b', end_) == nullptr &&
                   std::memchr(data, '\t', end_) == nullptr &&
                   absl::string_view(data, end_).find("[0m") == absl::string_view::npos;
    if (end_ == 0) eof_ = true;
    Sniff(buffer_.data(), end_, eof_);
    if (!not_text_.empty()) return false;
  }
}

bool LogReader::ReadPhysical(Physical* out) {
  absl::string_view raw;
  bool plain = false;
  if (!NextRaw(&raw, &plain)) return false;
  out->number = ++physical_lines_;
  if (out->number == 1 && absl::StartsWith(raw, "\xef\xbb\xbf")) raw.remove_prefix(3);  // BOM
  Clean(raw, plain, &out->line, &out->ends_blank);
  out->prefix = PeelPrefix(out->line);
  SlashWindowsPaths(&out->line, out->prefix.length);
  ShortenC10FileTags(&out->line, out->prefix.length);
  if (plain) {
    out->width = out->line.size();
    out->body_width = out->width - out->prefix.length;
  } else {
    out->width = Width(out->line);
    out->body_width =
        out->width -
        std::min(out->width, Width(absl::string_view(out->line).substr(0, out->prefix.length)));
  }
  line_widths_.Add(out->width);
  body_widths_.Add(out->body_width);
  return true;
}

// Whether `next` goes on with the message `last` ends: the same writer (its
// prefix repeated, or none at all), `last` cut at the width of the widest
// lines so far (a terminal's cut, a form's word wrap, a shipper's byte
// limit) or flagged partial, and `next` no record of its own. The cheap
// tests first: this runs for every line.
bool LogReader::Continues(const Physical& last, absl::string_view last_body, const Physical& next,
                          absl::string_view logical) const {
  const absl::string_view next_body = next.body();
  if (next_body.empty() || last_body.empty()) return false;
  const bool repeated = !next.prefix.stream.empty() && next.prefix.stream == last.prefix.stream;
  const bool bare = next.prefix.length == 0;
  if (!repeated && !bare) {
    // The same writer with only a time repeated: a collector's cut.
    const bool same_timed_writer = next.prefix.timestamped &&
                                   next.prefix.stream == last.prefix.stream &&
                                   (last.prefix.partial || last_body.size() >= kShipperCut);
    if (!same_timed_writer) return false;
  }
  if (last.prefix.partial) return true;
  if (next.prefix.timestamped && last_body.size() < kShipperCut) return false;
  // Cut at the width: the whole line's (a terminal), or the message's after
  // a repeated prefix (a shipper's limit); a word wrap moved the next line's
  // first word down only because it did not fit.
  const Widths& widths = repeated ? body_widths_ : line_widths_;
  const size_t width = repeated ? last.body_width : last.width;
  // A short line starts a wrap only when a long word (a path) was moved
  // down; within one, a word wrap leaves lines of any length.
  const size_t moved = FirstWord(next_body);
  const bool first_piece = last_body.size() == logical.size();
  if ((first_piece && last.width < kMinWrapWidth && moved * 2 < widths.widest()) ||
      width + 1 + moved <= widths.widest()) {
    return false;
  }
  // Records of one kind in a row ("[Gloo] Rank 1 ...", "step 2 ...") share
  // their first word; a message's continuation does not.
  const size_t word = FirstWord(next_body);
  if (word >= 2 && FirstWord(logical) == word &&
      logical.substr(0, word) == next_body.substr(0, word)) {
    return false;
  }
  if (Complete(logical) || OpensRecord(next_body)) return false;
  // Two lines near the widest make a wrap width. Before that (the first
  // lines of a log are all the widest so far) only a line that starts with
  // a word or a digit, or with punctuation that goes on with one, does.
  if (widths.Near(kWrapSlack) >= 2) return true;
  const unsigned char first = static_cast<unsigned char>(next_body[0]);
  return absl::ascii_isalnum(first) ||
         absl::string_view(" ()[]{}<>,.;:'\"/-_=%").find(static_cast<char>(first)) !=
             absl::string_view::npos;
}

// A line short of the widest lost a blank at its end (a form's word wrap,
// or a terminal's cut on a blank the copy trimmed). One at the widest was
// cut there: inside a word by a terminal, or after a word that filled the
// line by a form; only an unbreakable run (no blank in the line's second
// half) is surely cut inside itself. The rest is uncertain: both readings
// are tried (explain_log.cc).
absl::string_view LogReader::Separator(const Physical& last, absl::string_view last_body,
                                       const Physical& next, bool* certain) const {
  *certain = true;
  if (next.body()[0] == ' ') return "";
  if (last.ends_blank) return " ";
  if (last.prefix.partial) return "";
  const bool repeated = !next.prefix.stream.empty() && next.prefix.stream == last.prefix.stream;
  const Widths& widths = repeated ? body_widths_ : line_widths_;
  if ((repeated ? last.body_width : last.width) < widths.widest()) return " ";
  // A run ending in ":" "," or ";" ended a word ("...api.SignalException:"
  // before its message): a form's wrap as likely as a cut inside it.
  const size_t blank = last_body.rfind(' ');
  *certain = (blank == absl::string_view::npos || blank < last_body.size() / 2) &&
             absl::string_view(":,;").find(last_body.back()) == absl::string_view::npos;
  return "";
}

// Whether the lines near the widest are ragged below it (a form's word
// wrap) rather than flush with it (a terminal's cut).
bool LogReader::WordWrapped(const Physical& last, const Physical& next) const {
  const bool repeated = !next.prefix.stream.empty() && next.prefix.stream == last.prefix.stream;
  const Widths& widths = repeated ? body_widths_ : line_widths_;
  const int flush = widths.At(widths.widest());
  const int ragged =
      widths.Near(kWrapSlack) - flush - (widths.widest() > 0 ? widths.At(widths.widest() - 1) : 0);
  return ragged >= 2 && ragged >= flush;
}

void SpaceUncertainJoins(const LogicalLine& line, LogicalLine* out) {
  out->line = line.line;
  out->last_line = line.last_line;
  out->prefix = line.prefix;
  out->continuations = line.continuations;
  out->uncertain_joins.clear();
  out->word_wrapped = line.word_wrapped;
  const size_t text_at = line.shown.size() - line.text.size();
  out->shown.assign(line.shown, 0, text_at);
  size_t from = 0;
  for (size_t at : line.uncertain_joins) {
    out->shown.append(line.text.data() + from, at - from);
    out->shown += ' ';
    from = at;
  }
  out->shown.append(line.text.data() + from, line.text.size() - from);
  out->text = absl::string_view(out->shown).substr(text_at);
  // A piece that began at or after a new space begins that much later.
  for (auto& [offset, number] : out->continuations) {
    offset += std::count_if(line.uncertain_joins.begin(), line.uncertain_joins.end(),
                            [offset = offset](size_t at) { return at <= offset; });
  }
}

bool LogReader::Next(LogicalLine* out) {
  if (!has_pending_ && !ReadPhysical(&pending_)) return false;
  has_pending_ = false;
  std::swap(last_, pending_);
  out->line = out->last_line = last_.number;
  out->prefix = last_.prefix;
  // The physical line becomes the logical line's storage, uncopied.
  out->shown.swap(last_.line);
  const size_t text_at = out->prefix.length;
  size_t last_body_at = text_at;  // where the last piece's message starts in `shown`
  out->continuations.clear();
  out->uncertain_joins.clear();
  out->word_wrapped = false;
  for (int pieces = 1; ReadPhysical(&pending_);) {
    const absl::string_view shown = out->shown;
    if (pieces >= kMaxPieces || shown.size() >= kMaxLineBytes ||
        !Continues(last_, shown.substr(last_body_at), pending_, shown.substr(text_at))) {
      has_pending_ = true;
      break;
    }
    bool certain = true;
    const absl::string_view separator =
        Separator(last_, shown.substr(last_body_at), pending_, &certain);
    out->shown.append(separator.data(), separator.size());
    if (!certain) {
      if (out->uncertain_joins.empty()) out->word_wrapped = WordWrapped(last_, pending_);
      out->uncertain_joins.push_back(out->shown.size() - text_at);
    }
    out->continuations.emplace_back(out->shown.size() - text_at, pending_.number);
    last_body_at = out->shown.size();
    const absl::string_view body = pending_.body();
    out->shown.append(body.data(), body.size());
    out->last_line = pending_.number;
    std::swap(last_, pending_);
    ++pieces;
  }
  out->text = absl::string_view(out->shown).substr(text_at);
  return not_text_.empty();
}

}  // namespace gloowatch::client
