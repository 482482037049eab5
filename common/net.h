// Host names and addresses as text, without resolving them.
#pragma once

#include <string>

namespace gloowatch {

// True for "localhost", 127.0.0.0/8 and ::1 written as text.
bool IsLoopbackHost(const std::string& host);

}  // namespace gloowatch
