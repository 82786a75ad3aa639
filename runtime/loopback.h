// Whether a host names this machine's loopback interface: what a port without
// authentication (plaintext --insecure daemons, the status page) may bind, so that only
// local users reach it.
#pragma once

#include <string>

namespace partita::runtime {

// True for "localhost", an IPv4 address in 127.0.0.0/8 and the IPv6 address ::1, as
// written (names other than "localhost" are not resolved: a name could resolve elsewhere
// tomorrow).
bool is_loopback_host(const std::string& host);

}  // namespace partita::runtime
