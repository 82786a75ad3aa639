// Connections of the bulk transport: TCP streams between two actors in different processes,
// beside CAF, and the one way to wait on them.
//
// CAF 0.17 moves large messages at about half of raw loopback TCP's speed (BENCHMARKS.md),
// so actors that exchange tens of MB per step (the allreduce ring, feature rows) keep
// control, failure detection and deadlines in messages and stream the payload over a plain
// TCP connection of their own. The two ends learn each other through messages: one opens a
// Listener and sends its endpoint; the other connects. Both ends then prove they belong
// together with a hello (runtime/transport/wire_format.h: a token both were told, and who
// each end is), so a connection from anyone else (another program on a reused port, a
// stale peer) is refused before any data flows.
//
// With the process's TLS credentials (runtime/tls/credentials.h; every process but an
// --insecure one has them) each connection is a TLS 1.3 session first: both ends present a
// certificate of the cluster, or the handshake fails and the connection is closed before a
// byte of hello or data is read. The hello then still proves which group and member the
// peer is. Without credentials the transport is plaintext and listens on loopback only.
//
// Every wait goes through wait_ready (runtime/transport/wait.h): it ends when the socket is
// ready, at its deadline (TimedOut) or when a Wakeup is notified (Interrupted). Sockets are
// opened by runtime/transport/tcp_socket.h.
#pragma once

#include <sys/uio.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/error.h"
#include "runtime/address.h"
#include "runtime/tls/session.h"
#include "runtime/transport/wait.h"

namespace partita::runtime {

// One connected TCP stream (TCP_NODELAY, non-blocking), over TLS when the process has
// credentials. Movable, closed on destruction.
// Errors are partita::Error naming the peer as `peer_name` ("allreduce rank 2").
class Connection {
 public:
  Connection() = default;
  ~Connection();
  Connection(Connection&& other) noexcept;
  Connection& operator=(Connection&& other) noexcept;

  // Connects to `to`, completes the TLS handshake (with credentials) and sends the hello
  // {token, self}. The handshake needs the peer to be accepting meanwhile (a ring of peers
  // connects and accepts on two threads, runtime/collective/ring.cpp); confirm() reads its
  // answer later. Throws Error naming the peer and the address if the
  // connection is refused or not made by the deadline, or when `wakeup` is notified.
  static Connection connect(const Endpoint& to, uint64_t token, uint32_t self, std::string peer_name,
                            Deadline deadline, const Wakeup* wakeup);
  // Waits for the accepting end's hello, which must be {token, peer}.
  void confirm(uint64_t token, uint32_t peer, Deadline deadline, const Wakeup* wakeup);
  // Takes `fd`, one end of a connected stream socket (a socketpair), as a plaintext
  // connection whose hellos count as exchanged: what connect() and Listener::accept()
  // return, without a listener, a handshake or a thread for the other end. For driving a
  // protocol's ends from bytes in one thread (fuzz/fuzz_transport.cpp); a daemon's
  // connections come from connect() and accept() only.
  static Connection adopt(int fd, std::string peer_name) { return Connection(fd, std::move(peer_name)); }

  // Non-blocking transfers. send_some sends what the socket takes now, at most `bytes`, and
  // returns how much (0: full). recv_some receives what has arrived, at most `bytes` (0:
  // nothing yet). Both throw Error naming the peer when the connection is broken or closed.
  size_t send_some(const void* data, size_t bytes);
  size_t recv_some(void* data, size_t bytes);

  // Blocking transfers of exactly `bytes`, waiting (wait_ready) until `deadline`. After an
  // exception the stream may be cut mid-frame: the caller must give it up.
  void send_all(const void* data, size_t bytes, Deadline deadline, const Wakeup* wakeup, const char* doing);
  // Every byte of `pieces` (consumed: advanced past what was sent) with sendmsg, at most
  // IOV_MAX pieces per call: several frames in one system call.
  void send_all(iovec* pieces, size_t count, Deadline deadline, const Wakeup* wakeup, const char* doing);
  void recv_all(void* data, size_t bytes, Deadline deadline, const Wakeup* wakeup, const char* doing);
  // Waits until bytes (or the peer's hang-up) arrive, taking none. Returns at once while
  // the TLS session holds bytes not yet taken.
  void wait_readable(Deadline deadline, const Wakeup* wakeup, const char* doing) const;

  // Fixes the socket's send and receive buffers at `bytes` each (the kernel caps them at
  // net.core.{w,r}mem_max), instead of the kernel's autotuning.
  void set_buffer_bytes(int bytes);

  int fd() const { return fd_; }
  bool is_open() const { return fd_ >= 0; }
  const std::string& peer_name() const { return peer_name_; }
  void set_peer_name(std::string name) { peer_name_ = std::move(name); }

 private:
  friend class Listener;
  Connection(int fd, std::string peer_name) : fd_(fd), peer_name_(std::move(peer_name)) {}
  void close();
  // Completes the TLS handshake as `role` (no credentials: nothing to do).
  void secure(tls::Session::Role role, Deadline deadline, const Wakeup* wakeup);
  // The readiness a transfer that made no progress waits for: `plain`, or what TLS wants.
  short wants(short plain) const { return tls_ ? tls_->wants() : plain; }

  int fd_ = -1;
  std::string peer_name_;
  std::unique_ptr<tls::Session> tls_;  // refers to fd_
};

// A listening socket on `host`, any free port, for the connections of known peers.
class Listener {
 public:
  // How long a connection may take from accept to a complete hello (TLS handshake
  // included): a half-open or silent one is dropped after it.
  static constexpr std::chrono::seconds kHelloDeadline{10};
  // Throws PlaintextNotLoopback (runtime/tls/credentials.h) for a host other than loopback
  // in insecure mode.
  // Throws Error naming the host if it does not resolve or nothing can listen there.
  explicit Listener(const std::string& host);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // Where peers connect: `host` as given and the port the system chose.
  const Endpoint& endpoint() const { return endpoint_; }

  // Accepts connections until one says hello {token, peer}, answers it with {token, self}
  // and returns it. Connections with another hello, a failed TLS handshake, or no hello
  // within kHelloDeadline are closed and logged with the peer's address; at most 16 are
  // handled at once (the oldest goes). Throws TimedOut at the deadline,
  // Interrupted when `wakeup` is notified, both naming `peer_name` and the endpoint.
  Connection accept(uint64_t token, uint32_t peer, uint32_t self, std::string peer_name, Deadline deadline,
                    const Wakeup* wakeup);

 private:
  int fd_ = -1;
  Endpoint endpoint_;
};

}  // namespace partita::runtime
