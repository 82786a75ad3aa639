// A framed request/reply channel over one transport connection: how a service in one
// process answers a client in another with replies of tens of MB, beside CAF.
//
// Why: CAF 0.17's middleman copies a message's bytes into its write buffer on the sender
// and out of its read buffer into a fresh vector on the receiver, in one multiplexer thread
// per process. For tens of MB per reply those copies (and the fresh pages) cost more than
// the kernel's own loopback copies (BENCHMARKS.md, "Distributed mini-batches"). Over a
// channel a reply is a small head and a raw body: the server fills the body in pieces that
// the kernel sends while they are still in cache, and the client reads pieces into a cached
// buffer and puts them where they go; no reply is ever whole in memory on either side.
// Setting up stays with CAF messages: the service's actor answers a channel request with a
// ChannelOffer (a listener, a token and the client's id) for one client.
//
// The frames are in runtime/transport/wire_format.h. Every wait has a deadline, except a
// session's wait for its client's next request (an idle client is fine); stopping the
// server or shutting down a client wakes every wait. Errors (which name the peer) are for
// the transport only: a service answers a bad request with a reply of its own that says so
// (the feature channel: an encoded error reply as the head, and no body).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/span.h"
#include "runtime/transport/connection.h"

namespace partita::runtime {

// Where one client finds its session, as the service's actor sends it.
struct ChannelOffer {
  std::string host;
  uint16_t port = 0;
  uint64_t token = 0;
  uint32_t client = 0;
};

// A reply as a service builds it. Reused from one request to the next: the vectors keep
// their capacity, so a steady stream of replies stops allocating and faulting in pages.
struct ChannelReply {
  std::vector<char> head;  // the head is head[0, head_length)
  size_t head_length = 0;
  // The body: body_bytes bytes, which the server asks `fill` for piece by piece (each a
  // whole number of body_unit bytes, at most a few hundred KB), into a buffer it sends from
  // while the piece is still in cache. A body gathered from tens of MB of rows thus never
  // goes to memory and back on this side. fill must not throw: check before the head.
  uint64_t body_bytes = 0;
  uint64_t body_unit = 1;
  std::function<void(char* piece, uint64_t offset, uint64_t bytes)> fill;
  std::vector<char> storage;  // for a service's own use (a body built whole)
};

// What a session does with requests. Both are called on the session's thread only and must
// not throw. `answer` answers one request. `refuse` writes the head of a reply refusing a
// request the channel cannot pass on (longer than wire::kMaxRequestBytes), `why` naming
// the length and the limit ("a request of N bytes exceeds the limit of M bytes"); the
// session closes after sending it.
struct ChannelService {
  std::function<void(Span<const char> request, ChannelReply& reply)> answer;
  std::function<void(const std::string& why, ChannelReply& reply)> refuse;
};

class RequestServer {
 public:
  // Sessions listen on `host`. `self` identifies the server in hellos; `deadline` bounds
  // the client's arrival, the rest of a started request and the write of a reply (a slower
  // client is dropped). `name` ("partition 1") prefixes log lines and refusals.
  RequestServer(std::string host, uint32_t self, std::function<ChannelService()> make_service,
                std::chrono::milliseconds deadline, std::string name);
  // Wakes every session (a reply being written is cut off) and joins their threads.
  ~RequestServer();
  RequestServer(const RequestServer&) = delete;
  RequestServer& operator=(const RequestServer&) = delete;

  // A session for one more client: a listener on any free port that accepts the client
  // presenting the offer's token and id, then answers its requests on a thread of its own
  // with a service from make_service. Throws Error when it cannot listen or when 64
  // sessions are open already.
  ChannelOffer open();

  // What one session does once its client's hello was answered, on the calling thread:
  // reads each request frame from `connection`, answers it with `service` and writes the
  // reply, until the client closes the connection between two requests (logged at debug
  // level as `name` ": " ... " left"), or after refusing an oversized request. Throws
  // Error naming the client when the connection breaks or closes inside a frame, TimedOut
  // when the rest of a started request or the write of a reply takes longer than
  // `deadline`, Interrupted once `stop` (may be null) is notified.
  static void answer_requests(Connection& connection, const ChannelService& service,
                              std::chrono::milliseconds deadline, const Wakeup* stop, const std::string& name);

 private:
  struct Session;
  void serve(Session& session, const ChannelService& service);

  std::string host_;
  uint32_t self_;
  std::function<ChannelService()> make_service_;
  std::chrono::milliseconds deadline_;
  std::string name_;
  Wakeup stop_;
  std::mutex mutex_;
  uint32_t next_client_ = 1;
  std::vector<std::unique_ptr<Session>> sessions_;
};

// One client's connection to a RequestServer session. Not thread-safe, except shut_down().
// After any failure the client is unusable: every later call fails naming the first cause.
class RequestClient {
 public:
  // Errors start with `name` ("partition 1: feature channel").
  explicit RequestClient(std::string name) : name_(std::move(name)) {}
  RequestClient(const RequestClient&) = delete;
  RequestClient& operator=(const RequestClient&) = delete;

  // Connects to the offer and checks that the server (`server`: the id it says hello with)
  // answers, within `deadline`. Throws Error naming the peer and the address.
  void open(const ChannelOffer& offer, uint32_t server, std::chrono::milliseconds deadline);
  // Uses `connection`, whose hellos were exchanged (open's, or Connection::adopt's), from
  // here on.
  void attach(Connection connection);

  // Sends one request frame. Throws Error naming the peer if it cannot within `deadline`.
  void send(Span<const char> request, std::chrono::milliseconds deadline);
  // Reads the next reply's head to the start of `head` (grown as needed, never shrunk: a
  // steady stream of replies stops faulting in and zeroing fresh pages), returns its length
  // and sets `body_bytes`. The body must be read next. Throws Error naming the peer when
  // the connection ends or fails, when no whole head arrives within `deadline`, or when a
  // frame exceeds its limit (naming the length and the limit).
  size_t receive_head(std::vector<char>& head, uint64_t& body_bytes, std::chrono::milliseconds deadline);
  // Reads the next `bytes` bytes of the body (at most what is left of it, else Error) to
  // `data`. The body may be read in several pieces; it ends when all of it was read.
  void receive_body(void* data, uint64_t bytes, std::chrono::milliseconds deadline);
  // Reads what is left of the body to the start of `buffer` (grown as needed, never shrunk).
  void receive_body(std::vector<char>& buffer, std::chrono::milliseconds deadline);
  uint64_t body_left() const { return body_due_ ? body_left_ : 0; }
  // Reads the body and drops it: after a head the caller rejects, the stream stays usable.
  void discard_body(std::chrono::milliseconds deadline);
  // Makes every open, send and receive fail at once, now and later. Thread-safe: for
  // stopping a thread blocked in this client.
  void shut_down();

 private:
  [[noreturn]] void fail(const std::string& what, std::chrono::milliseconds deadline);
  void check_usable(bool body_expected, std::chrono::milliseconds deadline);

  std::string name_;
  Wakeup wakeup_;
  Connection connection_;
  std::atomic<bool> shut_{false};
  bool broken_ = false;
  std::string first_failure_;
  uint64_t body_left_ = 0;  // of the reply whose head was read last
  bool body_due_ = false;
};

}  // namespace partita::runtime
