#include "tests/support/metrics_text.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace gloowatch::testing {
namespace {

struct SampleLine {
  absl::string_view series;  // name{labels}, as written
  double value;
};

// A sample line ("series value"); nullopt for comments, blanks and garbage.
std::optional<SampleLine> SplitSampleLine(absl::string_view line) {
  if (line.empty() || line[0] == '#') return std::nullopt;
  const size_t space = line.rfind(' ');
  if (space == absl::string_view::npos) return std::nullopt;
  double value;
  if (!absl::SimpleAtod(line.substr(space + 1), &value)) return std::nullopt;
  return SampleLine{line.substr(0, space), value};
}

// `a="x",b="y\"z"` -> {a: x, b: y"z}; false when malformed.
bool ParseLabels(absl::string_view text, std::map<std::string, std::string>* labels) {
  while (!text.empty()) {
    const size_t eq = text.find("=\"");
    if (eq == absl::string_view::npos) return false;
    const std::string key(text.substr(0, eq));
    text.remove_prefix(eq + 2);
    std::string value;
    size_t i = 0;
    for (; i < text.size() && text[i] != '"'; ++i) {
      if (text[i] == '\\' && i + 1 < text.size()) {
        ++i;
        value += text[i] == 'n' ? '\n' : text[i];
      } else {
        value += text[i];
      }
    }
    if (i == text.size()) return false;  // no closing quote
    (*labels)[key] = std::move(value);
    text.remove_prefix(i + 1);
    absl::ConsumePrefix(&text, ",");
  }
  return true;
}

}  // namespace

std::map<std::string, double> ParseMetrics(const std::string& text) {
  std::map<std::string, double> out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (std::optional<SampleLine> sample = SplitSampleLine(line)) {
      out[std::string(sample->series)] = sample->value;
    }
  }
  return out;
}

std::optional<double> FindMetric(const std::map<std::string, double>& metrics,
                                 const std::string& name,
                                 const std::map<std::string, std::string>& labels) {
  for (const auto& [series, value] : metrics) {
    if (series.compare(0, name.size(), name) != 0) continue;
    if (series.size() > name.size() && series[name.size()] != '{') continue;
    bool all = true;
    for (const auto& [k, v] : labels) {
      if (series.find(absl::StrCat(k, "=\"", v, "\"")) == std::string::npos) all = false;
    }
    if (all) return value;
  }
  return std::nullopt;
}

std::vector<MetricSample> ParseSamples(const std::string& text) {
  std::vector<MetricSample> out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    std::optional<SampleLine> sample = SplitSampleLine(line);
    if (!sample) continue;
    MetricSample parsed;
    parsed.value = sample->value;
    absl::string_view series = sample->series;
    const size_t brace = series.find('{');
    parsed.name = std::string(series.substr(0, brace));
    if (brace != absl::string_view::npos) {
      absl::string_view labels = series.substr(brace + 1);
      if (!absl::ConsumeSuffix(&labels, "}") || !ParseLabels(labels, &parsed.labels)) continue;
    }
    out.push_back(std::move(parsed));
  }
  return out;
}

std::map<std::string, std::string> MetricTypes(const std::string& text) {
  std::map<std::string, std::string> out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::ConsumePrefix(&line, "# TYPE ")) continue;
    std::vector<std::string> parts = absl::StrSplit(line, ' ');
    if (parts.size() == 2) out[parts[0]] = parts[1];
  }
  return out;
}

}  // namespace gloowatch::testing
