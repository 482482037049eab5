#include "client/explain_log/line_prefix.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace gloowatch::client {
namespace {

// Hand-written recognisers: they run on every line, so each looks at its
// first byte or two before anything else and allocates nothing. Each returns
// the bytes its prefix takes at the start of `s` (0: not there).

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

size_t Digits(absl::string_view s, size_t at, size_t min, size_t max) {
  size_t n = 0;
  while (at + n < s.size() && n < max && IsDigit(s[at + n])) ++n;
  return n >= min ? n : 0;
}

bool At(absl::string_view s, size_t at, char c) { return at < s.size() && s[at] == c; }

// The blanks after a prefix; `one` takes at most a single space (the
// indentation after it is the message's own).
size_t Blanks(absl::string_view s, size_t at, bool one) {
  size_t n = 0;
  while (at + n < s.size() && (s[at + n] == ' ' || s[at + n] == '\t')) {
    ++n;
    if (one) break;
  }
  return n;
}

// hh:mm:ss with an optional fraction ([.,]digits).
size_t ClockTime(absl::string_view s, size_t at) {
  size_t p = at;
  for (int part = 0; part < 3; ++part) {
    if (part > 0 && !At(s, p++, ':')) return 0;
    if (Digits(s, p, 2, 2) == 0) return 0;
    p += 2;
  }
  if ((At(s, p, '.') || At(s, p, ',')) && Digits(s, p + 1, 1, 9) > 0) {
    p += 1 + Digits(s, p + 1, 1, 9);
  }
  return p - at;
}

// 2024-05-01T12:00:00.123Z, 2024-05-01 12:00:00,123, +02:00 / +0200 offsets,
// optionally in brackets; Go's 2024/05/01 too.
size_t IsoTime(absl::string_view s, size_t at) {
  size_t p = at;
  const bool bracket = At(s, p, '[');
  if (bracket) ++p;
  if (Digits(s, p, 4, 4) == 0) return 0;
  p += 4;
  const char sep = At(s, p, '-') ? '-' : '/';
  for (int part = 0; part < 2; ++part) {
    if (!At(s, p++, sep) || Digits(s, p, 2, 2) == 0) return 0;
    p += 2;
  }
  if (!At(s, p, 'T') && !At(s, p, ' ') && !At(s, p, '_')) return 0;
  ++p;
  const size_t clock = ClockTime(s, p);
  if (clock == 0) return 0;
  p += clock;
  if (At(s, p, 'Z')) {
    ++p;
  } else if ((At(s, p, '+') || At(s, p, '-')) && Digits(s, p + 1, 2, 2) > 0) {
    p += 3;
    if (At(s, p, ':')) ++p;
    p += Digits(s, p, 2, 2);
  }
  if (bracket) {
    // SGLang's "[2025-08-26 18:58:18 TP0]": a short tag may follow the time.
    if (At(s, p, ' ')) {
      const size_t close = s.find(']', p);
      if (close == absl::string_view::npos || close - p > 24) return 0;
      p = close;
    }
    if (!At(s, p, ']')) return 0;
    ++p;
  }
  return p - at;
}

// "May  1 12:00:00" (syslog, journald's short format).
size_t SyslogTime(absl::string_view s, size_t at) {
  static constexpr absl::string_view kMonths = "JanFebMarAprMayJunJulAugSepOctNovDec";
  if (at + 15 > s.size()) return 0;
  const size_t month = kMonths.find(s.substr(at, 3));
  if (month == absl::string_view::npos || month % 3 != 0 || s[at + 3] != ' ') return 0;
  size_t p = at + 4;
  if (At(s, p, ' ')) ++p;
  const size_t day = Digits(s, p, 1, 2);
  if (day == 0 || !At(s, p + day, ' ')) return 0;
  p += day + 1;
  const size_t clock = ClockTime(s, p);
  return clock == 0 ? 0 : p + clock - at;
}

// The kernel's "[ 4211.812345]".
size_t DmesgTime(absl::string_view s, size_t at) {
  if (!At(s, at, '[')) return 0;
  size_t p = at + 1;
  while (At(s, p, ' ')) ++p;
  const size_t whole = Digits(s, p, 1, 10);
  if (whole == 0 || !At(s, p + whole, '.')) return 0;
  p += whole + 1;
  const size_t fraction = Digits(s, p, 1, 9);
  if (fraction == 0 || !At(s, p + fraction, ']')) return 0;
  return p + fraction + 1 - at;
}

// Rich's and Lightning's "[12:00:00]" and a bare "12:00:00".
size_t ClockOnly(absl::string_view s, size_t at) {
  const bool bracket = At(s, at, '[');
  const size_t clock = ClockTime(s, at + (bracket ? 1 : 0));
  if (clock == 0) return 0;
  size_t p = at + (bracket ? 1 : 0) + clock;
  if (bracket) {
    if (!At(s, p, ']')) return 0;
    ++p;
  }
  return At(s, p, ' ') ? p - at : 0;
}

// glog's "E0501 12:00:00.123456  1234 file.cc:12] " (newer glog writes the
// year too, "I20240501 ..."; thread and file optional): sets the level.
size_t GlogPrefix(absl::string_view s, size_t at, char* level) {
  if (at >= s.size() || absl::string_view("IWEF").find(s[at]) == absl::string_view::npos) return 0;
  const size_t date = Digits(s, at + 1, 4, 8);
  if ((date != 4 && date != 8) || !At(s, at + 1 + date, ' ')) return 0;
  const size_t clock = ClockTime(s, at + 2 + date);
  if (clock == 0) return 0;
  size_t p = at + 2 + date + clock;
  // The thread id and "file:line]", when present.
  size_t q = p;
  while (At(s, q, ' ')) ++q;
  const size_t thread = Digits(s, q, 1, 10);
  if (thread > 0 && At(s, q + thread, ' ')) {
    size_t r = q + thread + 1;
    size_t end = r;
    while (end < s.size() && end - r < 200 && s[end] != ']' && s[end] != ' ') ++end;
    if (At(s, end, ']') && end > r) p = end + 1;
  }
  *level = s[at];
  return p - at;
}

// "[rank0]:", "[default0]:", "[trainer3]:", "[0]:", mpirun's
// "[1,0]<stderr>:", Horovod's "[0]<stdout>:", kubectl's "[pod/x/c] ".
size_t BracketTag(absl::string_view s, size_t at, std::string* rank) {
  if (!At(s, at, '[')) return 0;
  size_t p = at + 1;
  if (s.substr(p, 4) == "pod/") {
    const size_t close = s.find(']', p);
    if (close == absl::string_view::npos || close - p > 256 || !At(s, close + 1, ' ')) return 0;
    if (s.substr(p, close - p).find(' ') != absl::string_view::npos) return 0;
    return close + 1 - at;
  }
  size_t name = 0;
  while (p + name < s.size() && name < 32 &&
         (absl::ascii_isalpha(static_cast<unsigned char>(s[p + name])) || s[p + name] == '_' ||
          s[p + name] == '-')) {
    ++name;
  }
  const size_t number = Digits(s, p + name, 1, 6);
  if (number == 0) return 0;
  const absl::string_view tag_name = s.substr(p, name);
  p += name + number;
  if (name == 0 && At(s, p, ',')) {  // mpirun's "[job,rank]"
    const size_t second = Digits(s, p + 1, 1, 6);
    if (second == 0) return 0;
    p += 1 + second;
  }
  if (!At(s, p++, ']')) return 0;
  if (name == 0 && At(s, p, '<')) {  // "<stdout>:", "<stderr>:", "<stddiag>:"
    const size_t close = s.find(">:", p);
    if (close == absl::string_view::npos || close - p > 8) return 0;
    return close + 2 - at;
  }
  if (!At(s, p++, ':')) return 0;
  if (tag_name == "rank") *rank = std::string(s.substr(at + 5, number));
  return p - at;
}

// Ray's "(pid=123) ", "(RayTrainWorker pid=123, ip=10.0.0.1) ".
size_t RayTag(absl::string_view s, size_t at) {
  if (!At(s, at, '(')) return 0;
  const size_t close = s.find(')', at);
  if (close == absl::string_view::npos || close - at > 200) return 0;
  const absl::string_view inside = s.substr(at + 1, close - at - 1);
  const size_t pid = inside.find("pid=");
  if (pid == absl::string_view::npos || (pid > 0 && inside[pid - 1] != ' ')) return 0;
  if (Digits(inside, pid + 4, 1, 10) == 0 || inside.find('(') != absl::string_view::npos) return 0;
  return close + 1 - at;
}

// Kubernetes' CRI log line: "2024-05-01T12:00:00.123456789Z stderr F ".
size_t CriTag(absl::string_view s, size_t at, bool* partial) {
  for (absl::string_view stream : {" stdout ", " stderr "}) {
    if (s.substr(at, stream.size()) == stream && at + stream.size() + 1 < s.size() &&
        (s[at + stream.size()] == 'F' || s[at + stream.size()] == 'P') &&
        s[at + stream.size() + 1] == ' ') {
      *partial = s[at + stream.size()] == 'P';
      return stream.size() + 1;  // up to the space after F/P, which Blanks takes
    }
  }
  return 0;
}

// journald's and syslog's "host unit[pid]: " after the time.
size_t HostAndUnit(absl::string_view s, size_t at) {
  size_t p = at;
  while (p < s.size() && p - at < 64 && s[p] != ' ' && s[p] != ':') ++p;
  if (p == at || !At(s, p, ' ')) return 0;
  const size_t unit = ++p;
  while (p < s.size() && p - unit < 64 &&
         (absl::ascii_isalnum(static_cast<unsigned char>(s[p])) ||
          absl::string_view("._-@/").find(s[p]) != absl::string_view::npos)) {
    ++p;
  }
  if (p == unit) return 0;
  if (At(s, p, '[')) {
    const size_t pid = Digits(s, p + 1, 1, 10);
    if (pid == 0 || !At(s, p + 1 + pid, ']')) return 0;
    p += pid + 2;
  }
  if (!At(s, p, ':') || !At(s, p + 1, ' ')) return 0;
  return p + 1 - at;
}

// The writer tags found only as a line's first prefix (after times at
// most): srun's "0: ", docker compose's "svc-1  | ", torchx's
// "trainer/0 [1]:", pdsh's and DeepSpeed's "worker-1: ".
size_t LeadingTag(absl::string_view s, size_t at) {
  size_t p = at;
  while (At(s, p, ' ') && p - at < 6) ++p;
  const size_t task = Digits(s, p, 1, 5);
  if (task > 0 && At(s, p + task, ':') && At(s, p + task + 1, ' ')) return p + task + 1 - at;
  // A name: letters, digits, '.', '_', '-'.
  p = at;
  bool digit_or_dash = false, letter = false;
  while (p < s.size() && p - at < 64) {
    const char c = s[p];
    if (absl::ascii_isalpha(static_cast<unsigned char>(c))) {
      letter = true;
    } else if (IsDigit(c) || c == '-') {
      digit_or_dash = true;
    } else if (c != '.' && c != '_') {
      break;
    }
    ++p;
  }
  if (p == at) return 0;
  const size_t name_end = p;
  // docker compose: the name, padding, "| ".
  size_t q = name_end;
  while (At(s, q, ' ') && q - name_end < 40) ++q;
  if (q > name_end && At(s, q, '|') && (At(s, q + 1, ' ') || q + 1 == s.size())) {
    return q + 1 - at;
  }
  // torchx: "role/0 [1]:".
  if (At(s, name_end, '/')) {
    const size_t replica = Digits(s, name_end + 1, 1, 5);
    size_t r = name_end + 1 + replica;
    if (replica > 0 && At(s, r, ' ') && At(s, r + 1, '[')) {
      const size_t n = Digits(s, r + 2, 1, 5);
      if (n > 0 && At(s, r + 2 + n, ']') && At(s, r + 3 + n, ':')) return r + 4 + n - at;
    }
    return 0;
  }
  // NCCL's debug lines: "host:pid:tid [dev] ".
  if (At(s, name_end, ':')) {
    const size_t pid = Digits(s, name_end + 1, 1, 10);
    const size_t tid =
        pid > 0 && At(s, name_end + 1 + pid, ':') ? Digits(s, name_end + 2 + pid, 1, 10) : 0;
    size_t r = name_end + 2 + pid + tid;
    if (tid > 0 && At(s, r, ' ') && At(s, r + 1, '[')) {
      const size_t device = Digits(s, r + 2, 1, 4);
      if (device > 0 && At(s, r + 2 + device, ']')) return r + 3 + device - at;
    }
  }
  // pdsh / DeepSpeed: a host name with a digit or a dash, lower case, then
  // ": " (so that "RuntimeError: " and "INFO: " are not taken).
  if (!At(s, name_end, ':') || !At(s, name_end + 1, ' ') || !digit_or_dash) return 0;
  for (size_t i = at; i < name_end; ++i) {
    if (absl::ascii_isupper(static_cast<unsigned char>(s[i])) || s[i] == '_') return 0;
  }
  return letter || s.substr(at, name_end - at).find('.') != absl::string_view::npos
             ? name_end + 1 - at
             : 0;
}

}  // namespace

LinePrefix PeelPrefix(absl::string_view line) {
  LinePrefix out;
  size_t at = 0;
  bool writer_seen = false;  // a tag naming a writer was peeled
  // A few rounds: "2024-...Z stderr F [default0]:[rank0]:[W ...]" is three.
  for (int round = 0; round < 8 && at < line.size(); ++round) {
    size_t n = 0;
    bool is_time = false, one_blank = false;
    const char c = line[at];
    if (IsDigit(c) || c == '[') {
      if ((n = IsoTime(line, at)) > 0) {
        is_time = true;
        const size_t cri = CriTag(line, at + n, &out.partial);
        if (cri > 0) {
          absl::StrAppend(&out.stream, line.substr(at + n + 1, 6));  // "stdout" / "stderr"
          out.stream += '|';
          writer_seen = true;
          n += cri;
        } else if (At(line, at + n, ' ')) {
          // journald's short-iso: "host unit[pid]: " (with the pid, so that
          // "INFO name: " after a Python logger's time is not taken).
          const size_t host = HostAndUnit(line, at + n + 1);
          const absl::string_view taken = line.substr(at + n + 1, host);
          if (host > 0 && absl::EndsWith(taken, "]:")) {
            absl::StrAppend(&out.stream, taken);
            out.stream += '|';
            writer_seen = true;
            n += 1 + host;
          }
        }
      } else if ((n = DmesgTime(line, at)) > 0 || (n = ClockOnly(line, at)) > 0) {
        is_time = true;
      }
    }
    if (n == 0 && c == '[') {
      if ((n = BracketTag(line, at, &out.rank)) > 0) one_blank = true;
    } else if (n == 0 && c == '(') {
      if ((n = RayTag(line, at)) > 0) one_blank = true;
    } else if (n == 0 && absl::ascii_isupper(static_cast<unsigned char>(c))) {
      if ((n = SyslogTime(line, at)) > 0) {
        is_time = true;
        const size_t host = At(line, at + n, ' ') ? HostAndUnit(line, at + n + 1) : 0;
        if (host > 0) {
          absl::StrAppend(&out.stream, line.substr(at + n + 1, host));
          out.stream += '|';
          writer_seen = true;
          n += 1 + host;
        }
      } else if ((n = GlogPrefix(line, at, &out.level)) > 0) {
        is_time = true;
      }
    }
    if (n == 0 && !writer_seen) {
      if ((n = LeadingTag(line, at)) > 0) one_blank = true;
    }
    if (n == 0) break;
    if (is_time) {
      if (!out.timestamped) {
        out.timestamped = true;
        out.time_at = at;
      }
    } else {
      absl::StrAppend(&out.stream, line.substr(at, n));
      out.stream += '|';
      writer_seen = true;
    }
    at += n;
    at += Blanks(line, at, one_blank);
  }
  out.length = at;
  return out;
}

}  // namespace gloowatch::client
