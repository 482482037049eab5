// The one way tests pick a TCP port on loopback for a program that must be
// told its port in advance (a daemon's config, MASTER_PORT). Code that can
// bind port 0 itself and read the port back should do that instead.
#pragma once

namespace gloowatch::testing {

// A port on 127.0.0.1 nobody listened on a moment ago, never one this
// process was handed before, taken below the kernel's ephemeral range so
// that no Gloo pair or outgoing connection is given it meanwhile. Still racy
// against another program that picks ports the same way.
int FreePort();

}  // namespace gloowatch::testing
