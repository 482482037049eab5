// The transport process: everything that touches Gloo, in a child the daemon
// supervises (daemon/transport_supervisor.h says why).
#pragma once

#include <string>

namespace gloowatch {

// Takes its config from the daemon over `fd`, probes the peers the daemon
// selects from `gloo_address` and serves the responders the daemon asks for,
// until the daemon goes away. Returns the process exit code.
int RunTransport(const std::string& gloo_address, int fd);

}  // namespace gloowatch
