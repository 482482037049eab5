// Reading a log as explain-log matches it: the normalisation stage ahead of
// the signatures. Physical lines (bounded in length, CR, ANSI colour and
// cursor sequences, NUL bytes and a BOM removed) lose their prefixes
// (line_prefix.h); Windows paths get '/' and c10's "[W path\socket.cpp:N]"
// loses the directories; a message that a terminal, an issue form or a log
// shipper wrapped over several physical lines is joined again into one
// logical line, never with another writer's line; the original line numbers
// are kept. Binary input is recognised from its first bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "client/explain_log/line_prefix.h"

namespace gloowatch::client {

// Lines are cut at 1 MiB: Ray and some launchers put a whole traceback on
// one line, and memory must not grow with a hostile one.
inline constexpr size_t kMaxLineBytes = 1 << 20;

struct LogicalLine {
  // The first physical line's prefixes, then the message (with its
  // continuations): what a reader is shown as the example.
  std::string shown;
  // The message in `shown` as its program printed it: prefixes peeled,
  // cleaned, paths normalised, continuations joined. Signatures are matched
  // against it. A view into `shown`: copy a LogicalLine with
  // SpaceUncertainJoins only.
  absl::string_view text;
  int line = 0;       // the physical line it starts on, 1-based
  int last_line = 0;  // the physical line it ends on
  // Where each continued physical line begins in `text`: (offset, line).
  std::vector<std::pair<size_t, int>> continuations;
  // The joins among them made with nothing between on no evidence (no wrap
  // width known yet, no blank kept): the cut may have eaten a space there.
  std::vector<size_t> uncertain_joins;
  // Whether the log's wide lines look word-wrapped (a space was lost at
  // those joins) rather than cut by a terminal; false when unknown.
  bool word_wrapped = false;
  LinePrefix prefix;  // the first physical line's; time_at is into `shown`

  LogicalLine() = default;
  LogicalLine(const LogicalLine&) = delete;
  LogicalLine& operator=(const LogicalLine&) = delete;
};

// `line` with a space at each of its uncertain joins (offsets moved along).
void SpaceUncertainJoins(const LogicalLine& line, LogicalLine* out);

class LogReader {
 public:
  explicit LogReader(std::istream& in);
  LogReader(const LogReader&) = delete;
  LogReader& operator=(const LogReader&) = delete;

  // The next logical line; false at the end of the input, and as soon as it
  // proved not to be text (not_text() says why).
  bool Next(LogicalLine* out);

  int physical_lines() const { return physical_lines_; }
  uint64_t bytes() const { return bytes_; }
  bool saw_nul() const { return saw_nul_; }
  // "" while the input reads as text; else why it is not a text log ("an
  // ELF executable", "binary data (...)"). Final once Next returned false.
  const std::string& not_text() const { return not_text_; }

 private:
  // One physical line, cleaned and split into prefix and message.
  struct Physical {
    int number = 0;
    std::string line;  // cleaned; the message part normalised
    LinePrefix prefix;
    size_t width = 0;  // terminal columns of `line`
    size_t body_width = 0;
    bool ends_blank = false;  // blanks were trimmed from its end
    absl::string_view body() const { return absl::string_view(line).substr(prefix.length); }
  };

  // The next line as read; `plain`: its read held nothing to clean.
  bool NextRaw(absl::string_view* line, bool* plain);
  bool ReadPhysical(Physical* out);
  // Whether `next` goes on with the logical line `logical` whose last
  // physical piece is `last`.
  bool Continues(const Physical& last, absl::string_view last_body, const Physical& next,
                 absl::string_view logical) const;
  // What goes between `last` and `next` when joined; `*certain` tells
  // whether the widths or a kept blank decided it.
  absl::string_view Separator(const Physical& last, absl::string_view last_body,
                              const Physical& next, bool* certain) const;
  bool WordWrapped(const Physical& last, const Physical& next) const;
  void Sniff(const char* data, size_t n, bool at_end);

  std::istream& in_;
  std::vector<char> buffer_;
  size_t pos_ = 0, end_ = 0;
  std::string carry_;  // a line that spans reads
  bool eof_ = false;
  bool chunk_plain_ = false;

  Physical pending_;  // read ahead, not yet part of a logical line
  bool has_pending_ = false;
  Physical last_;  // the last piece of the logical line being built
  // How many lines had each width so far: a terminal's cut or a form's
  // word wrap leaves many lines at or just short of the widest.
  class Widths {
   public:
    void Add(size_t width);
    size_t widest() const { return widest_; }
    int At(size_t width) const;
    int Near(size_t slack) const;  // lines within `slack` of the widest

   private:
    static constexpr size_t kTracked = 4096;  // wider lines share the last count
    std::vector<int> count_ = std::vector<int>(kTracked + 1, 0);
    size_t widest_ = 0;
  };
  Widths line_widths_, body_widths_;  // whole lines; messages after a repeated prefix

  int physical_lines_ = 0;
  uint64_t bytes_ = 0;
  bool saw_nul_ = false;

  // The text check over the first bytes (see Sniff).
  std::string head_;  // the first bytes, for magic numbers
  uint64_t sniffed_ = 0, control_bytes_ = 0, nul_run_ = 0, nul_total_ = 0;
  bool sniff_done_ = false;
  std::string not_text_;
};

}  // namespace gloowatch::client
