// TCP connect scan of a port range with bounded concurrency and time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace gloowatch::client {

enum class PortState { kOpen, kRefused, kFiltered, kUnreachable, kError, kNotScanned };
const char* PortStateName(PortState s);  // open, refused, filtered, ...

struct PortResult {
  uint16_t port = 0;
  PortState state = PortState::kNotScanned;
  std::string error;  // strerror text for kUnreachable/kError
};

struct ScanOptions {
  int concurrency = 64;                               // connects in flight
  absl::Duration connect_timeout = absl::Seconds(1);  // no answer -> filtered
  absl::Duration total_timeout = absl::Seconds(30);   // the rest -> not_scanned
};

// Resolves `host` once (first address) and scans [low, high]. Nonblocking
// connect + poll; a port with no SYN-ACK/RST within connect_timeout is
// filtered (dropped by a firewall).
absl::StatusOr<std::vector<PortResult>> ScanPorts(const std::string& host, uint16_t low,
                                                  uint16_t high, const ScanOptions& options);

}  // namespace gloowatch::client
