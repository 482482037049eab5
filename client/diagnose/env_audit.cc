#include "client/diagnose/env_audit.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

extern char** environ;

namespace gloowatch::client {
namespace {

// Verified against upstream sources (see docs/client.md, "Environment"):
// torch/csrc/distributed/c10d/init.cpp and distributed_c10d.py (IFNAME, split
// on ','), GlooDeviceFactory.cpp (TRANSPORT, TLS_*), ProcessGroupGloo.cpp
// (TORCH_GLOO_LAZY_INIT), pytorch/gloo gloo/common/utils.cc (the three GLOO_
// switches). The kNobody names appear in neither code base.
constexpr EnvVarInfo kEnvVars[] = {
    {"GLOO_SOCKET_IFNAME", EnvReader::kPyTorch,
     "interface(s) the Gloo device binds to; comma-separated list, one device each",
     "torch/csrc/distributed/c10d/init.cpp"},
    {"GLOO_DEVICE_TRANSPORT", EnvReader::kPyTorch, "transport: TCP (default on Linux), TCP_TLS, UV",
     "torch/csrc/distributed/c10d/GlooDeviceFactory.cpp"},
    {"GLOO_DEVICE_TRANSPORT_TCP_TLS_PKEY", EnvReader::kPyTorch,
     "TLS private key (TCP_TLS transport)", "torch/csrc/distributed/c10d/GlooDeviceFactory.cpp"},
    {"GLOO_DEVICE_TRANSPORT_TCP_TLS_CERT", EnvReader::kPyTorch,
     "TLS certificate (TCP_TLS transport)", "torch/csrc/distributed/c10d/GlooDeviceFactory.cpp"},
    {"GLOO_DEVICE_TRANSPORT_TCP_TLS_CA_FILE", EnvReader::kPyTorch,
     "TLS CA file (TCP_TLS transport)", "torch/csrc/distributed/c10d/GlooDeviceFactory.cpp"},
    {"GLOO_DEVICE_TRANSPORT_TCP_TLS_CA_PATH", EnvReader::kPyTorch,
     "TLS CA directory (TCP_TLS transport)", "torch/csrc/distributed/c10d/GlooDeviceFactory.cpp"},
    {"TORCH_GLOO_LAZY_INIT", EnvReader::kPyTorch,
     "connect pairs on first use instead of a full mesh at init (recent PyTorch only)",
     "torch/csrc/distributed/c10d/ProcessGroupGloo.cpp"},
    {"GLOO_ENABLE_RANK_AS_SEQUENCE_NUMBER", EnvReader::kGloo,
     "use the rank as pair sequence number (\"1\"/\"True\"; recent Gloo only)",
     "gloo/common/utils.cc"},
    {"GLOO_ENABLE_STORE_V2_API", EnvReader::kGloo,
     "use the extended store API for rendezvous (\"1\"/\"True\"; recent Gloo only)",
     "gloo/common/utils.cc"},
    {"GLOO_DISABLE_CONNECTION_RETRIES", EnvReader::kGloo,
     "do not retry failed pair connects (\"1\"/\"True\"; recent Gloo only)",
     "gloo/common/utils.cc"},
    {"GLOO_TIMEOUT_SECONDS", EnvReader::kNobody,
     "the collective timeout is init_process_group(timeout=timedelta(...)); default 30 min, "
     "shown as 1800000ms in Gloo errors (HOROVOD_GLOO_TIMEOUT_SECONDS is Horovod's)",
     ""},
    {"GLOO_MAX_NUM_CHANNELS", EnvReader::kNobody,
     "no channel knob in Gloo; parallelism is the number of devices (GLOO_SOCKET_IFNAME=a,b) "
     "and ProcessGroupGloo threads",
     ""},
    {"GLOO_RELIABLE_TRANSPORT", EnvReader::kNobody,
     "Gloo TCP is always reliable; nothing to enable", ""},
    {"GLOO_ENABLE_RELIABLE_TRANSPORT", EnvReader::kNobody,
     "Gloo TCP is always reliable; nothing to enable", ""},
    {"GLOO_COMPRESSION", EnvReader::kNobody,
     "Gloo has no compression; use a DDP comm hook (e.g. fp16_compress_hook)", ""},
    {"GLOO_COMPRESSION_LEVEL", EnvReader::kNobody,
     "Gloo has no compression; use a DDP comm hook (e.g. fp16_compress_hook)", ""},
    {"GLOO_HIERARCHICAL_ALLREDUCE", EnvReader::kNobody,
     "not a Gloo/PyTorch setting (HOROVOD_HIERARCHICAL_ALLREDUCE is Horovod's)", ""},
    {"GLOO_HIERARCHY_LEVELS", EnvReader::kNobody, "not a Gloo/PyTorch setting", ""},
    {"GLOO_TCP_BUFFER_SIZE", EnvReader::kNobody,
     "Gloo sizes socket buffers itself; tune net.core.{r,w}mem_max / net.ipv4.tcp_{r,w}mem", ""},
};

}  // namespace

absl::Span<const EnvVarInfo> KnownEnvVars() { return kEnvVars; }

std::vector<EnvFinding> AuditEnvironment(const std::map<std::string, std::string>& env) {
  std::vector<EnvFinding> out;
  for (const auto& [name, value] : env) {
    if (!absl::StartsWith(name, "GLOO_") && !absl::StartsWith(name, "TORCH_GLOO_")) continue;
    EnvFinding f;
    f.name = name;
    f.value = value;
    const EnvVarInfo* info = nullptr;
    for (const auto& v : kEnvVars) {
      if (name == v.name) info = &v;
    }
    if (info == nullptr) {
      f.severity = Severity::kWarn;
      f.message = "unknown: read by neither PyTorch nor Gloo (typo?)";
    } else if (info->reader == EnvReader::kNobody) {
      f.severity = Severity::kWarn;
      f.message = absl::StrCat("read by nothing; ", info->meaning);
    } else {
      f.message = absl::StrCat("read by ", info->reader == EnvReader::kGloo ? "Gloo" : "PyTorch",
                               ": ", info->meaning);
    }
    if (name == "GLOO_SOCKET_IFNAME") {
      if (absl::StrContains(value, '^')) {
        f.severity = Severity::kFail;
        f.message =
            "'^' exclusion is NCCL syntax (NCCL_SOCKET_IFNAME); Gloo takes interface "
            "names, comma-separated, and fails with 'Unable to find address for: ^...'";
      } else if (value.empty()) {
        f.severity = Severity::kWarn;
        f.message = "set but empty";
      }
    }
    if (name == "GLOO_DEVICE_TRANSPORT" && value != "TCP" && value != "TCP_TLS" && value != "UV") {
      f.severity = Severity::kFail;
      f.message =
          absl::StrCat("unknown transport '", value, "' (TCP, TCP_TLS, UV; case-sensitive)");
    }
    out.push_back(std::move(f));
  }
  return out;
}

std::map<std::string, std::string> CurrentEnvironment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string s = *e;
    auto eq = s.find('=');
    if (eq != std::string::npos) env[s.substr(0, eq)] = s.substr(eq + 1);
  }
  return env;
}

}  // namespace gloowatch::client
