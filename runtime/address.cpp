#include "runtime/address.h"

#include <netdb.h>
#include <sys/socket.h>

#include <cctype>

#include "base/error.h"

namespace partita::runtime {

std::string Endpoint::to_string() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Endpoint parse_endpoint(const std::string& text, const std::string& what) {
  auto bad = [&](const std::string& why) {
    return UsageError(what + " '" + text + "': " + why + " (expected HOST:PORT, e.g. 127.0.0.1:7070)");
  };
  Endpoint result;
  std::string port;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string::npos) throw bad("unclosed '['");
    result.host = text.substr(1, close - 1);
    if (close + 1 >= text.size() || text[close + 1] != ':') throw bad("no port");
    port = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos) throw bad("no port");
    result.host = text.substr(0, colon);
    if (result.host.find(':') != std::string::npos) throw bad("IPv6 addresses need brackets");
    port = text.substr(colon + 1);
  }
  if (result.host.empty()) throw bad("no host");
  for (char c : result.host) {
    if (std::isspace(static_cast<unsigned char>(c)) || std::iscntrl(static_cast<unsigned char>(c))) {
      throw bad("the host contains white space");
    }
  }
  if (port.empty()) throw bad("no port");
  for (char c : port) {
    if (!std::isdigit(static_cast<unsigned char>(c))) throw bad("the port is not a number");
  }
  if (port.size() > 5) throw bad("port out of range 0..65535");
  unsigned long value = 0;
  for (char c : port) value = value * 10 + static_cast<unsigned long>(c - '0');
  if (value > 65535) throw bad("port out of range 0..65535");
  result.port = static_cast<uint16_t>(value);
  return result;
}

std::string peer_address(int fd) {
  sockaddr_storage peer{};
  socklen_t len = sizeof(peer);
  char host[NI_MAXHOST], port[NI_MAXSERV];
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0 ||
      ::getnameinfo(reinterpret_cast<sockaddr*>(&peer), len, host, sizeof(host), port, sizeof(port),
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return "an unknown address";
  }
  const std::string h = host;
  return (h.find(':') != std::string::npos ? "[" + h + "]" : h) + ":" + port;
}

}  // namespace partita::runtime
