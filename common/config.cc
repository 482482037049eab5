#include "common/config.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <exception>
#include <functional>
#include <limits>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/user_text.h"
#include "yaml-cpp/eventhandler.h"
#include "yaml-cpp/yaml.h"

namespace gloowatch {
namespace {

constexpr int kMaxDepth = 64;
constexpr size_t kMaxNameLength = 63;
constexpr size_t kMaxHostLength = 253;
constexpr size_t kMaxErrors = 20;
constexpr uint64_t kKiB = uint64_t{1} << 10;
constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr double kMaxLinkSpeed = 1e12;  // bytes/s (8 Tbps)
constexpr absl::Duration kMinInterval = absl::Milliseconds(100);
constexpr absl::Duration kMaxInterval = absl::Hours(24);
constexpr absl::Duration kMaxDuration = absl::Hours(24 * 7);
// Short rotations churn probe pairs; anything under a minute is for tests.
constexpr absl::Duration kMinSampleRotation = absl::Seconds(2);

template <typename... Args>
absl::Status Bad(const Args&... args) {
  return absl::InvalidArgumentError(absl::StrCat(args...));
}

// YAML allows no C0 control character but tab, LF and CR; yaml-cpp would
// read past them and report something else (a NUL byte came out as \x08).
absl::Status CheckPrintable(absl::string_view text, absl::string_view source) {
  int line = 1, column = 1;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t' && c != '\n' && c != '\r') || u == 0x7f) {
      return Bad(source, ":", line, ":", column, ": control character ",
                 Quote(absl::string_view(&c, 1)), " in the file; a config is plain text");
    }
    if (c == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return absl::OkStatus();
}

std::string ShowSize(uint64_t n) {
  static constexpr std::pair<uint64_t, const char*> kUnits[] = {
      {kGiB, "GiB"}, {kMiB, "MiB"}, {kKiB, "KiB"}};
  for (const auto& [unit, name] : kUnits) {
    if (n >= unit && n % unit == 0) return absl::StrCat(n / unit, name);
  }
  return absl::StrCat(n);
}

bool AllOf(absl::string_view s, absl::string_view chars) {
  return !s.empty() && s.find_first_not_of(chars) == absl::string_view::npos;
}
constexpr absl::string_view kDigits = "0123456789";

bool IsIpv4(absl::string_view s) {
  in_addr a;
  return inet_pton(AF_INET, std::string(s).c_str(), &a) == 1;
}

// Accepts a zone suffix ("fe80::1%eth0") for link-local addresses.
bool IsIpv6(absl::string_view s) {
  const size_t pct = s.find('%');
  if (pct != absl::string_view::npos &&
      !AllOf(s.substr(pct + 1),
             "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")) {
    return false;
  }
  in6_addr a;
  return inet_pton(AF_INET6, std::string(s.substr(0, pct)).c_str(), &a) == 1;
}

bool IsHostName(absl::string_view s) {
  absl::ConsumeSuffix(&s, ".");  // fully qualified
  if (s.empty() || s.size() > kMaxHostLength) return false;
  for (absl::string_view label : absl::StrSplit(s, '.')) {
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') {
      return false;
    }
    for (char c : label) {
      if (!absl::ascii_isalnum(c) && c != '-') return false;
    }
  }
  return true;
}

absl::Status CheckName(absl::string_view s) {
  if (s.empty()) return Bad("name must not be empty");
  if (s.size() > kMaxNameLength) {
    return Bad("name ", Quote(s), " is ", s.size(), " characters; the limit is ", kMaxNameLength);
  }
  for (char c : s) {
    if (!absl::ascii_isalnum(c) && c != '.' && c != '_' && c != '-') {
      return Bad("name ", Quote(s), " contains ", Quote(absl::string_view(&c, 1)),
                 "; use only letters, digits, '.', '_' and '-'");
    }
  }
  return absl::OkStatus();
}

absl::Status CheckIp(absl::string_view s) {
  if (IsIpv4(s) || IsIpv6(s)) return absl::OkStatus();
  if (absl::StartsWith(s, "[")) return Bad(Quote(s), ": write IPv6 addresses without brackets");
  return Bad(Quote(s), " is not an IP address (to pick by name, use gloo.interface)");
}

// The kernel's own rule (dev_valid_name).
absl::Status CheckInterface(absl::string_view s) {
  if (s.empty() || s.size() > 15 || s == "." || s == ".." ||
      s.find_first_of("/: \t\n\r\f\v") != absl::string_view::npos) {
    return Bad(Quote(s),
               " is not a valid interface name (1..15 characters, no '/', ':' or spaces)");
  }
  return absl::OkStatus();
}

absl::Status CheckPath(absl::string_view s) {
  if (s.empty() || s.size() > 4096 || s.find('\0') != absl::string_view::npos) {
    return Bad(Quote(s), " is not a file path");
  }
  return absl::OkStatus();
}

// "$2y$10$" + 22 characters of salt + 31 of hash, bcrypt's alphabet.
absl::Status CheckBcryptHash(absl::string_view s) {
  const bool shape =
      s.size() == 60 &&
      (absl::StartsWith(s, "$2a$") || absl::StartsWith(s, "$2b$") || absl::StartsWith(s, "$2y$")) &&
      absl::ascii_isdigit(s[4]) && absl::ascii_isdigit(s[5]) && s[6] == '$' &&
      s.find_first_not_of(
          "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
          "0123456789",
          7) == absl::string_view::npos;
  if (!shape) {
    return Bad(
        "is not a bcrypt hash (60 characters starting with $2y$ and the cost, as "
        "`htpasswd -nBC 10 USER` prints after the colon)");
  }
  return absl::OkStatus();
}

// ---- Parse state and the schema walker ------------------------------------

struct Ctx {
  std::string source;
  ConfigOptions options;
  std::vector<std::string> errors;
  size_t dropped = 0;
  // Where each visited key's value sits, so later cross-field checks can
  // point at it. Unrecorded paths (the root) report 1:1.
  absl::flat_hash_map<std::string, YAML::Mark> marks;

  void ErrorAt(const YAML::Mark& mark, absl::string_view path, absl::string_view problem) {
    if (errors.size() == kMaxErrors) {
      ++dropped;
      return;
    }
    errors.push_back(absl::StrCat(source, ":", mark.line >= 0 ? mark.line + 1 : 1, ":",
                                  mark.column >= 0 ? mark.column + 1 : 1, ": ", path,
                                  path.empty() ? "" : ": ", problem));
  }
  void Error(const std::string& path, absl::string_view problem) {
    ErrorAt(MarkOf(path), path, problem);
  }
  YAML::Mark MarkOf(const std::string& path) const {
    auto it = marks.find(path);
    return it == marks.end() ? YAML::Mark::null_mark() : it->second;
  }
  absl::Status ToStatus() const {
    std::string all = absl::StrJoin(errors, "\n");
    if (dropped > 0) absl::StrAppend(&all, "\n(", dropped, " more errors not shown)");
    return absl::InvalidArgumentError(all);
  }
};

std::string Describe(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Scalar:
      return absl::StrCat("the scalar ", Quote(n.Scalar()));
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a map";
    default:
      return "nothing";
  }
}

// Handles the value of one key (already known to exist) into `out`.
template <typename T>
using Handler = std::function<void(Ctx&, const YAML::Node&, const std::string& path, T& out)>;

template <typename T>
struct Field {
  absl::string_view key;
  bool required;
  Handler<T> handle;
};

size_t EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

template <typename T>
std::string UnknownKey(absl::string_view key, const std::vector<Field<T>>& fields) {
  std::vector<absl::string_view> names;
  absl::string_view best;
  size_t best_distance = std::numeric_limits<size_t>::max();
  for (const Field<T>& f : fields) {
    names.push_back(f.key);
    if (key.size() > 64) continue;
    const size_t d = EditDistance(absl::AsciiStrToLower(key), f.key);
    if (d < best_distance) best = f.key, best_distance = d;
  }
  std::string msg = absl::StrCat("unknown key ", Quote(key));
  if (best_distance <= (key.size() >= 5 ? 2u : 1u)) {
    absl::StrAppend(&msg, "; did you mean '", best, "'?");
  }
  absl::StrAppend(&msg, " (allowed: ", absl::StrJoin(names, ", "), ")");
  return msg;
}

template <typename T>
void WalkMap(Ctx& ctx, const YAML::Node& map, const std::string& path,
             const std::vector<Field<T>>& fields, T& out) {
  // yaml-cpp keeps every duplicate pair (lookups see the first), so check.
  absl::flat_hash_map<std::string, int> first_line;
  for (const auto& kv : map) {
    const YAML::Node& key = kv.first;
    if (!key.IsScalar()) {
      ctx.ErrorAt(key.Mark(), path, absl::StrCat("keys must be strings, got ", Describe(key)));
      continue;
    }
    const std::string& name = key.Scalar();
    const std::string sub = path.empty() ? Clip(name) : absl::StrCat(path, ".", Clip(name));
    auto [it, fresh] = first_line.emplace(name, key.Mark().line + 1);
    if (!fresh) {
      ctx.ErrorAt(
          key.Mark(), sub,
          absl::StrCat("duplicate key ", Quote(name), " (first set on line ", it->second, ")"));
      continue;
    }
    auto field = std::find_if(fields.begin(), fields.end(),
                              [&](const Field<T>& f) { return f.key == name; });
    if (field == fields.end()) {
      ctx.ErrorAt(key.Mark(), sub, UnknownKey(name, fields));
      continue;
    }
    // An empty value's mark points past the key (often the next line).
    ctx.marks[sub] = kv.second.IsNull() ? key.Mark() : kv.second.Mark();
    field->handle(ctx, kv.second, sub, out);
  }
  for (const Field<T>& f : fields) {
    // --node stands for a missing `node:`.
    const bool given = path.empty() && f.key == "node" && !ctx.options.node.empty();
    if (f.required && !given && !first_line.contains(f.key)) {
      ctx.Error(path, absl::StrCat("missing required key '", f.key, "'"));
    }
  }
}

// A scalar parsed by `parse` (string_view -> StatusOr<V>) into out.*member.
template <typename T, typename V, typename Parse>
Handler<T> Leaf(V T::*member, const char* expected, Parse parse) {
  return [=](Ctx& ctx, const YAML::Node& v, const std::string& path, T& out) {
    if (!v.IsScalar()) {
      return ctx.Error(path, absl::StrCat("expected ", expected, ", got ", Describe(v)));
    }
    absl::StatusOr<V> parsed = parse(v.Scalar());
    if (!parsed.ok()) return ctx.Error(path, parsed.status().message());
    out.*member = *std::move(parsed);
  };
}

// A nested map of settings; an empty value (all keys commented out) is fine.
template <typename T, typename S>
Handler<T> Section(S T::*member, std::vector<Field<S>> fields) {
  return [=](Ctx& ctx, const YAML::Node& v, const std::string& path, T& out) {
    if (v.IsNull()) return;
    if (!v.IsMap()) return ctx.Error(path, absl::StrCat("expected a map, got ", Describe(v)));
    WalkMap(ctx, v, path, fields, out.*member);
  };
}

template <typename T, typename E>
Handler<T> List(std::vector<E> T::*member, std::vector<Field<E>> fields) {
  return [=](Ctx& ctx, const YAML::Node& v, const std::string& path, T& out) {
    if (v.IsNull()) return;
    if (!v.IsSequence()) return ctx.Error(path, absl::StrCat("expected a list, got ", Describe(v)));
    size_t i = 0;
    for (const YAML::Node& item : v) {
      const std::string sub = absl::StrCat(path, "[", i++, "]");
      ctx.marks[sub] = item.Mark();
      if (!item.IsMap()) {
        ctx.Error(sub, absl::StrCat("expected a map, got ", Describe(item)));
        continue;
      }
      E element;
      WalkMap(ctx, item, sub, fields, element);
      (out.*member).push_back(std::move(element));
    }
  };
}

template <typename T>
Handler<T> Text(std::string T::*member, const char* expected,
                absl::Status (*check)(absl::string_view)) {
  return Leaf(member, expected, [check](absl::string_view s) -> absl::StatusOr<std::string> {
    if (absl::Status st = check(s); !st.ok()) return st;
    return std::string(s);
  });
}

template <typename T>
Handler<T> Addr(HostPort T::*member) {
  return Leaf(member, "host:port", ParseHostPort);
}

// lo == 0 means "positive".
absl::StatusOr<absl::Duration> ParseDurationIn(absl::string_view s, absl::Duration lo,
                                               absl::Duration hi) {
  absl::Duration d;
  if (!absl::ParseDuration(s, &d) || d == absl::InfiniteDuration() ||
      d == -absl::InfiniteDuration()) {
    return Bad(Quote(s), " is not a duration (e.g. 250us, 500ms, 5s, 1m, 1h30m)");
  }
  if (lo == absl::ZeroDuration() && d <= lo) return Bad(Quote(s), " must be > 0");
  if (d < lo || d > hi) {
    return Bad(Quote(s), " is out of range: must be ",
               lo == absl::ZeroDuration() ? "> 0" : ">= " + absl::FormatDuration(lo),
               " and <= ", absl::FormatDuration(hi));
  }
  return d;
}

template <typename T>
Handler<T> Dur(absl::Duration T::*member, absl::Duration lo, absl::Duration hi) {
  return Leaf(member, "a duration",
              [lo, hi](absl::string_view s) { return ParseDurationIn(s, lo, hi); });
}

template <typename T, typename U>
Handler<T> Size(U T::*member, uint64_t lo, uint64_t hi) {
  return Leaf(member, "a size", [lo, hi](absl::string_view s) -> absl::StatusOr<U> {
    absl::StatusOr<uint64_t> n = ParseByteSize(s);
    if (!n.ok()) return n.status();
    if (*n < lo || *n > hi) {
      return Bad(Quote(s), " is out of range: must be >= ", ShowSize(lo), " and <= ", ShowSize(hi));
    }
    return static_cast<U>(*n);
  });
}

template <typename T>
Handler<T> Count(uint32_t T::*member, uint32_t lo, uint32_t hi) {
  return Leaf(member, "a whole number", [lo, hi](absl::string_view s) -> absl::StatusOr<uint32_t> {
    absl::string_view digits = s;
    const bool negative = absl::ConsumePrefix(&digits, "-");
    if (!AllOf(digits, kDigits)) return Bad(Quote(s), " is not a whole number");
    uint64_t n = 0;
    if (negative || !absl::SimpleAtoi(digits, &n) || n < lo || n > hi) {
      return Bad(Quote(s), " is out of range: must be >= ", lo, " and <= ", hi);
    }
    return static_cast<uint32_t>(n);
  });
}

template <typename T>
Handler<T> Fraction(double T::*member, double lo, double hi, bool lo_inclusive = true) {
  return Leaf(member, "a number",
              [lo, hi, lo_inclusive](absl::string_view s) -> absl::StatusOr<double> {
                double x;
                // The character filter keeps out inf, nan and hex floats.
                if (!AllOf(s, "0123456789.eE+-") || !absl::SimpleAtod(s, &x)) {
                  return Bad(Quote(s), " is not a number");
                }
                if (!((lo_inclusive ? x >= lo : x > lo) && x <= hi)) {
                  return Bad(Quote(s), " is out of range: must be ", lo_inclusive ? ">= " : "> ",
                             lo, " and <= ", hi);
                }
                return x;
              });
}

template <typename T>
Handler<T> Speed(double T::*member) {
  return Leaf(member, "a link speed", [](absl::string_view s) -> absl::StatusOr<double> {
    absl::StatusOr<double> v = ParseLinkSpeed(s);
    if (v.ok() && *v > kMaxLinkSpeed) return Bad(Quote(s), " is out of range: must be <= 8Tbps");
    return v;
  });
}

// Label names gloowatch's series or Prometheus itself use; a topology label
// with one of these names would clash on gloowatch_build_info or in a join.
constexpr absl::string_view kReservedLabels[] = {
    "node",      "peer",    "job",          "instance", "version",      "gloo_version",
    "group",     "le",      "quantile",     "reason",   "kind",         "direction",
    "interface", "process", "training_job", "rank",     "exported_job", "cluster",
};

absl::Status CheckLabelName(absl::string_view s) {
  const bool valid =
      !s.empty() && s.size() <= kMaxNameLength && (absl::ascii_isalpha(s[0]) || s[0] == '_') &&
      std::all_of(s.begin(), s.end(), [](char c) { return absl::ascii_isalnum(c) || c == '_'; });
  if (!valid) {
    return Bad("label name ", Quote(s),
               " is not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*, at most ", kMaxNameLength,
               " characters)");
  }
  if (absl::StartsWith(s, "__"))
    return Bad("label name ", Quote(s), " is reserved (\"__\" prefix)");
  for (absl::string_view reserved : kReservedLabels) {
    if (s == reserved) {
      return Bad("label name ", Quote(s),
                 " is reserved (gloowatch or Prometheus sets it); choose another, e.g. rack, "
                 "switch, zone");
    }
  }
  return absl::OkStatus();
}

absl::Status CheckLabelValue(absl::string_view s) {
  if (s.empty()) return Bad("label value must not be empty");
  if (s.size() > kMaxTopologyLabelValue) {
    return Bad("label value ", Quote(s), " is ", s.size(), " characters; the limit is ",
               kMaxTopologyLabelValue);
  }
  for (char c : s) {
    if (!absl::ascii_isalnum(c) && c != '.' && c != '_' && c != '-' && c != ':' && c != '/') {
      return Bad("label value ", Quote(s), " contains ", Quote(absl::string_view(&c, 1)),
                 "; use only letters, digits, '.', '_', '-', ':' and '/'");
    }
  }
  return absl::OkStatus();
}

// `labels:`: a small map of topology labels (TopologyLabels).
template <typename T>
Handler<T> Labels(TopologyLabels T::*member) {
  return [=](Ctx& ctx, const YAML::Node& v, const std::string& path, T& out) {
    if (v.IsNull()) return;
    if (!v.IsMap()) return ctx.Error(path, absl::StrCat("expected a map, got ", Describe(v)));
    TopologyLabels& labels = out.*member;
    for (const auto& kv : v) {
      const YAML::Node& key = kv.first;
      if (!key.IsScalar()) {
        ctx.ErrorAt(key.Mark(), path, absl::StrCat("keys must be strings, got ", Describe(key)));
        continue;
      }
      const std::string& name = key.Scalar();
      const std::string sub = absl::StrCat(path, ".", Clip(name));
      if (absl::Status st = CheckLabelName(name); !st.ok()) {
        ctx.ErrorAt(key.Mark(), sub, st.message());
        continue;
      }
      if (labels.count(name) > 0) {
        ctx.ErrorAt(key.Mark(), sub, absl::StrCat("duplicate label ", Quote(name)));
        continue;
      }
      const YAML::Node& value = kv.second;
      if (!value.IsScalar()) {
        ctx.ErrorAt(value.IsNull() ? key.Mark() : value.Mark(), sub,
                    absl::StrCat("expected a label value, got ", Describe(value)));
        continue;
      }
      if (absl::Status st = CheckLabelValue(value.Scalar()); !st.ok()) {
        ctx.ErrorAt(value.Mark(), sub, st.message());
        continue;
      }
      if (labels.size() == kMaxTopologyLabels) {
        ctx.ErrorAt(key.Mark(), sub,
                    absl::StrCat("too many labels: at most ", kMaxTopologyLabels, " per node"));
        continue;
      }
      labels.emplace(name, value.Scalar());
    }
  };
}

const std::vector<Field<Config>>& Schema() {
  static const auto* const kSchema = new std::vector<Field<Config>>{
      {"node", true, Text(&Config::node, "a name", CheckName)},
      {"group", false, Text(&Config::group, "a name", CheckName)},
      {"labels", false, Labels(&Config::labels)},
      {"grpc_listen", true, Addr(&Config::grpc_listen)},
      {"metrics_listen", true, Addr(&Config::metrics_listen)},
      {"metrics_web", false,
       Section(
           &Config::metrics_web,
           std::vector<Field<MetricsWebConfig>>{
               {"tls_cert", false,
                Text(&MetricsWebConfig::tls_cert_file, "a file path", CheckPath)},
               {"tls_key", false, Text(&MetricsWebConfig::tls_key_file, "a file path", CheckPath)},
               {"tls_client_ca", false,
                Text(&MetricsWebConfig::tls_client_ca_file, "a file path", CheckPath)},
               {"basic_auth_user", false,
                Text(&MetricsWebConfig::basic_auth_user, "a name", CheckName)},
               {"basic_auth_password_hash", false,
                Text(&MetricsWebConfig::basic_auth_password_hash, "a bcrypt hash",
                     CheckBcryptHash)},
           })},
      {"gloo", false,
       Section(
           &Config::gloo,
           std::vector<Field<GlooConfig>>{
               {"address", false, Text(&GlooConfig::address, "an IP address", CheckIp)},
               {"interface", false,
                Text(&GlooConfig::interface, "an interface name", CheckInterface)},
               {"timeout", false, Dur(&GlooConfig::timeout, absl::ZeroDuration(), absl::Hours(1))},
               {"link_speed", false, Speed(&GlooConfig::link_speed_bytes_per_second)},
           })},
      {"schedule", false,
       Section(&Config::schedule,
               std::vector<Field<ScheduleConfig>>{
                   {"latency_interval", false,
                    Dur(&ScheduleConfig::latency_interval, kMinInterval, kMaxInterval)},
                   {"skew_interval", false,
                    Dur(&ScheduleConfig::skew_interval, kMinInterval, kMaxInterval)},
                   {"bandwidth_interval", false,
                    Dur(&ScheduleConfig::bandwidth_interval, kMinInterval, kMaxInterval)},
                   {"jitter", false, Fraction(&ScheduleConfig::jitter, 0, 0.5)},
                   {"bandwidth_budget", false,
                    Fraction(&ScheduleConfig::bandwidth_budget, 0, 1, /*lo_inclusive=*/false)},
               })},
      {"probe", false,
       Section(
           &Config::probe,
           std::vector<Field<ProbeConfig>>{
               {"latency_message_bytes", false, Size(&ProbeConfig::latency_message_bytes, 8, kMiB)},
               {"latency_burst", false, Count(&ProbeConfig::latency_burst, 1, 1000)},
               {"bandwidth_bytes", false, Size(&ProbeConfig::bandwidth_bytes, 1, 16 * kGiB)},
               {"bandwidth_message_bytes", false,
                Size(&ProbeConfig::bandwidth_message_bytes, 1, 256 * kMiB)},
               {"skew_burst", false, Count(&ProbeConfig::skew_burst, 1, 1000)},
               {"flows", false, Count(&ProbeConfig::flows, 1, kMaxProbeFlows)},
               {"latency_window", false,
                Dur(&ProbeConfig::latency_window, absl::ZeroDuration(), kMaxDuration)},
               {"backoff_initial", false,
                Dur(&ProbeConfig::backoff_initial, absl::ZeroDuration(), kMaxInterval)},
               {"backoff_max", false,
                Dur(&ProbeConfig::backoff_max, absl::ZeroDuration(), kMaxInterval)},
           })},
      {"thresholds", false,
       Section(
           &Config::thresholds,
           std::vector<Field<Thresholds>>{
               {"latency", false, Dur(&Thresholds::latency, absl::ZeroDuration(), kMaxDuration)},
               {"bandwidth_link_ratio", false, Fraction(&Thresholds::bandwidth_link_ratio, 0, 1)},
               {"clock_offset", false,
                Dur(&Thresholds::clock_offset, absl::ZeroDuration(), kMaxDuration)},
               {"failure_window", false,
                Dur(&Thresholds::failure_window, absl::ZeroDuration(), kMaxDuration)},
               {"communication_share", false, Fraction(&Thresholds::communication_share, 0, 1)},
               {"scheduling_delay", false,
                Dur(&Thresholds::scheduling_delay, absl::ZeroDuration(), kMaxDuration)},
               {"cpu_steal_ratio", false, Fraction(&Thresholds::cpu_steal_ratio, 0, 1)},
           })},
      {"tls", false,
       Section(&Config::tls,
               std::vector<Field<TlsConfig>>{
                   {"ca", false, Text(&TlsConfig::ca_file, "a file path", CheckPath)},
                   {"cert", false, Text(&TlsConfig::cert_file, "a file path", CheckPath)},
                   {"key", false, Text(&TlsConfig::key_file, "a file path", CheckPath)},
               })},
      {"topology", false,
       Section(&Config::topology,
               std::vector<Field<TopologyConfig>>{
                   {"full_mesh_max_nodes", false,
                    Count(&TopologyConfig::full_mesh_max_nodes, 1, 1000000)},
                   {"sample_peers", false, Count(&TopologyConfig::sample_peers, 1, 1024)},
                   {"sample_rotation", false,
                    Dur(&TopologyConfig::sample_rotation, kMinSampleRotation, kMaxInterval)},
                   {"group_peers_max", false, Count(&TopologyConfig::group_peers_max, 0, 1024)},
                   {"cross_group_peers_max", false,
                    Count(&TopologyConfig::cross_group_peers_max, 1, 1024)},
               })},
      {"peers", false,
       List(&Config::peers,
            std::vector<Field<PeerConfig>>{
                {"name", true, Text(&PeerConfig::name, "a name", CheckName)},
                {"grpc", true, Addr(&PeerConfig::grpc)},
                {"group", false, Text(&PeerConfig::group, "a name", CheckName)},
                {"labels", false, Labels(&PeerConfig::labels)},
            })},
  };
  return *kSchema;
}

std::string LineOf(const Ctx& ctx, const std::string& path) {
  return absl::StrCat(ctx.MarkOf(path).line + 1);
}

// Rules spanning several keys; run only on an otherwise valid config.
void CheckCrossFields(Ctx& ctx, const Config& c) {
  if (!c.gloo.address.empty() && !c.gloo.interface.empty()) {
    ctx.Error("gloo.interface", absl::StrCat("set gloo.address (line ", LineOf(ctx, "gloo.address"),
                                             ") or gloo.interface, not both"));
  }
  const TlsConfig& tls = c.tls;
  if ((tls.ca_file.empty() || tls.cert_file.empty() || tls.key_file.empty()) &&
      !(tls.ca_file.empty() && tls.cert_file.empty() && tls.key_file.empty())) {
    ctx.Error("tls", "set all of tls.ca, tls.cert and tls.key, or none");
  }
  const MetricsWebConfig& web = c.metrics_web;
  if (web.tls_cert_file.empty() != web.tls_key_file.empty()) {
    ctx.Error("metrics_web", "set both metrics_web.tls_cert and metrics_web.tls_key, or neither");
  }
  if (!web.tls_client_ca_file.empty() && web.tls_cert_file.empty()) {
    ctx.Error("metrics_web.tls_client_ca",
              "client certificates need TLS: set metrics_web.tls_cert and tls_key too");
  }
  if (web.basic_auth_user.empty() != web.basic_auth_password_hash.empty()) {
    ctx.Error("metrics_web",
              "set both metrics_web.basic_auth_user and basic_auth_password_hash, "
              "or neither");
  }
  const ProbeConfig& p = c.probe;
  if (p.bandwidth_bytes % p.bandwidth_message_bytes != 0) {
    const bool msg_set = ctx.marks.contains("probe.bandwidth_message_bytes");
    ctx.Error(
        msg_set ? "probe.bandwidth_message_bytes" : "probe.bandwidth_bytes",
        absl::StrCat("probe.bandwidth_message_bytes (", ShowSize(p.bandwidth_message_bytes),
                     ") must divide probe.bandwidth_bytes (", ShowSize(p.bandwidth_bytes), ")"));
  } else if (p.bandwidth_bytes / p.bandwidth_message_bytes > kMaxBandwidthMessages) {
    ctx.Error("probe.bandwidth_message_bytes",
              absl::StrCat("probe.bandwidth_bytes / probe.bandwidth_message_bytes must be at most ",
                           kMaxBandwidthMessages, " messages per transfer, got ",
                           p.bandwidth_bytes / p.bandwidth_message_bytes));
  }
  if (p.backoff_initial > p.backoff_max) {
    ctx.Error(
        ctx.marks.contains("probe.backoff_initial") ? "probe.backoff_initial" : "probe.backoff_max",
        absl::StrCat("probe.backoff_initial (", absl::FormatDuration(p.backoff_initial),
                     ") must not exceed probe.backoff_max (", absl::FormatDuration(p.backoff_max),
                     ")"));
  }
  const auto wildcard = [](const HostPort& h) { return h.host == "0.0.0.0" || h.host == "::"; };
  if (c.grpc_listen.port == c.metrics_listen.port &&
      (absl::EqualsIgnoreCase(c.grpc_listen.host, c.metrics_listen.host) ||
       wildcard(c.grpc_listen) || wildcard(c.metrics_listen))) {
    ctx.Error("metrics_listen",
              absl::StrCat("port ", c.metrics_listen.port, " clashes with grpc_listen (line ",
                           LineOf(ctx, "grpc_listen"), ")"));
  }
  absl::flat_hash_map<std::string, size_t> by_name, by_address;
  for (size_t i = 0; i < c.peers.size(); ++i) {
    const PeerConfig& peer = c.peers[i];
    const std::string at = absl::StrCat("peers[", i, "]");
    if (peer.name == c.node && ctx.options.node.empty()) {
      ctx.Error(at + ".name",
                absl::StrCat("peer ", Quote(peer.name),
                             " has this node's own name (node:); list only the other nodes"));
    }
    if (auto [it, fresh] = by_name.emplace(peer.name, i); !fresh) {
      const std::string other = absl::StrCat("peers[", it->second, "].name");
      ctx.Error(at + ".name", absl::StrCat("duplicate peer name ", Quote(peer.name), " (also ",
                                           other, " on line ", LineOf(ctx, other), ")"));
    }
    const std::string address = absl::AsciiStrToLower(peer.grpc.ToString());
    if (auto [it, fresh] = by_address.emplace(address, i); !fresh) {
      const std::string other = absl::StrCat("peers[", it->second, "].grpc");
      ctx.Error(at + ".grpc", absl::StrCat("duplicate peer address ", Quote(address), " (also ",
                                           other, " on line ", LineOf(ctx, other), ")"));
    }
  }
}

// Our own rejections, thrown from inside yaml-cpp's parser; unlike its syntax
// errors they are reported without an "invalid YAML" prefix.
struct Rejected : YAML::ParserException {
  using ParserException::ParserException;
};

// Sees parse events before yaml-cpp builds nodes. Collection starts arrive
// before the parser recurses into them, so throwing here bounds that
// recursion (and stack use) at kMaxDepth whatever the input.
class ShapeCheck : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++documents_ > 1) {
      throw Rejected(mark, "more than one YAML document; expected a single map");
    }
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    Enter(mark);
  }
  void OnSequenceEnd() override { --depth_; }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    Enter(mark);
  }
  void OnMapEnd() override { --depth_; }

 private:
  void Enter(const YAML::Mark& mark) {
    if (++depth_ > kMaxDepth) {
      throw Rejected(mark, absl::StrCat("nested deeper than ", kMaxDepth, " levels"));
    }
  }
  int depth_ = 0;
  int documents_ = 0;
};

}  // namespace

std::string HostPort::ToString() const {
  if (absl::StrContains(host, ':')) return absl::StrCat("[", host, "]:", port);
  return absl::StrCat(host, ":", port);
}

absl::StatusOr<HostPort> ParseHostPort(absl::string_view text) {
  absl::string_view host, port, rest = text;
  if (absl::ConsumePrefix(&rest, "[")) {
    const size_t close = rest.find(']');
    if (close == absl::string_view::npos) {
      return Bad(Quote(text), ": missing ']' after IPv6 address");
    }
    host = rest.substr(0, close);
    rest.remove_prefix(close + 1);
    if (!absl::ConsumePrefix(&rest, ":")) return Bad(Quote(text), ": missing ':port' after ']'");
    port = rest;
    if (host.empty()) return Bad(Quote(text), ": empty host");
    if (!IsIpv6(host)) return Bad(Quote(text), ": ", Quote(host), " is not an IPv6 address");
  } else {
    const size_t colon = rest.rfind(':');
    if (colon == absl::string_view::npos) {
      return Bad(Quote(text), ": missing port (expected host:port, or [v6]:port)");
    }
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
    if (host.empty()) {
      return Bad(Quote(text), ": empty host (use 0.0.0.0 or [::] for all addresses)");
    }
    if (absl::StrContains(host, ':')) {
      return Bad(Quote(text), ": put IPv6 addresses in brackets, e.g. [::1]:7601");
    }
    if (host.size() > kMaxHostLength) {
      return Bad(Quote(text), ": host is ", host.size(), " characters; the limit is ",
                 kMaxHostLength);
    }
    // All-numeric names are never DNS names; treat them as (bad) IPv4.
    if (AllOf(host, "0123456789.") ? !IsIpv4(host) : !IsHostName(host)) {
      return Bad(Quote(text), ": ", Quote(host), " is not an IP address or host name");
    }
  }
  if (port.empty()) return Bad(Quote(text), ": missing port number");
  if (!AllOf(port, kDigits)) return Bad(Quote(text), ": port ", Quote(port), " is not a number");
  uint64_t number = 0;  // overflow (more than 20 digits) fails the parse
  if (!absl::SimpleAtoi(port, &number) || number < 1 || number > 65535) {
    return Bad(Quote(text), ": port ", Clip(port), " is out of range 1..65535");
  }
  HostPort result;
  result.host = std::string(host);
  result.port = static_cast<uint16_t>(number);
  return result;
}

absl::StatusOr<uint64_t> ParseByteSize(absl::string_view text) {
  static constexpr std::pair<absl::string_view, uint64_t> kUnits[] = {
      {"", 1},       {"B", 1},     {"KiB", kKiB},   {"MiB", kMiB},
      {"GiB", kGiB}, {"KB", 1000}, {"MB", 1000000}, {"GB", 1000000000},
  };
  const absl::string_view s = absl::StripAsciiWhitespace(text);
  const absl::string_view number = s.substr(0, s.find_first_not_of(kDigits));
  const absl::string_view unit = absl::StripLeadingAsciiWhitespace(s.substr(number.size()));
  const auto* u = std::find_if(std::begin(kUnits), std::end(kUnits),
                               [&](const auto& entry) { return entry.first == unit; });
  if (number.empty() || u == std::end(kUnits)) {
    return Bad(Quote(text), " is not a size (e.g. 4096, 64KiB, 4MiB, 1GiB, 1GB)");
  }
  uint64_t n = 0;
  if (!absl::SimpleAtoi(number, &n) || n > std::numeric_limits<uint64_t>::max() / u->second) {
    return Bad(Quote(text), " is too large");
  }
  return n * u->second;
}

absl::StatusOr<double> ParseLinkSpeed(absl::string_view text) {
  static constexpr std::pair<absl::string_view, double> kUnits[] = {
      {"", 1},           {"B/s", 1},        {"KB/s", 1e3},       {"MB/s", 1e6},
      {"GB/s", 1e9},     {"Mbps", 1e6 / 8}, {"Mbit", 1e6 / 8},   {"Mbit/s", 1e6 / 8},
      {"Gbps", 1e9 / 8}, {"Gbit", 1e9 / 8}, {"Gbit/s", 1e9 / 8},
  };
  const absl::string_view s = absl::StripAsciiWhitespace(text);
  const absl::string_view number = s.substr(0, s.find_first_not_of("0123456789."));
  const absl::string_view unit = absl::StripLeadingAsciiWhitespace(s.substr(number.size()));
  const auto* u = std::find_if(std::begin(kUnits), std::end(kUnits),
                               [&](const auto& entry) { return entry.first == unit; });
  double value = 0;
  if (u == std::end(kUnits) || std::count(number.begin(), number.end(), '.') > 1 ||
      !absl::SimpleAtod(number, &value)) {
    return Bad(Quote(text), " is not a link speed (e.g. 10Gbps, 25Gbit, 1.25GB/s, 100Mbps)");
  }
  return value * u->second;
}

// --node: this node's name. Checked before the cross-field rules, which
// then allow this node in the peer list.
void ApplyNodeOption(Ctx& ctx, Config& c) {
  if (ctx.options.node.empty()) return;
  if (absl::Status s = CheckName(ctx.options.node); !s.ok()) {
    ctx.Error("", absl::StrCat("--node: ", s.message()));
    return;
  }
  c.node = ctx.options.node;
}

// With --node, one file may list every node: our own entry leaves the peers
// (its group and labels become ours unless `group:` / `labels:` are set).
void DropSelfFromPeers(Config& c) {
  auto self = std::find_if(c.peers.begin(), c.peers.end(),
                           [&](const PeerConfig& p) { return p.name == c.node; });
  if (self == c.peers.end()) return;
  if (c.group.empty()) c.group = self->group;
  if (c.labels.empty()) c.labels = self->labels;
  c.peers.erase(self);
}

absl::StatusOr<Config> ParseConfig(absl::string_view yaml, absl::string_view source,
                                   const ConfigOptions& options) {
  Ctx ctx;
  ctx.source = std::string(source);
  ctx.options = options;
  if (yaml.size() > kMaxConfigBytes) {
    return Bad(source, ": config is ", yaml.size(), " bytes; the limit is 1 MiB");
  }
  if (absl::Status s = CheckPrintable(yaml, source); !s.ok()) return s;
  try {
    const std::string text(yaml);
    {
      std::istringstream in(text);
      YAML::Parser parser(in);
      ShapeCheck check;
      while (parser.HandleNextDocument(check)) {
      }
    }
    const YAML::Node root = YAML::Load(text);
    if (root.IsNull()) {
      ctx.Error("",
                "config is empty; expected a map with at least node, grpc_listen, metrics_listen");
    } else if (!root.IsMap()) {
      ctx.Error("", absl::StrCat("top level must be a map of settings, got ", Describe(root)));
    } else {
      Config config;
      config.source = std::string(source);
      config.yaml = std::string(text);
      WalkMap(ctx, root, "", Schema(), config);
      if (ctx.errors.empty()) ApplyNodeOption(ctx, config);
      if (ctx.errors.empty()) CheckCrossFields(ctx, config);
      if (ctx.errors.empty()) {
        if (!options.node.empty()) DropSelfFromPeers(config);
        return config;
      }
    }
  } catch (const Rejected& e) {
    ctx.ErrorAt(e.mark, "", e.msg);
  } catch (const YAML::ParserException& e) {
    ctx.ErrorAt(e.mark, "", absl::StrCat("invalid YAML: ", e.msg));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(source, ": unexpected error: ", e.what()));
  }
  return ctx.ToStatus();
}

absl::StatusOr<Config> LoadConfigFile(const std::string& path, const ConfigOptions& options) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot open config file '", path, "'"));
  }
  std::string text;
  absl::Status status;
  char buffer[16384];
  while (status.ok()) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      status = absl::ErrnoToStatus(errno, absl::StrCat("cannot read config file '", path, "'"));
    } else if (n == 0) {
      break;
    } else if (text.append(buffer, n).size() > kMaxConfigBytes) {
      status = Bad("config file '", path, "' is larger than 1 MiB");
    }
  }
  close(fd);
  if (!status.ok()) return status;
  return ParseConfig(text, path, options);
}

}  // namespace gloowatch
