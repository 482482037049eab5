// Audit of GLOO_* / TORCH_GLOO_* environment variables against what PyTorch
// and Gloo actually read. The table is data (kEnvVars in the .cc).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "client/core/severity.h"

namespace gloowatch::client {

enum class EnvReader { kPyTorch, kGloo, kNobody };

struct EnvVarInfo {
  const char* name;
  EnvReader reader;
  const char* meaning;  // what it does, or for kNobody the real alternative
  const char* source;   // where the read happens (upstream file)
};

absl::Span<const EnvVarInfo> KnownEnvVars();

struct EnvFinding {
  std::string name;
  std::string value;
  Severity severity = Severity::kPass;
  std::string message;
};

// Looks only at names starting with GLOO_ or TORCH_GLOO_.
std::vector<EnvFinding> AuditEnvironment(const std::map<std::string, std::string>& env);

std::map<std::string, std::string> CurrentEnvironment();

}  // namespace gloowatch::client
