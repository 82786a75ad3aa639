#include "runtime/transport/tcp_socket.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace partita::runtime {

namespace {

// getaddrinfo's list, freed on scope exit.
struct Addresses {
  addrinfo* list = nullptr;
  Addresses() = default;
  Addresses(const Addresses&) = delete;
  Addresses& operator=(const Addresses&) = delete;
  ~Addresses() {
    if (list != nullptr) ::freeaddrinfo(list);
  }
};

void resolve(const std::string& host, uint16_t port, bool passive, Addresses& out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  const std::string service = std::to_string(port);
  const char* node = host.empty() && passive ? nullptr : host.c_str();
  if (int rc = ::getaddrinfo(node, service.c_str(), &hints, &out.list); rc != 0) {
    throw Error("cannot resolve '" + host + "': " + ::gai_strerror(rc));
  }
}

ScopedFd open_socket(const addrinfo& a) {
  return ScopedFd(::socket(a.ai_family, a.ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a.ai_protocol));
}

}  // namespace

ListeningSocket listen_tcp(const std::string& host, uint16_t port, int backlog, bool reuse_address) {
  Addresses addresses;
  resolve(host, port, true, addresses);
  std::string last_error = "no address";
  for (addrinfo* a = addresses.list; a != nullptr; a = a->ai_next) {
    ScopedFd fd = open_socket(*a);
    if (fd.get() < 0) {
      last_error = errno_text();
      continue;
    }
    const int one = 1;
    if (reuse_address) ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_storage bound{};
    socklen_t len = sizeof(bound);
    if (::bind(fd.get(), a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd.get(), backlog) != 0 ||
        ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &len) != 0) {
      last_error = errno_text();
      continue;
    }
    const uint16_t bound_port = bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port;
    return {std::move(fd), Endpoint{host, ntohs(bound_port)}};
  }
  throw Error("cannot listen on " + host + ":" + std::to_string(port) + ": " + last_error);
}

ScopedFd connect_tcp(const std::string& host, uint16_t port, Deadline deadline, const Wakeup* wakeup) {
  Addresses addresses;
  resolve(host, port, false, addresses);
  std::string last_error = "no address";
  for (addrinfo* a = addresses.list; a != nullptr; a = a->ai_next) {
    ScopedFd fd = open_socket(*a);
    if (fd.get() < 0) {
      last_error = errno_text();
      continue;
    }
    if (::connect(fd.get(), a->ai_addr, a->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        last_error = errno_text();
        continue;
      }
      wait_ready(fd.get(), POLLOUT, deadline, wakeup, "connecting to " + host + ":" + std::to_string(port));
      int err = 0;
      socklen_t len = sizeof(err);
      ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) {
        last_error = std::strerror(err);
        continue;
      }
    }
    const int one = 1;
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
  }
  throw Error(last_error);
}

ScopedFd accept_tcp(int listening) {
  ScopedFd fd(::accept4(listening, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
  if (fd.get() >= 0) {
    const int one = 1;
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  return fd;
}

void set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    throw Error("cannot make a socket non-blocking: " + errno_text());
  }
}

}  // namespace partita::runtime
