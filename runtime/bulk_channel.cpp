#include "runtime/bulk_channel.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <vector>

#include "base/error.h"

namespace partita::runtime {

namespace {

// The hello each end sends first: magic, token, who the sender is. Little-endian on the
// wire whatever the host, so machines of either kind can pair.
constexpr char kMagic[8] = {'P', 'T', 'B', 'U', 'L', 'K', '0', '1'};
constexpr size_t kHelloBytes = 8 + 8 + 4;
using Hello = std::array<unsigned char, kHelloBytes>;

Hello make_hello(uint64_t token, uint32_t self) {
  Hello h{};
  std::memcpy(h.data(), kMagic, 8);
  for (int i = 0; i < 8; ++i) h[8 + i] = static_cast<unsigned char>(token >> (8 * i));
  for (int i = 0; i < 4; ++i) h[16 + i] = static_cast<unsigned char>(self >> (8 * i));
  return h;
}

// Empty if `h` is {token, peer}; otherwise what is wrong with it.
std::string check_hello(const Hello& h, uint64_t token, uint32_t peer) {
  if (std::memcmp(h.data(), kMagic, 8) != 0) return "not a Partita bulk channel hello";
  uint64_t got_token = 0;
  uint32_t got_peer = 0;
  for (int i = 0; i < 8; ++i) got_token |= uint64_t{h[8 + i]} << (8 * i);
  for (int i = 0; i < 4; ++i) got_peer |= uint32_t{h[16 + i]} << (8 * i);
  if (got_token != token) return "it belongs to another group (token differs)";
  if (got_peer != peer) return "it comes from peer " + std::to_string(got_peer) + ", expected " + std::to_string(peer);
  return "";
}

std::string errno_string(int err) { return std::strerror(err); }

int remaining_ms(Deadline deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, 1 << 30));
}

// Waits until `fd` has one of `events`; returns its revents. Throws Error (starting with
// `what`) at the deadline or when `wakeup` is notified.
short wait_for(int fd, short events, Deadline deadline, const Wakeup* wakeup, const std::string& what) {
  for (;;) {
    pollfd fds[2] = {{fd, events, 0}, {wakeup != nullptr ? wakeup->fd() : -1, POLLIN, 0}};
    const int ms = remaining_ms(deadline);
    const int n = ::poll(fds, 2, ms);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(what + ": poll failed: " + errno_string(errno));
    if (fds[1].revents != 0) throw Error(what + ": interrupted");
    if (fds[0].revents != 0) return fds[0].revents;
    if (ms == 0) throw Error(what + ": timed out");
  }
}

void set_nonblocking_nodelay(int fd) {
  const int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    throw Error("bulk channel: cannot make a socket non-blocking: " + errno_string(errno));
  }
  // Segments are large, but each operation ends with a short one: do not let Nagle hold it.
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

struct AddrInfo {
  addrinfo* list = nullptr;
  ~AddrInfo() {
    if (list != nullptr) ::freeaddrinfo(list);
  }
};

AddrInfo resolve(const std::string& host, uint16_t port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  AddrInfo result;
  const std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &result.list); rc != 0) {
    throw Error("bulk channel: cannot resolve '" + host + "': " + ::gai_strerror(rc));
  }
  return result;
}

// Sends all of `bytes` on a non-blocking socket, waiting for room until the deadline.
void send_exactly(int fd, const void* data, size_t bytes, Deadline deadline, const Wakeup* wakeup,
                  const std::string& what) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::send(fd, p, bytes, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      wait_for(fd, POLLOUT, deadline, wakeup, what);
    } else if (!(n < 0 && errno == EINTR)) {
      throw Error(what + ": " + errno_string(errno));
    }
  }
}

}  // namespace

// --- Wakeup ---

Wakeup::Wakeup() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (fd_ < 0) throw Error("cannot create an eventfd: " + errno_string(errno));
}

Wakeup::~Wakeup() { ::close(fd_); }

void Wakeup::notify() {
  const uint64_t one = 1;
  if (::write(fd_, &one, sizeof(one)) != sizeof(one) && errno != EAGAIN) {
    spdlog::error("bulk channel: cannot signal a wakeup: {}", errno_string(errno));
  }
}

bool Wakeup::notified() const {
  pollfd p{fd_, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

// --- BulkChannel ---

BulkChannel::~BulkChannel() { close(); }

BulkChannel::BulkChannel(BulkChannel&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), peer_name_(std::move(other.peer_name_)) {}

BulkChannel& BulkChannel::operator=(BulkChannel&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
    peer_name_ = std::move(other.peer_name_);
  }
  return *this;
}

void BulkChannel::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

BulkChannel BulkChannel::connect(const Endpoint& to, uint64_t token, uint32_t self, std::string peer_name,
                                 Deadline deadline, const Wakeup* wakeup) {
  const std::string what = "cannot connect to " + peer_name + " at " + to.to_string();
  AddrInfo addresses = resolve(to.host, to.port, false);
  std::string last_error = "no address";
  for (addrinfo* a = addresses.list; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      last_error = errno_string(errno);
      continue;
    }
    BulkChannel channel(fd, peer_name);
    set_nonblocking_nodelay(fd);
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        last_error = errno_string(errno);
        continue;
      }
      wait_for(fd, POLLOUT, deadline, wakeup, what);
      int err = 0;
      socklen_t len = sizeof(err);
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) {
        last_error = errno_string(err);
        continue;
      }
    }
    const Hello hello = make_hello(token, self);
    send_exactly(fd, hello.data(), hello.size(), deadline, wakeup, what);
    return channel;
  }
  throw Error(what + ": " + last_error);
}

void BulkChannel::confirm(uint64_t token, uint32_t peer, Deadline deadline, const Wakeup* wakeup) {
  const std::string what = "no hello from " + peer_name_;
  Hello hello{};
  size_t got = 0;
  while (got < hello.size()) {
    const size_t n = recv_some(hello.data() + got, hello.size() - got);
    got += n;
    if (n == 0) wait_for(fd_, POLLIN, deadline, wakeup, what);
  }
  if (std::string why = check_hello(hello, token, peer); !why.empty()) {
    throw Error("the connection to " + peer_name_ + " was answered by someone else: " + why);
  }
}

size_t BulkChannel::send_some(const void* data, size_t bytes) {
  for (;;) {
    const ssize_t n = ::send(fd_, data, bytes, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) return static_cast<size_t>(n);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    throw Error("lost the connection to " + peer_name_ + " (" + errno_string(errno) + ")");
  }
}

size_t BulkChannel::recv_some(void* data, size_t bytes) {
  if (bytes == 0) return 0;
  for (;;) {
    const ssize_t n = ::recv(fd_, data, bytes, MSG_DONTWAIT);
    if (n > 0) return static_cast<size_t>(n);
    if (n == 0) throw Error(peer_name_ + " closed its connection (its process ended?)");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    throw Error("lost the connection to " + peer_name_ + " (" + errno_string(errno) + ")");
  }
}

void BulkChannel::check_silent_peer() {
  char byte = 0;
  if (recv_some(&byte, 1) != 0) throw Error(peer_name_ + " sent data on a one-way connection");
}

// --- BulkListener ---

BulkListener::BulkListener(const std::string& host) {
  AddrInfo addresses = resolve(host, 0, true);
  std::string last_error = "no address";
  for (addrinfo* a = addresses.list; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) {
      last_error = errno_string(errno);
      continue;
    }
    sockaddr_storage bound{};
    socklen_t len = sizeof(bound);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, 16) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len) != 0) {
      last_error = errno_string(errno);
      ::close(fd);
      continue;
    }
    fd_ = fd;
    const uint16_t port = bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                                      : reinterpret_cast<sockaddr_in*>(&bound)->sin_port;
    endpoint_ = Endpoint{host, ntohs(port)};
    return;
  }
  throw Error("bulk channel: cannot listen on " + host + ": " + last_error);
}

BulkListener::~BulkListener() {
  if (fd_ >= 0) ::close(fd_);
}

BulkChannel BulkListener::accept(uint64_t token, uint32_t peer, uint32_t self, std::string peer_name,
                                 Deadline deadline, const Wakeup* wakeup) {
  // Connections whose hello is still on its way. Read them side by side, so a stray
  // connection that says nothing cannot hold up the peer's.
  struct Candidate {
    BulkChannel channel;
    Hello hello{};
    size_t got = 0;
  };
  constexpr size_t kMaxCandidates = 16;
  std::vector<Candidate> candidates;
  const std::string what = "no connection from " + peer_name + " on " + endpoint_.to_string();
  for (;;) {
    std::vector<pollfd> fds{{fd_, POLLIN, 0}, {wakeup != nullptr ? wakeup->fd() : -1, POLLIN, 0}};
    for (const auto& c : candidates) fds.push_back({c.channel.fd(), POLLIN, 0});
    const int ms = remaining_ms(deadline);
    const int n = ::poll(fds.data(), fds.size(), ms);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(what + ": poll failed: " + errno_string(errno));
    if (fds[1].revents != 0) throw Error(what + ": interrupted");
    if (n == 0 && ms == 0) throw Error(what + " (timed out)");
    // Hellos first: the candidates' indices match fds[2..] only before any is removed.
    for (size_t i = candidates.size(); i-- > 0;) {
      if (fds[2 + i].revents == 0) continue;
      Candidate& c = candidates[i];
      std::string rejected;
      try {
        const size_t got = c.channel.recv_some(c.hello.data() + c.got, c.hello.size() - c.got);
        c.got += got;
        if (c.got == c.hello.size()) rejected = check_hello(c.hello, token, peer);
      } catch (const Error& e) {
        rejected = e.what();
      }
      if (rejected.empty() && c.got == c.hello.size()) {
        const Hello answer = make_hello(token, self);
        send_exactly(c.channel.fd(), answer.data(), answer.size(), deadline, wakeup,
                     "cannot answer " + peer_name);
        BulkChannel accepted = std::move(c.channel);
        accepted.peer_name_ = peer_name;
        return accepted;
      }
      if (!rejected.empty()) {
        spdlog::warn("bulk channel on {}: refused a connection: {}", endpoint_.to_string(), rejected);
        candidates.erase(candidates.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
    if (fds[0].revents != 0) {
      const int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        if (candidates.size() == kMaxCandidates) {
          spdlog::warn("bulk channel on {}: too many silent connections; dropping the oldest", endpoint_.to_string());
          candidates.erase(candidates.begin());
        }
        Candidate c;
        c.channel = BulkChannel(fd, "a connection to " + endpoint_.to_string());
        set_nonblocking_nodelay(fd);
        candidates.push_back(std::move(c));
      } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED) {
        throw Error(what + ": accept failed: " + errno_string(errno));
      }
    }
  }
}

}  // namespace partita::runtime
