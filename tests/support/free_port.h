// The one way tests pick a TCP port on loopback for a program that must be
// told its port in advance (a daemon's config, MASTER_PORT). Code that can
// bind port 0 itself and read the port back should do that instead.
#pragma once

namespace gloowatch::testing {

// A port on 127.0.0.1 nobody listened on a moment ago, never one this
// process was handed before. Racy by nature: another process may take it
// before the program it is meant for binds it.
int FreePort();

}  // namespace gloowatch::testing
