// libFuzzer target: the config parser must turn any bytes into a Config or a
// clear error, never a crash, a hang or a sanitizer report.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<gloowatch::Config> config = gloowatch::ParseConfig(text, "fuzz.yaml");
  if (!config.ok() && config.status().message().empty()) __builtin_trap();
  return 0;
}
