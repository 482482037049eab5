// The gloowatch CLI: dispatch to the commands, the top-level usage.
#pragma once

namespace gloowatch::client {

// argv[1] is the command; returns the process exit code.
int RunCli(int argc, char** argv);

}  // namespace gloowatch::client
