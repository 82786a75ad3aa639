// The stage in front of the status page's HTTP handling: one thread of its own accepts the
// connections and holds each, in one poll, until it has sent a complete request header;
// only then does a worker take it. Why: httplib 0.11's server hands every accepted
// connection to a worker at once, and the worker waits there for the request, so 68
// connections that said nothing kept the next request waiting 31 s behind 4 workers. Here
// a silent connection costs a socket and a place in the poll, never a worker.
//
// Bounds (Limits), so that a flood of connections or bytes costs a fixed amount:
//   - connections held (waiting for their header, for a worker, or being answered): at most
//     max_per_client from one client address and max_connections in all. A new connection
//     beyond either closes the oldest one still without its header (from that address, or
//     from any) to make room, so that silent connections give way to a real request, whose
//     header arrives at once, instead of locking it out (as the TLS gateway cuts its oldest
//     handshake); when every connection held has sent its request, the new one is closed
//     at once.
//   - a header is complete within header_deadline of the accept and max_header_bytes, or
//     the connection is closed (a header over the size is answered 431 first): a client
//     that sends a byte a second is cut at the deadline.
//   - a request waits for a worker among at most max_queued others; beyond that the
//     accepting thread answers 503 itself, at once.
//   - a worker's reads and writes end at answer_deadline after the header (a body that
//     never comes, a client that never reads the response), or at stop().
// Refusals (the bounds, a header too large, 503) are logged at warn, closes at the header
// deadline at debug, both at a bounded rate (base/refusal_log.h).
//
// Threads: the accepting one and Limits::workers. stop() ends them all within its deadline:
// the waits of connections being answered end at once, those not yet answered are closed.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "base/file_util.h"
#include "runtime/transport/wait.h"

namespace partita::dashboard {

// A connection whose request header has arrived, as a worker gets it: reads return the
// bytes the gate read first (the header, perhaps the start of a body), then the socket's.
// Every wait ends at the answer deadline or when the gate stops.
class GatedConnection {
 public:
  GatedConnection(ScopedFd fd, std::string head, runtime::Deadline deadline, const runtime::Wakeup* stop);

  // Up to `size` bytes: > 0 read, 0 at the end of the client's stream, -1 at the deadline,
  // at stop() or on an error.
  long read(char* data, size_t size);
  // Writes up to `size` bytes: how many, or -1 at the deadline, at stop() or on an error
  // (a closed peer included: no SIGPIPE).
  long write(const char* data, size_t size);
  // Whether a read or a write can go on: waits until then, false at the deadline or stop().
  bool wait_readable() const;
  bool wait_writable() const;

  int fd() const { return fd_.get(); }
  const std::string& peer_ip() const { return peer_ip_; }
  int peer_port() const { return peer_port_; }
  const std::string& local_ip() const { return local_ip_; }
  int local_port() const { return local_port_; }

 private:
  bool wait(short events) const;

  ScopedFd fd_;
  std::string head_;
  size_t head_read_ = 0;
  runtime::Deadline deadline_;
  const runtime::Wakeup* stop_;
  std::string peer_ip_, local_ip_;
  int peer_port_ = 0, local_port_ = 0;
};

class RequestGate {
 public:
  struct Limits {
    int workers = 4;
    int max_queued = 64;          // requests waiting for a worker
    int max_connections = 256;    // held at once, in all
    int max_per_client = 64;      // held at once from one client address
    std::chrono::milliseconds header_deadline{5000};
    size_t max_header_bytes = 32 * 1024;
    std::chrono::milliseconds answer_deadline{10000};
  };
  // A worker's answer to one connection; the gate closes it afterwards. Exceptions are
  // logged (error) and the connection closed.
  using Serve = std::function<void(GatedConnection&)>;

  // Serves `listening` (a listening, non-blocking socket: runtime::listen_tcp) with `serve`.
  // `name` opens every log line ("status page 127.0.0.1:8265"). Throws UsageError naming a
  // limit below 1 (max_queued: below 0), Error if a thread cannot be started.
  RequestGate(ScopedFd listening, std::string name, Limits limits, Serve serve);
  ~RequestGate();  // stop(5 s)
  RequestGate(const RequestGate&) = delete;
  RequestGate& operator=(const RequestGate&) = delete;

  // Closes the listening socket and every connection not being answered, ends the waits of
  // those being answered and joins the threads; true if they ended within `deadline`.
  // Otherwise logs an error and leaves them to end on their own (they hold what they use),
  // returning false. Idempotent.
  bool stop(std::chrono::milliseconds deadline);

  struct State;  // the threads' (request_gate.cpp)

 private:
  std::shared_ptr<State> state_;
};

}  // namespace partita::dashboard
