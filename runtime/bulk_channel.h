// Bulk byte streams between two actors in different processes, beside CAF.
//
// CAF 0.17 moves large messages at about half of raw TCP's speed on loopback (measured in
// BENCHMARKS.md), so actors that exchange tens of MB per step (the allreduce ring) keep
// control, failure detection and deadlines in messages and stream the payload over a
// plain TCP connection of their own. The two ends learn each other through messages: one
// opens a BulkListener and sends its endpoint; the other connects. Both ends then prove
// they belong together with a hello (a token both were told, and who each end is), so a
// connection from anyone else (another program on a reused port, a stale peer) is refused
// before any data flows.
//
// Everything here is non-blocking with deadlines: a call waits at most until its deadline,
// and a Wakeup lets another thread interrupt the wait (an actor aborting the operation).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/address.h"

namespace partita::runtime {

using Deadline = std::chrono::steady_clock::time_point;

// Interrupts BulkChannel waits from another thread (an eventfd). Once notified it stays
// signalled: it is for abandoning the work, not for pacing it.
class Wakeup {
 public:
  Wakeup();
  ~Wakeup();
  Wakeup(const Wakeup&) = delete;
  Wakeup& operator=(const Wakeup&) = delete;

  void notify();
  bool notified() const;
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

// One connected TCP stream (TCP_NODELAY, non-blocking). Movable, closed on destruction.
// Errors are partita::Error naming the peer as `peer_name` ("allreduce rank 2").
class BulkChannel {
 public:
  BulkChannel() = default;
  ~BulkChannel();
  BulkChannel(BulkChannel&& other) noexcept;
  BulkChannel& operator=(BulkChannel&& other) noexcept;

  // Connects to `to` and sends the hello {token, self}. Does not wait for the peer to
  // accept (a ring of peers that each connect before accepting would wait in a circle);
  // confirm() reads its answer later. Throws Error if the connection is refused or not
  // made by the deadline, or when `wakeup` is notified.
  static BulkChannel connect(const Endpoint& to, uint64_t token, uint32_t self, std::string peer_name,
                             Deadline deadline, const Wakeup* wakeup);
  // Waits for the accepting end's hello, which must be {token, peer}.
  void confirm(uint64_t token, uint32_t peer, Deadline deadline, const Wakeup* wakeup);

  // Sends what the socket takes now, at most `bytes`; returns how much (0: the socket is
  // full, wait for POLLOUT). Throws Error when the connection is broken.
  size_t send_some(const void* data, size_t bytes);
  // Receives what has arrived, at most `bytes`; returns how much (0: nothing yet, wait for
  // POLLIN). Throws Error when the peer closed the connection or it broke.
  size_t recv_some(void* data, size_t bytes);
  // For a stream used in one direction only: throws Error if the peer closed the
  // connection (or sent anything, which it must not). Call it when poll() reports the
  // socket readable.
  void check_silent_peer();

  int fd() const { return fd_; }
  bool is_open() const { return fd_ >= 0; }
  const std::string& peer_name() const { return peer_name_; }

 private:
  friend class BulkListener;
  BulkChannel(int fd, std::string peer_name) : fd_(fd), peer_name_(std::move(peer_name)) {}
  void close();

  int fd_ = -1;
  std::string peer_name_;
};

// A listening socket on `host`, any free port, for the connections of known peers.
class BulkListener {
 public:
  // Throws Error if `host` does not resolve or nothing can listen there.
  explicit BulkListener(const std::string& host);
  ~BulkListener();
  BulkListener(const BulkListener&) = delete;
  BulkListener& operator=(const BulkListener&) = delete;

  // Where peers connect: `host` as given and the port the system chose.
  const Endpoint& endpoint() const { return endpoint_; }

  // Accepts connections until one says hello {token, peer}, answers it with {token, self}
  // and returns it. Connections with another hello (or none within the deadline) are
  // closed and logged. Throws Error at the deadline or when `wakeup` is notified.
  BulkChannel accept(uint64_t token, uint32_t peer, uint32_t self, std::string peer_name, Deadline deadline,
                     const Wakeup* wakeup);

 private:
  int fd_ = -1;
  Endpoint endpoint_;
};

}  // namespace partita::runtime
