#include "common/net.h"

#include "absl/strings/match.h"

namespace gloowatch {

bool IsLoopbackHost(const std::string& host) {
  return host == "localhost" || host == "::1" || absl::StartsWith(host, "127.");
}

}  // namespace gloowatch
