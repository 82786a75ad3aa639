#include "runtime/tls/caf_gateway.h"

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/io/middleman_actor_impl.hpp>
#include <caf/io/network/default_multiplexer.hpp>
#include <caf/io/network/doorman_impl.hpp>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <list>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/errors.h"
#include "runtime/tls/session.h"
#include "runtime/transport/connection.h"

namespace partita::runtime::tls {

namespace {

using Clock = std::chrono::steady_clock;
const caf::atom_value kRegistryName = caf::atom("tlsgateway");

std::string errno_string(int err) { return std::strerror(err); }

void set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    throw Error("cannot make a socket non-blocking: " + errno_string(errno));
  }
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
  return std::string(host) + ":" + port;
}

// A file descriptor closed on destruction.
struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(Fd&& o) noexcept : fd(std::exchange(o.fd, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    std::swap(fd, o.fd);
    return *this;
  }
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  int release() { return std::exchange(fd, -1); }
};

// Moves bytes both ways between an established TLS session (on `net`) and CAF's end of a
// local socket until either side closes, the session breaks, or `stop` is notified.
// Non-blocking on both sockets, one thread, two bounded buffers.
void pump(Session& tls, int net, int local, const Wakeup& stop) {
  constexpr size_t kBuffer = 256 * 1024;
  std::vector<char> in(kBuffer), out(kBuffer);  // in: network to CAF; out: CAF to network
  size_t in_begin = 0, in_end = 0, out_begin = 0, out_end = 0;
  short read_wants = POLLIN, write_wants = POLLOUT;
  for (;;) {
    bool progress = false;
    if (in_end < kBuffer) {
      const size_t n = tls.read_some(in.data() + in_end, kBuffer - in_end);
      in_end += n;
      progress |= n > 0;
      if (n == 0) read_wants = tls.wants();
    }
    if (in_end > in_begin) {
      const ssize_t n = ::send(local, in.data() + in_begin, in_end - in_begin, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return;  // CAF closed its end
      if (n > 0) {
        in_begin += static_cast<size_t>(n);
        progress = true;
        if (in_begin == in_end) in_begin = in_end = 0;
      }
    }
    if (out_end < kBuffer) {
      const ssize_t n = ::recv(local, out.data() + out_end, kBuffer - out_end, MSG_DONTWAIT);
      if (n == 0) return;  // CAF closed the connection
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return;
      if (n > 0) {
        out_end += static_cast<size_t>(n);
        progress = true;
      }
    }
    if (out_end > out_begin) {
      const size_t n = tls.write_some(out.data() + out_begin, out_end - out_begin);
      if (n == 0) write_wants = tls.wants();
      out_begin += n;
      progress |= n > 0;
      if (out_begin == out_end) out_begin = out_end = 0;
    }
    if (progress) continue;
    pollfd fds[2] = {
        {net, static_cast<short>((in_end < kBuffer ? read_wants : 0) | (out_end > out_begin ? write_wants : 0)), 0},
        {local, static_cast<short>((out_end < kBuffer ? POLLIN : 0) | (in_end > in_begin ? POLLOUT : 0)), 0}};
    wait_ready(fds, 2, kNoDeadline, &stop, "bridging a TLS connection");
  }
}

// The bridge threads of one gateway side: started with a cap, stopped and joined together.
class Bridges {
 public:
  ~Bridges() {
    stop_.notify();
    std::lock_guard lock(mutex_);
    for (Entry& e : entries_) e.thread.join();
  }

  const Wakeup& stop() const { return stop_; }

  // Runs `work` on a thread of its own; false (and nothing runs) at kMaxBridges.
  bool start(std::function<void()> work) {
    std::lock_guard lock(mutex_);
    reap();
    if (entries_.size() >= kMaxBridges) return false;
    auto done = std::make_shared<std::atomic<bool>>(false);
    entries_.push_back({std::thread([work = std::move(work), done] {
                          work();
                          done->store(true);
                        }),
                        done});
    return true;
  }

 private:
  struct Entry {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  void reap() {
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (it->done->load()) {
        it->thread.join();
        it = entries_.erase(it);
      } else {
        ++it;
      }
    }
  }
  Wakeup stop_;
  std::mutex mutex_;
  std::list<Entry> entries_;
};

// Runs the handshake of `session` on `fd` until done, `deadline` or `stop`.
void complete_handshake(Session& session, int fd, Deadline deadline, const Wakeup* stop) {
  while (!session.handshake()) wait_ready(fd, session.wants(), deadline, stop, "the TLS handshake");
}

// The listening side: a TCP port on the network, CAF's doorman on a Unix socket behind it.
class Gate {
 public:
  Gate(std::shared_ptr<const Credentials> credentials, const std::string& host, uint16_t port, bool reuse)
      : credentials_(std::move(credentials)) {
    listen_tcp(host, port, reuse);
    listen_local();
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~Gate() {
    stop_.notify();
    if (acceptor_.joinable()) acceptor_.join();
    bridges_.reset();  // joins every bridge before the sockets go
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;

  int take_local_listener() { return local_.release(); }
  uint16_t port() const { return endpoint_.port; }
  const Endpoint& endpoint() const { return endpoint_; }

 private:
  void listen_tcp(const std::string& host, uint16_t port, bool reuse) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    addrinfo* list = nullptr;
    const std::string service = std::to_string(port);
    if (int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &list); rc != 0) {
      throw Error("cannot resolve '" + host + "': " + ::gai_strerror(rc));
    }
    std::string last_error = "no address";
    for (addrinfo* a = list; a != nullptr && tcp_.fd < 0; a = a->ai_next) {
      Fd fd(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol));
      if (fd.fd < 0) continue;
      const int one = 1;
      if (reuse) ::setsockopt(fd.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
      sockaddr_storage bound{};
      socklen_t len = sizeof(bound);
      if (::bind(fd.fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd.fd, 128) != 0 ||
          ::getsockname(fd.fd, reinterpret_cast<sockaddr*>(&bound), &len) != 0) {
        last_error = errno_string(errno);
        continue;
      }
      const uint16_t p = bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                                     : reinterpret_cast<sockaddr_in*>(&bound)->sin_port;
      endpoint_ = Endpoint{host, ntohs(p)};
      tcp_ = std::move(fd);
    }
    ::freeaddrinfo(list);
    if (tcp_.fd < 0) throw Error("cannot listen on " + host + ":" + std::to_string(port) + ": " + last_error);
  }

  // A Unix socket in a fresh folder only this user may enter.
  void listen_local() {
    char pattern[] = "/tmp/partita-caf-XXXXXX";
    if (::mkdtemp(pattern) == nullptr) throw Error("cannot create a private socket folder: " + errno_string(errno));
    dir_ = pattern;
    path_ = dir_ + "/basp.sock";
    local_ = Fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path_.c_str(), sizeof(address.sun_path) - 1);
    if (local_.fd < 0 || ::bind(local_.fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
        ::listen(local_.fd, 128) != 0) {
      throw Error("cannot listen on " + path_ + ": " + errno_string(errno));
    }
  }

  void accept_loop() {
    for (;;) {
      try {
        wait_ready(tcp_.fd, POLLIN, kNoDeadline, &stop_, "accepting on " + endpoint_.to_string());
      } catch (const Error&) {
        return;  // stopped
      }
      Fd fd(::accept4(tcp_.fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
      if (fd.fd < 0) continue;
      const std::string address = peer_address(fd.fd);
      const int one = 1;
      ::setsockopt(fd.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      admit(fd.fd, address);
      auto shared_fd = std::make_shared<Fd>(std::move(fd));
      const bool started = bridges_->start([this, shared_fd, address] { serve(shared_fd->fd, address); });
      if (!started) {
        settle(shared_fd->fd);
        spdlog::warn("{}: refused a connection from {}: {} connections already open", endpoint_.to_string(), address,
                     kMaxBridges);
      }
    }
  }

  // Counts `fd` among the pending handshakes; at kMaxHandshakes the oldest is cut (its
  // thread sees the socket end), so that a flood of silent connections delays a real peer
  // by at most one round of handshakes, not by the deadline.
  void admit(int fd, const std::string& address) {
    std::lock_guard lock(pending_mutex_);
    if (pending_.size() >= kMaxHandshakes) {
      ::shutdown(pending_.front(), SHUT_RDWR);
      pending_.pop_front();
      ++evicted_;
      if (Clock::now() - last_warning_ > std::chrono::seconds(1)) {
        spdlog::warn("{}: {} TLS handshakes pending: cut the oldest ({} since the last warning); the newest from {}",
                     endpoint_.to_string(), kMaxHandshakes, evicted_, address);
        last_warning_ = Clock::now();
        evicted_ = 0;
      }
    }
    pending_.push_back(fd);
  }
  // Its handshake ended (either way): no longer pending. Before the socket is closed, so
  // that admit() never cuts a reused descriptor.
  void settle(int fd) {
    std::lock_guard lock(pending_mutex_);
    auto it = std::find(pending_.begin(), pending_.end(), fd);
    if (it != pending_.end()) pending_.erase(it);
  }

  // One accepted connection: the handshake within its deadline, then CAF's side.
  void serve(int fd, const std::string& address) {
    Session session(credentials_, fd, Session::Role::server);
    try {
      complete_handshake(session, fd, Clock::now() + kHandshakeDeadline, &bridges_->stop());
    } catch (const Interrupted&) {
      settle(fd);
      return;
    } catch (const TimedOut&) {
      settle(fd);
      spdlog::warn("{}: refused a connection from {}: no TLS handshake within {} s", endpoint_.to_string(), address,
                   kHandshakeDeadline.count());
      return;
    } catch (const Error& e) {
      settle(fd);
      spdlog::warn("{}: refused a connection from {}: {}", endpoint_.to_string(), address, e.what());
      return;
    }
    settle(fd);
    spdlog::debug("{}: {} is {} (certificate of the cluster)", endpoint_.to_string(), address, session.peer_name());
    Fd local(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un to{};
    to.sun_family = AF_UNIX;
    std::strncpy(to.sun_path, path_.c_str(), sizeof(to.sun_path) - 1);
    if (local.fd < 0 || ::connect(local.fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
      spdlog::error("{}: cannot hand {} to the actor system: {}", endpoint_.to_string(), address, errno_string(errno));
      return;
    }
    try {
      set_nonblocking(local.fd);
      pump(session, fd, local.fd, bridges_->stop());
    } catch (const Error& e) {
      spdlog::debug("{}: connection from {} ended: {}", endpoint_.to_string(), address, e.what());
    }
  }

  std::shared_ptr<const Credentials> credentials_;
  Endpoint endpoint_;
  Fd tcp_, local_;
  std::string dir_, path_;
  Wakeup stop_;
  std::mutex pending_mutex_;
  std::deque<int> pending_;  // sockets in their handshake, oldest first
  size_t evicted_ = 0;
  Clock::time_point last_warning_{};
  std::unique_ptr<Bridges> bridges_ = std::make_unique<Bridges>();
  std::thread acceptor_;  // last: started once the rest exists
};

// CAF's doorman on the Unix socket, reporting the gate's TCP address: BASP files the
// published actor under the port peers connect to. Owns the gate.
class GatedDoorman : public caf::io::network::doorman_impl {
 public:
  GatedDoorman(caf::io::network::default_multiplexer& backend, std::unique_ptr<Gate> gate)
      : doorman_impl(backend, gate->take_local_listener()), gate_(std::move(gate)) {}
  std::string addr() const override { return gate_->endpoint().host; }
  uint16_t port() const override { return gate_->port(); }

 private:
  std::unique_ptr<Gate> gate_;
};

Fd connect_tcp(const std::string& host, uint16_t port, Deadline deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &list); rc != 0) {
    throw Error("cannot resolve '" + host + "': " + ::gai_strerror(rc));
  }
  std::string last_error = "no address";
  Fd result;
  for (addrinfo* a = list; a != nullptr && result.fd < 0; a = a->ai_next) {
    Fd fd(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol));
    if (fd.fd < 0) continue;
    if (::connect(fd.fd, a->ai_addr, a->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        last_error = errno_string(errno);
        continue;
      }
      try {
        wait_ready(fd.fd, POLLOUT, deadline, nullptr, "connecting");
      } catch (const Error& e) {
        last_error = e.what();
        continue;
      }
      int err = 0;
      socklen_t len = sizeof(err);
      ::getsockopt(fd.fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) {
        last_error = errno_string(err);
        continue;
      }
    }
    const int one = 1;
    ::setsockopt(fd.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    result = std::move(fd);
  }
  ::freeaddrinfo(list);
  if (result.fd < 0) throw Error(last_error);
  return result;
}

class GatewayActor : public caf::io::middleman_actor_impl {
 public:
  GatewayActor(caf::actor_config& cfg, caf::actor broker, std::shared_ptr<const Credentials> credentials)
      : middleman_actor_impl(cfg, std::move(broker)), credentials_(std::move(credentials)) {}

  const char* name() const override { return "partita_tls_gateway"; }

  void on_exit() override {
    outgoing_.reset();
    middleman_actor_impl::on_exit();
  }

 protected:
  caf::expected<caf::io::scribe_ptr> connect(const std::string& host, uint16_t port) override {
    const std::string where = host + ":" + std::to_string(port);
    try {
      const Deadline deadline = Clock::now() + kHandshakeDeadline;
      Fd net = connect_tcp(host, port, deadline);
      auto session = std::make_shared<Session>(credentials_, net.fd, Session::Role::client);
      complete_handshake(*session, net.fd, deadline, nullptr);
      int pair[2];
      if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
        throw Error("cannot create a socket pair: " + errno_string(errno));
      }
      Fd caf_end(pair[0]), bridge_end(pair[1]);
      set_nonblocking(bridge_end.fd);
      auto sockets = std::make_shared<std::pair<Fd, Fd>>(std::move(net), std::move(bridge_end));
      const Wakeup* stop = &outgoing_->stop();
      const bool started = outgoing_->start([session, sockets, stop, where] {
        try {
          pump(*session, sockets->first.fd, sockets->second.fd, *stop);
        } catch (const Error& e) {
          spdlog::debug("connection to {} ended: {}", where, e.what());
        }
      });
      if (!started) throw Error(std::to_string(kMaxBridges) + " connections already open");
      return system().middleman().backend().new_scribe(caf_end.release());
    } catch (const Error& e) {
      return make_runtime_error(RuntimeErrc::refused, "cannot connect to " + where + " over TLS: " + e.what());
    }
  }

  caf::expected<caf::io::doorman_ptr> open(uint16_t port, const char* addr, bool reuse) override {
    try {
      auto gate = std::make_unique<Gate>(credentials_, addr != nullptr ? addr : "", port, reuse);
      auto& backend = static_cast<caf::io::network::default_multiplexer&>(system().middleman().backend());
      return caf::make_counted<GatedDoorman>(backend, std::move(gate));
    } catch (const Error& e) {
      return make_runtime_error(RuntimeErrc::refused, e.what());
    }
  }

 private:
  std::shared_ptr<const Credentials> credentials_;
  std::unique_ptr<Bridges> outgoing_ = std::make_unique<Bridges>();
};

}  // namespace

caf::actor start_gateway(caf::actor_system& system, std::shared_ptr<const Credentials> credentials) {
  caf::actor broker = system.middleman().named_broker<caf::io::basp_broker>(caf::atom("BASP"));
  auto gateway = system.spawn<GatewayActor, caf::detached + caf::hidden>(std::move(broker), std::move(credentials));
  caf::actor handle = caf::actor_cast<caf::actor>(gateway);
  system.registry().put(kRegistryName, caf::actor_cast<caf::strong_actor_ptr>(handle));
  return handle;
}

void stop_gateway(caf::actor_system& system, caf::actor gateway) {
  system.registry().erase(kRegistryName);
  // As CAF stops its own middleman actor: `kill`, which no handler can intercept.
  caf::anon_send_exit(gateway, caf::exit_reason::kill);
}

caf::io::middleman_actor middleman_actor(caf::actor_system& system) {
  if (auto gateway = system.registry().get(kRegistryName)) {
    return caf::actor_cast<caf::io::middleman_actor>(gateway);
  }
  return system.middleman().actor_handle();
}

caf::expected<uint16_t> publish(caf::actor_system& system, caf::strong_actor_ptr actor,
                                std::set<std::string> interface, const Endpoint& endpoint, bool reuse) {
  check_plaintext_bind(endpoint.host, "--listen");
  caf::scoped_actor self{system, true};
  caf::expected<uint16_t> result{caf::sec::runtime_error};
  self->request(middleman_actor(system), std::chrono::seconds(30), caf::publish_atom::value, endpoint.port, std::move(actor),
                std::move(interface), endpoint.host, reuse)
      .receive([&](uint16_t port) { result = port; }, [&](caf::error& error) { result = std::move(error); });
  return result;
}

}  // namespace partita::runtime::tls
