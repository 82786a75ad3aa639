// HOST:PORT endpoints as the CLI and the client spell them. No CAF here: the CLI and the
// tests parse addresses without pulling in the actor framework.
#pragma once

#include <cstdint>
#include <string>

namespace partita::runtime {

struct Endpoint {
  std::string host;    // a name or an IP address; IPv6 without the brackets
  uint16_t port = 0;   // 0: any free port (listening only)

  // "host:port", with brackets around an IPv6 address, so it parses back.
  std::string to_string() const;
};

// Parses "HOST:PORT" or "[IPV6]:PORT". `what` names the value in the error ("--listen").
// Throws UsageError on a missing or empty host, a missing port or one outside 0..65535.
// Whether the host resolves is only known when binding or connecting.
Endpoint parse_endpoint(const std::string& text, const std::string& what);

// "10.0.0.7:41234": the other end of a connected socket, numeric, for logs; "an unknown
// address" if the system does not say.
std::string peer_address(int fd);

}  // namespace partita::runtime
