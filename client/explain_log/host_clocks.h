// Several hosts' logs in one order: which host wrote each rank's log (the
// job's ranks as the daemons hold them) and that host's clock offset to one
// reference host, as gloowatch measures it (client/sources/clock_offsets.h).
// Logs are stamped by their hosts' clocks; a skew of a second reorders a
// failure and its echo.
#pragma once

#include <string>
#include <vector>

#include "client/explain_log/explain_log.h"
#include "client/sources/fetch.h"

namespace gloowatch::client {

struct HostClocks {
  std::string reference;  // empty: nothing corrected (`note` says why)
  std::string note;
};

// Sets `host` and `clock_offset_seconds` of each log whose rank ("rank N")
// is a rank of `job` in `nodes`; a log without one rank, or whose host has
// no measured offset to the reference, is left as it is.
HostClocks ApplyHostClocks(const std::vector<FetchResult>& nodes, const std::string& job,
                           std::vector<LogExplanation>& logs);

}  // namespace gloowatch::client
