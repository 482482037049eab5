// The transport process: a Transport (transport.h) in a child the daemon
// supervises (daemon/supervisor/transport_supervisor.h says why).
#pragma once

#include <string>

namespace gloowatch {

// Runs a Transport on `fd` and the real clock until the daemon goes away,
// then ends the process with its exit code; never returns but when started
// after the daemon died.
int RunTransport(const std::string& gloo_address, int fd);

}  // namespace gloowatch
