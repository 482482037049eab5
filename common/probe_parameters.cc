#include "common/probe_parameters.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/config.h"

namespace gloowatch {

absl::Status ValidateProbeParameters(const v1::ProbeParameters& p) {
  if (p.latency_message_bytes() < 8 || p.latency_message_bytes() > (1u << 20)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "latency_message_bytes must be in [8, 1048576], got ", p.latency_message_bytes()));
  }
  if (p.bandwidth_message_bytes() < 1 || p.bandwidth_message_bytes() > (256ull << 20)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bandwidth_message_bytes must be in [1, 256MiB], got ", p.bandwidth_message_bytes()));
  }
  if (p.bandwidth_messages() < 1 || p.bandwidth_messages() > kMaxBandwidthMessages) {
    return absl::InvalidArgumentError(
        absl::StrCat("bandwidth_messages must be in [1, 4096], got ", p.bandwidth_messages()));
  }
  if (p.skew_burst() < 1 || p.skew_burst() > 1000) {
    return absl::InvalidArgumentError(
        absl::StrCat("skew_burst must be in [1, 1000], got ", p.skew_burst()));
  }
  if (p.gloo_timeout_ms() < 100 || p.gloo_timeout_ms() > 600000) {
    return absl::InvalidArgumentError(
        absl::StrCat("gloo_timeout_ms must be in [100, 600000], got ", p.gloo_timeout_ms()));
  }
  if (p.flows() > kMaxProbeFlows) {
    return absl::InvalidArgumentError(
        absl::StrCat("flows must be in [0, ", kMaxProbeFlows, "], got ", p.flows()));
  }
  return absl::OkStatus();
}

uint32_t ProbeFlows(const v1::ProbeParameters& p) { return std::max<uint32_t>(p.flows(), 1); }

}  // namespace gloowatch
