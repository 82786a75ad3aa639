// Waiting on sockets with a deadline: the one poll loop of the bulk transport, the request
// channel, data staging and the TLS gateway.
//
// Every wait ends when the socket is ready, at its deadline (TimedOut), or when a Wakeup is
// notified from another thread (Interrupted: an actor abandoning the work, a server
// stopping). kNoDeadline is for the one kind of wait that may last (a server waiting for its
// client's next request).
#pragma once

#include <poll.h>

#include <chrono>
#include <cstddef>
#include <string>

#include "base/error.h"

namespace partita::runtime {

using Deadline = std::chrono::steady_clock::time_point;
constexpr Deadline kNoDeadline = Deadline::max();

// A wait that reached its deadline: "timed out while <doing>".
class TimedOut : public Error {
 public:
  using Error::Error;
};
// A wait ended by its Wakeup: "interrupted while <doing>".
class Interrupted : public Error {
 public:
  using Error::Error;
};

// Interrupts waits from another thread (an eventfd). Once notified it stays signalled: it
// is for abandoning the work, not for pacing it.
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

// The one poll loop. Waits until one of fds[0..count) reports one of its events (or an
// error or hang-up, which the next transfer reports), and returns; the caller reads the
// revents. Throws TimedOut at `deadline`, Interrupted once `wakeup` (may be null) is
// notified (checked first), Error if poll fails. `doing` ends the message: "timed out
// while <doing>".
// At most kMaxWaitDescriptors.
constexpr size_t kMaxWaitDescriptors = 32;
void wait_ready(pollfd* fds, size_t count, Deadline deadline, const Wakeup* wakeup, const std::string& doing);
// The same for one socket; returns its revents.
short wait_ready(int fd, short events, Deadline deadline, const Wakeup* wakeup, const std::string& doing);

}  // namespace partita::runtime
