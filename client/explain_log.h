// Maps log lines from PyTorch/Gloo jobs to known failure signatures with a
// cause and a fix. The signature table is data (kSignatures in the .cc).
#pragma once

#include <cstddef>
#include <istream>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "nlohmann/json.hpp"

namespace gloowatch::client {

struct LogSignature {
  const char* id;
  const char* regex;  // RE2 syntax, matched case-insensitively anywhere in a line
  const char* cause;
  const char* fix;
};

// In priority order: a line counts for the first signature that matches it.
absl::Span<const LogSignature> LogSignatures();
// Whether LogSignatures()[index].regex is a valid RE2 pattern.
bool SignatureCompiles(size_t index);

struct SignatureHit {
  std::string id;
  const LogSignature* signature = nullptr;
  int count = 0;
  int first_line = 0;  // 1-based
  int last_line = 0;
  std::string example;  // first matching line, trimmed and truncated
};

struct LogExplanation {
  std::string source;  // file name or "-"
  int lines = 0;
  bool binary = false;             // NUL bytes seen; lines are still scanned
  std::vector<SignatureHit> hits;  // ordered by first_line
};

LogExplanation ExplainLog(std::istream& in, absl::string_view source);

std::string RenderExplanationText(const LogExplanation& e);
nlohmann::json ExplanationToJson(const LogExplanation& e);

}  // namespace gloowatch::client
