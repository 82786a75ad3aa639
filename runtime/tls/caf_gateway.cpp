#include "runtime/tls/caf_gateway.h"

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/io/middleman_actor_impl.hpp>
#include <caf/io/network/default_multiplexer.hpp>
#include <caf/io/network/doorman_impl.hpp>
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <list>
#include <mutex>
#include <thread>
#include <vector>

#include "base/file_util.h"
#include "base/refusal_log.h"
#include "runtime/errors.h"
#include "runtime/tls/peer_roles.h"
#include "runtime/tls/session.h"
#include "runtime/transport/connection.h"
#include "runtime/transport/tcp_socket.h"

namespace partita::runtime::tls {

namespace {

using Clock = std::chrono::steady_clock;
const caf::atom_value kRegistryName = caf::atom("tlsgateway");

// The address of the Unix socket at `path`; throws Error naming a path too long for one.
sockaddr_un unix_address(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof(address.sun_path)) {
    throw Error("the socket path " + path + " is over " + std::to_string(sizeof(address.sun_path) - 1) + " bytes");
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  return address;
}


// The ports of this process whose gates admit users' certificates (publish with
// Session::Admits::nodes_and_users): ports are unique on a host, so one set serves every
// actor system of the process. Made on first use, never destroyed (the gateway's thread
// reads it).
struct UserPorts {
  std::mutex mutex;
  std::set<uint16_t> ports;
};
UserPorts& user_ports() {
  static auto* ports = new UserPorts();
  return *ports;
}
bool users_admitted_on(uint16_t port) {
  UserPorts& u = user_ports();
  std::lock_guard lock(u.mutex);
  return u.ports.count(port) > 0;
}
void admit_users_on(uint16_t port, bool admit) {
  UserPorts& u = user_ports();
  std::lock_guard lock(u.mutex);
  if (admit) {
    u.ports.insert(port);
  } else {
    u.ports.erase(port);
  }
}

// The largest BASP message (its payload, after the 32-byte header) a peer may send. CAF
// 0.17 sizes its receive buffer from a header's payload length before a byte of the payload
// arrives, so without this an authenticated peer's header claiming up to 4 GiB made the
// daemon allocate (and zero) that much at once. Partita's largest messages over CAF are
// mini-batches with their features (SampledBatch, hundreds of MiB at the very most: bulk
// rows go over the transport).
constexpr uint32_t kMaxBaspPayload = uint32_t{512} << 20;

// A peer sent a BASP header that CAF must not see: too large, an unknown operation, or a
// payload length its operation does not allow.
class BadMessage : public Error {
 public:
  using Error::Error;
};

// A BASP header's payload length (bytes 4-7, network order).
uint32_t payload_length(const unsigned char* header) {
  return uint32_t{header[4]} << 24 | uint32_t{header[5]} << 16 | uint32_t{header[6]} << 8 | uint32_t{header[7]};
}

// Why CAF 0.17 must not see `header` (32 bytes, network order: operation, 2 bytes of
// padding, flags, payload length, operation data, source and destination actors), or ""
// if it may. CAF's own check (basp::valid) lets a handshake without payload through, and
// its handler then reads the payload through a null pointer: 32 bytes from any member
// crashed the process. So every operation's payload rule is enforced here: handshakes and
// messages carry one, heartbeats none.
std::string refuse_basp_header(const unsigned char* header) {
  namespace basp = caf::io::basp;
  const uint32_t length = payload_length(header);
  if (length > kMaxBaspPayload) {
    return "a message of " + std::to_string(length) + " bytes, over the limit of " + std::to_string(kMaxBaspPayload);
  }
  const auto operation = static_cast<basp::message_type>(header[0]);
  switch (operation) {
    case basp::message_type::server_handshake:
    case basp::message_type::client_handshake:
    case basp::message_type::direct_message:
    case basp::message_type::routed_message:
    case basp::message_type::monitor_message:
    case basp::message_type::down_message:
      if (length == 0) return "a " + basp::to_string(operation) + " without payload";
      return "";
    case basp::message_type::heartbeat:
      if (length != 0) return "a heartbeat with a payload of " + std::to_string(length) + " bytes";
      return "";
  }
  return "an unknown operation (" + std::to_string(header[0]) + ")";
}

// The most bytes of a BASP handshake's payload (its node id, application id, address and,
// from a server, the published actor's interface): CAF's are a few hundred bytes.
constexpr uint32_t kMaxHandshakePayload = 64 * 1024;

// Why a user's connection (runtime/tls/roles.h) may not send `header` (one that
// refuse_basp_header let through), or "" if it may. A user speaks to the head it connected
// to, as a client: direct messages to the head's actors (CAF's handshake asks the peer's
// "SpawnServ" by name for its information; Partita registers no actor type with it, so it
// spawns nothing), monitors and down messages. Not a routed message (it would name any
// node as its source) nor another named actor (the gateway's own middleman actor would
// connect and publish for it).
std::string refuse_user_header(const unsigned char* header) {
  namespace basp = caf::io::basp;
  const auto operation = static_cast<basp::message_type>(header[0]);
  switch (operation) {
    case basp::message_type::client_handshake:
    case basp::message_type::monitor_message:
    case basp::message_type::down_message:
    case basp::message_type::heartbeat:
      return "";
    case basp::message_type::direct_message: {
      if ((header[3] & basp::header::named_receiver_flag) == 0) return "";
      uint64_t name = 0;
      for (int i = 24; i < 32; ++i) name = name << 8 | header[i];  // dest_actor: the receiver's name
      if (static_cast<caf::atom_value>(name) == caf::atom("SpawnServ")) return "";
      return "a message to the actor named '" + caf::to_string(static_cast<caf::atom_value>(name)) + "'";
    }
    default:
      return "a " + basp::to_string(operation);
  }
}

// The BASP messages of the bytes a peer sends to CAF, followed header by header, so that a
// header CAF must not see (refuse_basp_header, and refuse_user_header on a user's
// connection) is caught before it is handed on; the first handshake of the kind the peer
// sends (a client's on an accepted connection, a server's on an outgoing one) is read
// whole, and the node id it names handed to `on_node` before CAF sees it.
class BaspFrames {
 public:
  using OnNode = std::function<void(const caf::node_id&)>;
  // From the next byte on: `user` restricts the peer to what a user may send; the first
  // `handshake` header's payload goes to `on_node`.
  void follow(bool user, caf::io::basp::message_type handshake, OnNode on_node) {
    user_ = user;
    handshake_ = handshake;
    on_node_ = std::move(on_node);
  }

  // Follows `bytes` more bytes of the stream. Throws BadMessage naming the first header
  // among them that CAF must not see, or a handshake over kMaxHandshakePayload or without a
  // node id.
  void check(const char* data, size_t bytes) {
    while (bytes > 0) {
      if (payload_left_ > 0) {
        const size_t skip = static_cast<size_t>(std::min<uint64_t>(payload_left_, bytes));
        if (capturing_) captured_.insert(captured_.end(), data, data + skip);
        payload_left_ -= skip;
        data += skip;
        bytes -= skip;
        if (capturing_ && payload_left_ == 0) name_node();
        continue;
      }
      const size_t take = std::min(bytes, sizeof(header_) - header_got_);
      std::memcpy(header_ + header_got_, data, take);
      header_got_ += take;
      data += take;
      bytes -= take;
      if (header_got_ < sizeof(header_)) break;
      header_got_ = 0;
      std::string why = refuse_basp_header(header_);
      if (why.empty() && user_) why = refuse_user_header(header_);
      if (!why.empty()) throw BadMessage(why + " (closed before the actor system saw it)");
      payload_left_ = payload_length(header_);
      if (on_node_ && static_cast<caf::io::basp::message_type>(header_[0]) == handshake_) {
        if (payload_left_ > kMaxHandshakePayload) {
          throw BadMessage("a handshake of " + std::to_string(payload_left_) + " bytes, over the limit of " +
                           std::to_string(kMaxHandshakePayload) + " (closed before the actor system saw it)");
        }
        capturing_ = true;
        captured_.reserve(static_cast<size_t>(payload_left_));
      }
    }
  }

 private:
  // The captured handshake's node id (its payload's first field) to on_node_, once.
  void name_node() {
    capturing_ = false;
    caf::node_id node;
    caf::binary_deserializer source{static_cast<caf::execution_unit*>(nullptr), captured_.data(), captured_.size()};
    if (source(node) || node == caf::none) {
      throw BadMessage("a handshake that names no node (closed before the actor system saw it)");
    }
    OnNode on_node = std::move(on_node_);
    on_node_ = nullptr;
    captured_ = std::vector<char>();
    on_node(node);
  }

  unsigned char header_[caf::io::basp::header_size];
  size_t header_got_ = 0;
  uint64_t payload_left_ = 0;
  bool user_ = false;
  caf::io::basp::message_type handshake_ = caf::io::basp::message_type::client_handshake;
  OnNode on_node_;
  bool capturing_ = false;
  std::vector<char> captured_;
};

// The network side of a link: a TLS session, or (insecure mode) the plain socket. Each
// call is one non-blocking step, as Session's.
class Peer {
 public:
  virtual ~Peer() = default;
  // True once transfers may start; throws HandshakeFailed.
  virtual bool handshake() = 0;
  // At most `bytes`; 0: wait for wants(). Throw SessionClosed.
  virtual size_t read_some(void* data, size_t bytes) = 0;
  virtual size_t write_some(const void* data, size_t bytes) = 0;
  virtual short wants() const = 0;
  // For the log: the certificate's name, or "plaintext".
  virtual std::string name() const = 0;
  // The certificate's role, once handshake() returned true (node in insecure mode: no roles).
  virtual MemberRole role() const = 0;
};

class TlsPeer : public Peer {
 public:
  TlsPeer(std::shared_ptr<const Credentials> credentials, int fd, Session::Role role,
          Session::Admits admits = Session::Admits::nodes)
      : session_(std::move(credentials), fd, role, admits) {}
  bool handshake() override { return session_.handshake(); }
  size_t read_some(void* data, size_t bytes) override { return session_.read_some(data, bytes); }
  size_t write_some(const void* data, size_t bytes) override { return session_.write_some(data, bytes); }
  short wants() const override { return session_.wants(); }
  std::string name() const override { return session_.peer_name(); }
  MemberRole role() const override { return session_.peer_role(); }

 private:
  Session session_;
};

class PlainPeer : public Peer {
 public:
  explicit PlainPeer(int fd) : fd_(fd) {}
  bool handshake() override { return true; }
  size_t read_some(void* data, size_t bytes) override {
    const ssize_t n = ::recv(fd_, data, bytes, MSG_DONTWAIT);
    if (n == 0) throw SessionClosed("the peer closed the connection");
    return done(n, POLLIN, "read from");
  }
  size_t write_some(const void* data, size_t bytes) override {
    return done(::send(fd_, data, bytes, MSG_NOSIGNAL | MSG_DONTWAIT), POLLOUT, "write to");
  }
  short wants() const override { return wants_; }
  std::string name() const override { return "plaintext"; }
  MemberRole role() const override { return MemberRole::node; }

 private:
  size_t done(ssize_t n, short wait_for, const char* doing) {
    if (n >= 0) return static_cast<size_t>(n);
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      throw SessionClosed(std::string("cannot ") + doing + " the peer: " + errno_text());
    }
    wants_ = wait_for;
    return 0;
  }

  int fd_;
  short wants_ = POLLIN;
};

// One connection of the gateway: its TLS handshake (accepted ones), then the bridge between
// the peer and CAF's end of a local socket, both ways, with two bounded buffers.
struct Link {
  static constexpr size_t kBuffer = 256 * 1024;

  ScopedFd net, local;
  std::unique_ptr<Peer> peer;
  std::string address;      // the peer's, for the log
  std::string where;        // the gate's endpoint ("" for outgoing links)
  std::string local_path;   // accepted: CAF's Unix socket, connected after the handshake
  Deadline deadline;        // of the handshake
  std::vector<char> in, out;  // in: network to CAF; out: CAF to network
  BaspFrames from_peer;       // the messages of `in`, checked before CAF sees them
  size_t in_begin = 0, in_end = 0, out_begin = 0, out_end = 0;
  short read_wants = POLLIN, write_wants = POLLOUT;
  // An end that closed: what it sent before is still delivered to the other, then the
  // link closes (a down message written just before a shutdown must arrive).
  bool net_eof = false, local_eof = false;
  uint64_t from_local = 0;  // bytes CAF has written into this link, ever
  std::unique_ptr<PeerRoleRecord> role_record;  // the peer's node under its role (peer_roles.h)

  bool bridging() const { return local.get() >= 0; }

  // Once the handshake is done: what the peer may send (a user's connection is restricted),
  // and the node its first `handshake` names filed under its certificate's role. A client
  // naming `own` (this actor system's node) is refused: CAF would take its messages for
  // local ones (an outgoing link passes none: CAF itself ends a connection to its own port
  // after the server's handshake).
  void follow_peer(caf::io::basp::message_type handshake, const caf::node_id& own) {
    const MemberRole role = peer->role();
    from_peer.follow(role == MemberRole::user, handshake, [this, role, own](const caf::node_id& node) {
      if (node == own) throw BadMessage("a handshake that names this node itself (closed before the actor system saw it)");
      role_record = std::make_unique<PeerRoleRecord>(node, role, peer->name());
    });
  }

  short net_events() const {
    if (!bridging()) return peer->wants() != 0 ? peer->wants() : POLLIN;
    return static_cast<short>((in_end < kBuffer && !net_eof ? read_wants : 0) |
                              (out_end > out_begin ? write_wants : 0));
  }
  short local_events() const {
    return static_cast<short>((out_end < kBuffer && !local_eof ? POLLIN : 0) | (in_end > in_begin ? POLLOUT : 0));
  }

  // Connects CAF's side once the handshake is done.
  void start_bridge() {
    local = ScopedFd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    const sockaddr_un to = unix_address(local_path);
    if (local.get() < 0 || ::connect(local.get(), reinterpret_cast<const sockaddr*>(&to), sizeof(to)) != 0) {
      throw Error("cannot hand the connection to the actor system: " + errno_text());
    }
    set_nonblocking(local.get());
    allocate();
  }
  void allocate() {
    in.resize(kBuffer);
    out.resize(kBuffer);
  }

  // Reads what the peer has sent into `in` (room permitting), each header checked before
  // CAF could see it. Returns the bytes read (0: none now; peer->wants() tells what to wait for).
  size_t read_from_peer() {
    const size_t n = peer->read_some(in.data() + in_end, kBuffer - in_end);
    from_peer.check(in.data() + in_end, n);
    in_end += n;
    return n;
  }

  // Outgoing links, before CAF has the connection: reads until `bytes` are in `in`, waiting
  // until `deadline`.
  void read_at_least(size_t bytes, Deadline deadline) {
    while (in_end < bytes) {
      if (read_from_peer() == 0) wait_ready(net.get(), peer->wants(), deadline, nullptr, "the peer's first message");
    }
  }

  // Moves what can move now, without blocking. False once an end closed and what it sent
  // was delivered, or an end broke.
  bool pump() {
    for (int round = 0; round < 16; ++round) {
      bool progress = false;
      if (in_end < kBuffer && !net_eof) {
        try {
          const size_t n = read_from_peer();
          progress |= n > 0;
          if (n == 0) read_wants = peer->wants();
        } catch (const SessionClosed&) {
          net_eof = true;
        }
      }
      if (in_end > in_begin) {
        const ssize_t n = ::send(local.get(), in.data() + in_begin, in_end - in_begin, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;  // CAF closed its end
        if (n > 0) {
          in_begin += static_cast<size_t>(n);
          progress = true;
          if (in_begin == in_end) in_begin = in_end = 0;
        }
      }
      if (out_end < kBuffer && !local_eof) {
        const ssize_t n = ::recv(local.get(), out.data() + out_end, kBuffer - out_end, MSG_DONTWAIT);
        if (n == 0) local_eof = true;  // CAF closed the connection
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
        if (n > 0) {
          out_end += static_cast<size_t>(n);
          from_local += static_cast<uint64_t>(n);
          progress = true;
        }
      }
      if (out_end > out_begin) {
        const size_t n = peer->write_some(out.data() + out_begin, out_end - out_begin);
        if (n == 0) write_wants = peer->wants();
        out_begin += n;
        progress |= n > 0;
        if (out_begin == out_end) out_begin = out_end = 0;
      }
      if ((local_eof && out_end == out_begin) || (net_eof && in_end == in_begin)) return false;
      if (!progress) break;
    }
    return true;
  }
};

// The gateway's one thread: accepts on every gate's TCP port, runs the handshakes of
// accepted connections (deadline, cap) and bridges every established connection, all with
// non-blocking sockets and one poll. Other threads hand it work through post().
class Loop {
 public:
  // `own`: the node of the actor system it serves.
  Loop(std::shared_ptr<const Credentials> credentials, caf::node_id own)
      : credentials_(std::move(credentials)), own_(std::move(own)), thread_([this] { run(); }) {}
  ~Loop() {
    stop_.notify();
    thread_.join();
    refusals_.flush(true);  // the count of a last burst's refusals left out
    ::close(wake_);
  }
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;

  // Accepts on `tcp` (port `port`) for a gate at `where`, handing connections to CAF at
  // `local_path`.
  void add_listener(int tcp, uint16_t port, std::string where, std::string local_path) {
    post([this, tcp, port, where = std::move(where), local_path = std::move(local_path)] {
      listeners_.push_back({ScopedFd(tcp), port, where, local_path});
    });
  }
  // Stops accepting on `tcp` (the gate went); its open connections stay.
  void remove_listener(int tcp) {
    post([this, tcp] {
      listeners_.remove_if([tcp](const Listening& l) { return l.tcp.get() == tcp; });
    });
  }
  // Bridges an established outgoing connection. False at kMaxBridges.
  bool add_link(std::unique_ptr<Link> link) {
    if (bridges_.load() >= kMaxBridges) return false;
    ++bridges_;
    auto shared = std::make_shared<std::unique_ptr<Link>>(std::move(link));
    post([this, shared] { links_.push_back(std::move(*shared)); });
    return true;
  }

 private:
  struct Listening {
    ScopedFd tcp;
    uint16_t port = 0;
    std::string where, local_path;
  };

  void post(std::function<void()> task) {
    {
      std::lock_guard lock(mutex_);
      tasks_.push_back(std::move(task));
    }
    const uint64_t one = 1;
    if (::write(wake_, &one, sizeof(one)) < 0 && errno != EAGAIN) {
      spdlog::error("gateway: cannot wake its thread: {}", errno_text());
    }
  }

  void run() {
    for (;;) {
      std::vector<pollfd> fds{{stop_.fd(), POLLIN, 0}, {wake_, POLLIN, 0}};
      for (const auto& l : listeners_) fds.push_back({l.tcp.get(), POLLIN, 0});
      Deadline wake_at = kNoDeadline;
      for (const auto& link : links_) {
        fds.push_back({link->net.get(), link->net_events(), 0});
        fds.push_back({link->local.get(), link->bridging() ? link->local_events() : short{0}, 0});
        if (!link->bridging()) wake_at = std::min(wake_at, link->deadline);
      }
      int timeout_ms = -1;
      if (wake_at != kNoDeadline) {
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(wake_at - Clock::now());
        timeout_ms = static_cast<int>(std::clamp<int64_t>(left.count(), 0, 1 << 30));
      }
      if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) {
        spdlog::error("gateway: poll failed: {}", errno_text());
        return;
      }
      if (fds[0].revents != 0) {
        drain();
        return;  // the links close with the loop
      }
      if (fds[1].revents != 0) run_tasks();
      size_t at = 2;
      for (auto& l : listeners_) {
        if (at < fds.size() && fds[at].fd == l.tcp.get() && fds[at].revents != 0) accept_all(l);
        ++at;
      }
      (void)at;
      const Deadline now = Clock::now();
      for (auto it = links_.begin(); it != links_.end();) {
        // Every link is stepped (non-blocking): a TLS session may hold read-ahead bytes
        // the poll cannot see, and links accepted just now have no entry in fds yet.
        Link& link = **it;
        if (step(link, now)) {
          ++it;
        } else {
          if (link.bridging()) --bridges_;
          it = links_.erase(it);
        }
      }
    }
  }

  // Stopping: nothing new is accepted, but what CAF has written still reaches its peers
  // (the reply to the request that stopped this process, a down message), until CAF has
  // been silent for kDrainQuiet with every buffer sent, or kDrainDeadline. Without it a
  // head's reply to `partita stop` was lost in 1 of ~12 runs on a loaded machine.
  void drain() {
    static constexpr auto kDrainQuiet = std::chrono::milliseconds(100);
    static constexpr auto kDrainDeadline = std::chrono::seconds(2);
    listeners_.clear();
    for (auto it = links_.begin(); it != links_.end();) {
      if ((*it)->bridging()) {
        ++it;
      } else {
        --handshakes_;
        it = links_.erase(it);
      }
    }
    const Deadline until = Clock::now() + kDrainDeadline;
    Deadline quiet_since = Clock::now();
    while (!links_.empty()) {
      const Deadline now = Clock::now();
      bool unsent = false;
      for (auto it = links_.begin(); it != links_.end();) {
        Link& link = **it;
        const uint64_t before = link.from_local;
        if (!step(link, now)) {
          --bridges_;
          it = links_.erase(it);
          continue;
        }
        if (link.from_local != before) quiet_since = now;
        unsent |= link.out_end > link.out_begin;
        ++it;
      }
      if (now >= until || (!unsent && now - quiet_since >= kDrainQuiet)) return;
      std::vector<pollfd> fds;
      for (const auto& link : links_) {
        fds.push_back({link->net.get(), link->net_events(), 0});
        fds.push_back({link->local.get(), link->local_events(), 0});
      }
      if (::poll(fds.data(), fds.size(), 10) < 0 && errno != EINTR) return;
    }
  }

  void run_tasks() {
    uint64_t count;
    while (::read(wake_, &count, sizeof(count)) > 0) {
    }
    std::vector<std::function<void()>> tasks;
    {
      std::lock_guard lock(mutex_);
      tasks.swap(tasks_);
    }
    for (auto& task : tasks) task();
  }

  void accept_all(Listening& l) {
    for (int i = 0; i < 64; ++i) {
      ScopedFd fd = accept_tcp(l.tcp.get());
      if (fd.get() < 0) return;
      auto link = std::make_unique<Link>();
      link->address = peer_address(fd.get());
      link->where = l.where;
      link->local_path = l.local_path;
      link->deadline = Clock::now() + kHandshakeDeadline;
      if (credentials_) {
        link->peer = std::make_unique<TlsPeer>(credentials_, fd.get(), Session::Role::server,
                                               users_admitted_on(l.port) ? Session::Admits::nodes_and_users
                                                                         : Session::Admits::nodes);
      } else {
        link->peer = std::make_unique<PlainPeer>(fd.get());
      }
      link->net = std::move(fd);
      if (handshakes_ >= kMaxHandshakes || bridges_.load() >= kMaxBridges) cut_oldest_handshake(link->address);
      ++handshakes_;
      links_.push_back(std::move(link));
    }
  }

  // At the cap of pending handshakes the oldest is cut, so that a flood of silent
  // connections delays a real peer by one round of handshakes, not by the deadline. Said
  // at most once a second.
  void cut_oldest_handshake(const std::string& newest) {
    for (auto it = links_.begin(); it != links_.end(); ++it) {
      if ((*it)->bridging() || (*it)->where.empty()) continue;
      links_.erase(it);
      --handshakes_;
      ++cut_;
      break;
    }
    if (Clock::now() - last_warning_ > std::chrono::seconds(1)) {
      spdlog::warn("gateway: {} handshakes pending: cut the oldest ({} since the last warning); the newest from {}",
                   kMaxHandshakes, cut_, newest);
      last_warning_ = Clock::now();
      cut_ = 0;
    }
  }

  // Logs a refusal (warn) at a bounded rate (base/refusal_log.h), so that a peer
  // reconnecting in a loop cannot fill the disk through the log.
  void refused(const std::string& line) { refusals_.refused(line); }

  // One non-blocking step of a link. False: close it.
  bool step(Link& link, Deadline now) {
    if (!link.bridging()) {
      try {
        if (!link.peer->handshake()) {
          if (now < link.deadline) return true;
          --handshakes_;
          refused(fmt::format("{}: refused a connection from {}: no TLS handshake within {} s", link.where,
                              link.address, kHandshakeDeadline.count()));
          return false;
        }
        --handshakes_;
        if (bridges_.load() >= kMaxBridges) {
          refused(fmt::format("{}: refused a connection from {} ({}): {} connections already open", link.where,
                              link.address, link.peer->name(), kMaxBridges));
          return false;
        }
        ++bridges_;
        link.follow_peer(caf::io::basp::message_type::client_handshake, own_);
        link.start_bridge();
        spdlog::debug("{}: {} is {} ({})", link.where, link.address, link.peer->name(), role_name(link.peer->role()));
      } catch (const Error& e) {
        if (!link.bridging()) {
          --handshakes_;
          refused(fmt::format("{}: refused a connection from {}: {}", link.where, link.address, e.what()));
        } else {
          spdlog::error("{}: {}", link.where, e.what());
        }
        return false;
      }
    }
    try {
      return link.pump();
    } catch (const BadMessage& e) {
      refused(fmt::format("{}: closed the connection with {} ({}): {}", link.where.empty() ? "outgoing" : link.where,
                          link.address, link.peer->name(), e.what()));
      return false;
    } catch (const Error& e) {
      spdlog::debug("connection with {} ended: {}", link.address, e.what());
      return false;
    }
  }

  std::shared_ptr<const Credentials> credentials_;
  caf::node_id own_;
  Wakeup stop_;
  int wake_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  std::mutex mutex_;
  std::vector<std::function<void()>> tasks_;
  std::list<Listening> listeners_;            // the loop thread's
  std::list<std::unique_ptr<Link>> links_;    // the loop thread's
  size_t handshakes_ = 0;                     // the loop thread's
  std::atomic<size_t> bridges_{0};
  size_t cut_ = 0;
  Clock::time_point last_warning_{};
  RefusalLog refusals_{"gateway"};
  std::thread thread_;  // last: started once the rest exists
};

// CAF's side of a gate: a Unix socket in this user's folder (gate_folder()), named after
// the process (PID-N.sock). A process killed with SIGKILL cannot remove its socket, so each
// new gate first removes the sockets of processes that are gone: the folder holds about one
// socket per live gate, however many daemons were killed (a folder per gate, as before,
// left ~120 folders in /tmp per run of the test suite, which kills its daemons).
std::string gate_folder() {
  const std::string dir = "/tmp/partita-caf-" + std::to_string(::getuid());
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) throw Error("cannot create " + dir + ": " + errno_text());
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) throw Error("cannot inspect " + dir + ": " + errno_text());
  if (!S_ISDIR(st.st_mode)) throw Error(dir + " is not a folder (a link or a file is there): remove it");
  if (st.st_uid != ::getuid()) {
    throw Error(dir + " belongs to another user (uid " + std::to_string(st.st_uid) + "): remove it");
  }
  if ((st.st_mode & 077) != 0 && ::chmod(dir.c_str(), 0700) != 0) {
    throw Error("cannot make " + dir + " private (chmod 700): " + errno_text());
  }
  return dir;
}

// Connects to the Unix socket at `path`; false when nothing listens there (ECONNREFUSED).
bool someone_listens(const std::string& path) {
  ScopedFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const sockaddr_un to = unix_address(path);
  return probe.get() < 0 || ::connect(probe.get(), reinterpret_cast<const sockaddr*>(&to), sizeof(to)) == 0 ||
         errno != ECONNREFUSED;
}

// Removes the sockets in `dir` of processes that are gone: no process has their PID here
// and nothing listens on them (a process of another PID namespace sharing /tmp still does).
void remove_sockets_of_gone_processes(const std::string& dir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    char* end = nullptr;
    const long pid = std::strtol(name.c_str(), &end, 10);
    if (pid <= 0 || end == name.c_str() || *end != '-') continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    if (!someone_listens(entry.path().string())) std::filesystem::remove(entry.path(), ec);
  }
}

// The listening side: a TCP port on the network, accepted by the loop; CAF's doorman on a
// Unix socket behind it, in the folder only this user may enter.
class Gate {
 public:
  Gate(std::shared_ptr<Loop> loop, const std::string& host, uint16_t port, bool reuse) : loop_(std::move(loop)) {
    ListeningSocket tcp = listen_tcp(host, port, 128, reuse);
    listen_local();
    endpoint_ = tcp.endpoint;
    tcp_ = tcp.socket.get();
    loop_->add_listener(tcp.socket.release(), endpoint_.port, endpoint_.to_string(), path_);
  }
  ~Gate() {
    admit_users_on(endpoint_.port, false);
    loop_->remove_listener(tcp_);
    ::unlink(path_.c_str());
  }
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;

  int take_local_listener() { return local_.release(); }
  uint16_t port() const { return endpoint_.port; }
  const Endpoint& endpoint() const { return endpoint_; }

 private:
  void listen_local() {
    static std::atomic<uint64_t> gates{0};
    const std::string dir = gate_folder();
    remove_sockets_of_gone_processes(dir);
    path_ = dir + "/" + std::to_string(::getpid()) + "-" + std::to_string(++gates) + ".sock";
    ::unlink(path_.c_str());  // an earlier process's of the same PID
    local_ = ScopedFd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    const sockaddr_un address = unix_address(path_);
    if (local_.get() < 0 || ::bind(local_.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0 ||
        ::listen(local_.get(), 128) != 0) {
      throw Error("cannot listen on " + path_ + ": " + errno_text());
    }
  }

  std::shared_ptr<Loop> loop_;
  Endpoint endpoint_;
  int tcp_ = -1;  // the loop's
  ScopedFd local_;
  std::string path_;
};

// CAF's doorman on the Unix socket, reporting the gate's TCP address: BASP files the
// published actor under the port peers connect to. Owns the gate. Only this process's
// gateway may connect: every byte CAF reads has passed BaspFrames. Another process of the
// same user (the folder keeps out everyone else) is refused by its credentials.
class GatedDoorman : public caf::io::network::doorman_impl {
 public:
  GatedDoorman(caf::io::network::default_multiplexer& backend, std::unique_ptr<Gate> gate)
      : doorman_impl(backend, gate->take_local_listener()), gate_(std::move(gate)) {}
  std::string addr() const override { return gate_->endpoint().host; }
  uint16_t port() const override { return gate_->port(); }

  bool new_connection() override {
    if (detached()) return false;
    const int fd = acceptor_.accepted_socket();
    ucred peer{};
    socklen_t size = sizeof(peer);
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0 || peer.pid != ::getpid()) {
      ::close(fd);
      if (Clock::now() - last_warning_ > std::chrono::seconds(1)) {
        spdlog::warn("{}: refused a local connection from process {} ({} since the last warning): only the gateway "
                     "speaks to the actor system", gate_->endpoint().to_string(), peer.pid, ++refused_);
        last_warning_ = Clock::now();
        refused_ = 0;
      } else {
        ++refused_;
      }
      return true;  // keep accepting
    }
    return doorman_impl::new_connection();
  }

 private:
  std::unique_ptr<Gate> gate_;
  Clock::time_point last_warning_{};
  size_t refused_ = 0;
};

class GatewayActor : public caf::io::middleman_actor_impl {
 public:
  GatewayActor(caf::actor_config& cfg, caf::actor broker, std::shared_ptr<const Credentials> credentials)
      : middleman_actor_impl(cfg, std::move(broker)),
        credentials_(credentials),
        loop_(std::make_shared<Loop>(std::move(credentials), system().node())) {}

  // A CAF peer writes its handshake as soon as it accepts a connection; a secure daemon's
  // gateway waits for a TLS ClientHello and never answers plaintext. Under the callers'
  // request timeouts (10 s), so that the refusal is named.
  static constexpr std::chrono::seconds kFirstBytesDeadline{5};

  const char* name() const override { return "partita_gateway"; }

  void on_exit() override {
    loop_.reset();  // the gates' doormen keep it while CAF holds them
    middleman_actor_impl::on_exit();
  }

 protected:
  // Blocks this actor for the handshake and the peer's first BASP header (at most
  // kHandshakeDeadline together), as CAF's own connect blocks for the TCP connection.
  caf::expected<caf::io::scribe_ptr> connect(const std::string& host, uint16_t port) override {
    const std::string where = host + ":" + std::to_string(port);
    try {
      const Deadline deadline = Clock::now() + kHandshakeDeadline;
      auto link = std::make_unique<Link>();
      link->net = connect_tcp(host, port, deadline, nullptr);
      link->address = where;
      if (credentials_) {
        link->peer = std::make_unique<TlsPeer>(credentials_, link->net.get(), Session::Role::client);
        while (!link->peer->handshake()) {
          wait_ready(link->net.get(), link->peer->wants(), deadline, nullptr, "the TLS handshake");
        }
        link->follow_peer(caf::io::basp::message_type::server_handshake, caf::node_id());  // CAF ends a self-connection
        link->allocate();
        link->read_at_least(caf::io::basp::header_size, deadline);  // caf_gateway.h: "handed to CAF"
      } else {
        link->peer = std::make_unique<PlainPeer>(link->net.get());
        link->follow_peer(caf::io::basp::message_type::server_handshake, caf::node_id());  // CAF ends a self-connection
        link->allocate();
        try {
          link->read_at_least(caf::io::basp::header_size, std::min(deadline, Clock::now() + kFirstBytesDeadline));
        } catch (const TimedOut&) {
          throw Error("it sent nothing within " + std::to_string(kFirstBytesDeadline.count()) +
                      " s, as a Partita process with TLS does to one without (this one runs --insecure)");
        }
      }
      int pair[2];
      if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
        throw Error("cannot create a socket pair: " + errno_text());
      }
      ScopedFd caf_end(pair[0]);
      link->local = ScopedFd(pair[1]);
      set_nonblocking(link->local.get());
      if (!link->pump()) throw Error("the peer closed the connection");  // its first bytes into CAF's end
      if (!loop_->add_link(std::move(link))) throw Error(std::to_string(kMaxBridges) + " connections already open");
      return system().middleman().backend().new_scribe(caf_end.release());
    } catch (const Error& e) {
      return make_runtime_error(RuntimeErrc::refused, "cannot connect to " + where +
                                                          (credentials_ ? " over TLS: " : ": ") + e.what());
    }
  }

  caf::expected<caf::io::doorman_ptr> open(uint16_t port, const char* addr, bool reuse) override {
    try {
      auto gate = std::make_unique<Gate>(loop_, addr != nullptr ? addr : "", port, reuse);
      auto& backend = static_cast<caf::io::network::default_multiplexer&>(system().middleman().backend());
      return caf::make_counted<GatedDoorman>(backend, std::move(gate));
    } catch (const Error& e) {
      return make_runtime_error(RuntimeErrc::refused, e.what());
    }
  }

 private:
  std::shared_ptr<const Credentials> credentials_;
  std::shared_ptr<Loop> loop_;
};

}  // namespace

caf::actor start_gateway(caf::actor_system& system, std::shared_ptr<const Credentials> credentials) {
  caf::actor broker = system.middleman().named_broker<caf::io::basp_broker>(caf::atom("BASP"));
  caf::actor handle = caf::actor_cast<caf::actor>(
      system.spawn<GatewayActor, caf::detached + caf::hidden>(std::move(broker), std::move(credentials)));
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
                                std::set<std::string> interface, const Endpoint& endpoint, bool reuse,
                                Session::Admits admits) {
  check_plaintext_bind(endpoint.host, "--listen");
  caf::scoped_actor self{system, true};
  caf::expected<uint16_t> result{caf::sec::runtime_error};
  self->request(middleman_actor(system), std::chrono::seconds(30), caf::publish_atom::value, endpoint.port, std::move(actor),
                std::move(interface), endpoint.host, reuse)
      .receive([&](uint16_t port) { result = port; }, [&](caf::error& error) { result = std::move(error); });
  // Until here users are refused on the new port, as on every other.
  if (result && admits == Session::Admits::nodes_and_users) admit_users_on(*result, true);
  return result;
}

}  // namespace partita::runtime::tls
