#include "runtime/transport/connection.h"

#include <limits.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "runtime/tls/credentials.h"
#include "runtime/transport/tcp_socket.h"
#include "runtime/transport/wire_format.h"

namespace partita::runtime {

namespace {

using Clock = std::chrono::steady_clock;
using HelloBytes = unsigned char[wire::kHelloBytes];


// Empty if `bytes` are the hello {token, peer}; otherwise what is wrong with them.
std::string check_hello(const HelloBytes& bytes, uint64_t token, uint32_t peer) {
  wire::Hello h;
  if (!wire::decode_hello(bytes, h)) return "not a Partita transport hello";
  if (h.token != token) return "it belongs to another group (token differs)";
  if (h.sender != peer) return "it comes from peer " + std::to_string(h.sender) + ", expected " + std::to_string(peer);
  return "";
}

}  // namespace

// --- Connection ---

Connection::~Connection() { close(); }

Connection::Connection(Connection&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), peer_name_(std::move(other.peer_name_)), tls_(std::move(other.tls_)) {}

Connection& Connection::operator=(Connection&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
    peer_name_ = std::move(other.peer_name_);
    tls_ = std::move(other.tls_);
  }
  return *this;
}

void Connection::close() {
  tls_.reset();  // before the socket it refers to
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void Connection::secure(tls::Session::Role role, Deadline deadline, const Wakeup* wakeup) {
  std::shared_ptr<const tls::Credentials> credentials = tls::process_credentials();
  if (!credentials) return;
  tls_ = std::make_unique<tls::Session>(std::move(credentials), fd_, role);
  while (!tls_->handshake()) wait_ready(fd_, tls_->wants(), deadline, wakeup, "the TLS handshake");
}

Connection Connection::connect(const Endpoint& to, uint64_t token, uint32_t self, std::string peer_name,
                               Deadline deadline, const Wakeup* wakeup) {
  const std::string what = "cannot connect to " + peer_name + " at " + to.to_string();
  try {
    Connection connection(connect_tcp(to.host, to.port, deadline, wakeup).release(), std::move(peer_name));
    connection.secure(tls::Session::Role::client, deadline, wakeup);
    HelloBytes hello;
    wire::encode_hello({token, self}, hello);
    connection.send_all(hello, sizeof(hello), deadline, wakeup, "sending the hello");
    return connection;
  } catch (const Error& e) {
    throw Error(what + ": " + e.what());
  }
}

void Connection::confirm(uint64_t token, uint32_t peer, Deadline deadline, const Wakeup* wakeup) {
  HelloBytes hello;
  try {
    recv_all(hello, sizeof(hello), deadline, wakeup, "waiting for its hello");
  } catch (const Error& e) {
    throw Error("no hello from " + peer_name_ + ": " + e.what());
  }
  if (std::string why = check_hello(hello, token, peer); !why.empty()) {
    throw Error("the connection to " + peer_name_ + " was answered by someone else: " + why);
  }
}

size_t Connection::send_some(const void* data, size_t bytes) {
  if (tls_) {
    try {
      return tls_->write_some(data, bytes);
    } catch (const tls::SessionClosed& e) {
      throw Error("lost the connection to " + peer_name_ + " (" + e.what() + ")");
    }
  }
  for (;;) {
    const ssize_t n = ::send(fd_, data, bytes, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) return static_cast<size_t>(n);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    throw Error("lost the connection to " + peer_name_ + " (" + errno_text() + ")");
  }
}

size_t Connection::recv_some(void* data, size_t bytes) {
  if (bytes == 0) return 0;
  if (tls_) {
    try {
      return tls_->read_some(data, bytes);
    } catch (const tls::SessionClosed& e) {
      throw Error(peer_name_ + " closed its connection (its process ended?): " + e.what());
    }
  }
  for (;;) {
    const ssize_t n = ::recv(fd_, data, bytes, MSG_DONTWAIT);
    if (n > 0) return static_cast<size_t>(n);
    if (n == 0) throw Error(peer_name_ + " closed its connection (its process ended?)");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    throw Error("lost the connection to " + peer_name_ + " (" + errno_text() + ")");
  }
}

void Connection::set_buffer_bytes(int bytes) {
  ::setsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
}

void Connection::send_all(const void* data, size_t bytes, Deadline deadline, const Wakeup* wakeup,
                          const char* doing) {
  const auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const size_t n = send_some(p, bytes);
    p += n;
    bytes -= n;
    if (bytes > 0 && n == 0) wait_ready(fd_, wants(POLLOUT), deadline, wakeup, doing);
  }
}

void Connection::send_all(iovec* pieces, size_t count, Deadline deadline, const Wakeup* wakeup, const char* doing) {
  if (tls_) {
    // TLS writes one record per call: small pieces are gathered into one buffer first, so
    // that a frame header and its body leave in one record and one system call.
    constexpr size_t kGather = 16 * 1024;
    std::vector<char> gathered;
    for (size_t i = 0; i < count; ++i) {
      const auto* base = static_cast<const char*>(pieces[i].iov_base);
      if (pieces[i].iov_len < kGather && gathered.size() + pieces[i].iov_len <= kGather) {
        gathered.insert(gathered.end(), base, base + pieces[i].iov_len);
      } else {
        send_all(gathered.data(), gathered.size(), deadline, wakeup, doing);
        gathered.clear();
        send_all(base, pieces[i].iov_len, deadline, wakeup, doing);
      }
      pieces[i].iov_base = const_cast<char*>(base) + pieces[i].iov_len;
      pieces[i].iov_len = 0;
    }
    send_all(gathered.data(), gathered.size(), deadline, wakeup, doing);
    return;
  }
  while (count > 0 && pieces->iov_len == 0) {
    ++pieces;
    --count;
  }
  while (count > 0) {
    msghdr msg{};
    msg.msg_iov = pieces;
    msg.msg_iovlen = std::min<size_t>(count, IOV_MAX);
    // MSG_NOSIGNAL: a peer that went away is an error here, not a SIGPIPE for the process.
    const ssize_t n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        throw Error("lost the connection to " + peer_name_ + " while " + doing + " (" + errno_text() + ")");
      }
      wait_ready(fd_, POLLOUT, deadline, wakeup, doing);
      continue;
    }
    auto done = static_cast<size_t>(n);
    while (count > 0 && done >= pieces->iov_len) {
      done -= pieces->iov_len;
      ++pieces;
      --count;
    }
    if (count > 0) {
      pieces->iov_base = static_cast<char*>(pieces->iov_base) + done;
      pieces->iov_len -= done;
    }
  }
}

void Connection::recv_all(void* data, size_t bytes, Deadline deadline, const Wakeup* wakeup, const char* doing) {
  auto* p = static_cast<char*>(data);
  while (bytes > 0) {
    const size_t n = recv_some(p, bytes);
    p += n;
    bytes -= n;
    if (bytes > 0 && n == 0) wait_ready(fd_, wants(POLLIN), deadline, wakeup, doing);
  }
}

void Connection::wait_readable(Deadline deadline, const Wakeup* wakeup, const char* doing) const {
  if (tls_ && tls_->buffered()) return;
  wait_ready(fd_, POLLIN, deadline, wakeup, doing);
}

// --- Listener ---

Listener::Listener(const std::string& host) {
  tls::check_plaintext_bind(host, "transport listener");
  try {
    ListeningSocket listening = listen_tcp(host, 0, 16, false);
    fd_ = listening.socket.release();
    endpoint_ = listening.endpoint;
  } catch (const Error& e) {
    throw Error(std::string("transport: ") + e.what());
  }
}

Listener::~Listener() {
  if (fd_ >= 0) ::close(fd_);
}

Connection Listener::accept(uint64_t token, uint32_t peer, uint32_t self, std::string peer_name, Deadline deadline,
                            const Wakeup* wakeup) {
  // Connections whose handshake or hello is still on its way. Read them side by side, so a
  // stray connection that says nothing cannot hold up the peer's.
  struct Candidate {
    Connection connection;
    std::string address;  // the peer's, for the log
    Deadline expires;
    HelloBytes hello{};
    size_t got = 0;
  };
  constexpr size_t kMaxCandidates = 16;
  static_assert(kMaxCandidates + 1 <= kMaxWaitDescriptors, "the listener and its candidates are waited on at once");
  const std::shared_ptr<const tls::Credentials> credentials = tls::process_credentials();
  std::vector<Candidate> candidates;
  const std::string doing = "waiting for " + peer_name + " to connect to " + endpoint_.to_string();
  auto refuse = [&](size_t i, const std::string& why) {
    spdlog::warn("transport on {}: refused a connection from {}: {}", endpoint_.to_string(), candidates[i].address, why);
    candidates.erase(candidates.begin() + static_cast<std::ptrdiff_t>(i));
  };
  bool buffered = false;  // a session holds bytes the socket's poll cannot show
  for (;;) {
    std::vector<pollfd> fds{{fd_, POLLIN, 0}};
    Deadline wake = deadline;
    for (const auto& c : candidates) {
      fds.push_back({c.connection.fd(), c.connection.wants(POLLIN), 0});
      wake = std::min(wake, c.expires);
    }
    if (!buffered) {
      try {
        wait_ready(fds.data(), fds.size(), wake, wakeup, doing);
      } catch (const TimedOut&) {
        if (wake == deadline) throw;  // else a candidate expired: dropped below
      }
    }
    buffered = false;
    // Candidates first: their indices match fds[1..] only before any is removed. Each is
    // stepped (non-blocking) whether or not its socket was reported: a TLS session may hold
    // read-ahead bytes.
    const Deadline now = Clock::now();
    for (size_t i = candidates.size(); i-- > 0;) {
      Candidate& c = candidates[i];
      std::string rejected;
      try {
        if (c.connection.tls_ && !c.connection.tls_->handshake()) {
          if (now >= c.expires) refuse(i, "no TLS handshake within " + std::to_string(kHelloDeadline.count()) + " s");
          continue;
        }
        c.got += c.connection.recv_some(c.hello + c.got, sizeof(c.hello) - c.got);
        if (c.got == sizeof(c.hello)) rejected = check_hello(c.hello, token, peer);
      } catch (const Error& e) {
        rejected = e.what();
      }
      if (rejected.empty() && c.got == sizeof(c.hello)) {
        HelloBytes answer;
        wire::encode_hello({token, self}, answer);
        Connection accepted = std::move(c.connection);
        accepted.set_peer_name(peer_name);
        accepted.send_all(answer, sizeof(answer), deadline, wakeup, "answering a hello");
        return accepted;
      }
      if (rejected.empty() && now >= c.expires) {
        rejected = "no hello within " + std::to_string(kHelloDeadline.count()) + " s";
      }
      if (!rejected.empty()) {
        refuse(i, rejected);
      } else if (c.connection.tls_ && c.connection.tls_->buffered()) {
        buffered = true;
      }
    }
    if (fds[0].revents != 0) {
      if (ScopedFd accepted = accept_tcp(fd_); accepted.get() >= 0) {
        const int fd = accepted.get();
        if (candidates.size() == kMaxCandidates) {
          refuse(0, "too many connections without a hello (" + std::to_string(kMaxCandidates) + "); dropped the oldest");
        }
        Candidate c;
        c.connection = Connection(accepted.release(), "a connection to " + endpoint_.to_string());
        c.address = peer_address(fd);
        c.expires = Clock::now() + kHelloDeadline;
        if (credentials) {
          c.connection.tls_ = std::make_unique<tls::Session>(credentials, fd, tls::Session::Role::server);
        }
        candidates.push_back(std::move(c));
        buffered = true;  // step it at once: its ClientHello may be there already
      } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED) {
        throw Error(doing + ": accept failed: " + errno_text());
      }
    }
  }
}

}  // namespace partita::runtime
