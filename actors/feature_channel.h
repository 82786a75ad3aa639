// The feature channel: request/reply frames over a runtime::BulkChannel, which carry
// feature replies between processes beside CAF.
//
// Why: CAF 0.17's middleman copies a message's bytes into its write buffer on the sender
// and out of its read buffer into a fresh vector on the receiver, in one multiplexer thread
// per process. For tens of MB of features per batch those copies (and the fresh pages) cost
// more than the kernel's own loopback copies (BENCHMARKS.md, "Distributed mini-batches").
// Over a channel a reply is a small head (an encoded message) and a raw body: the server
// gathers the rows in pieces that the kernel sends while they are still in cache, and the
// client reads pieces into a cached buffer and copies their rows to where they go in the
// batch; no reply is ever whole in memory on either side. Setting up stays with CAF
// messages: a partition actor answers a channel request with a ChannelOffer for one
// client (a listener, a token and the client's id).
//
// Frames, each a little-endian u64 byte count and that many bytes: a request is one frame
// (an encoded message, messages/codec.h); a reply is two, its head (an encoded message)
// and its body (raw, possibly empty). Replies come in request order. Every wait has a
// deadline, except a session's wait for its client's next request (an idle sampler is
// fine); stopping the server or shutting down a client wakes every wait.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "actors/batch_messages.h"
#include "base/span.h"
#include "messages/codec.h"
#include "runtime/bulk_channel.h"

namespace partita {

// Largest frames: a request, a reply's head, a reply's body (at most 1 GiB of rows).
constexpr uint64_t kMaxChannelRequestBytes = uint64_t{256} << 20;
constexpr uint64_t kMaxChannelHeadBytes = uint64_t{16} << 20;
constexpr uint64_t kMaxChannelBodyBytes = uint64_t{1} << 30;

// A reply as a handler builds it. Reused from one request to the next: the vectors keep
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
  std::vector<char> storage;  // for a handler's own use (a body built whole)
};

// Answers one request; must not throw (a bad request gets an error reply). One handler per
// session, called on that session's thread only.
using ChannelHandler = std::function<void(Span<const char> request, ChannelReply& reply)>;

class ChannelServer {
 public:
  // Sessions listen on `host`. `self` identifies the server in hellos (its partition);
  // `deadline` bounds the client's arrival, the rest of a started request and the write of
  // a reply (a slower client is dropped). `name` ("partition 1") prefixes log lines.
  ChannelServer(std::string host, uint32_t self, std::function<ChannelHandler()> make_handler,
                std::chrono::milliseconds deadline, std::string name);
  // Wakes every session (a reply being written is cut off) and joins their threads.
  ~ChannelServer();
  ChannelServer(const ChannelServer&) = delete;
  ChannelServer& operator=(const ChannelServer&) = delete;

  // A session for one more client: a listener on any free port that accepts the client
  // presenting the offer's token and id, then answers its requests on a thread of its own
  // with a handler from make_handler. Throws Error when it cannot listen or too many
  // sessions are open.
  DecodedChannelOffer open();

 private:
  struct Session;
  void serve(Session& session, ChannelHandler handler);

  std::string host_;
  uint32_t self_;
  std::function<ChannelHandler()> make_handler_;
  std::chrono::milliseconds deadline_;
  std::string name_;
  runtime::Wakeup stop_;
  std::mutex mutex_;
  uint32_t next_client_ = 1;
  std::vector<std::unique_ptr<Session>> sessions_;
};

// One client's connection to a ChannelServer session. Not thread-safe, except shut_down().
class ChannelClient {
 public:
  // Errors name `name` ("partition 1").
  explicit ChannelClient(std::string name) : name_(std::move(name)) {}
  ChannelClient(const ChannelClient&) = delete;
  ChannelClient& operator=(const ChannelClient&) = delete;

  // Connects to the offer and checks that the server (`server`, its partition) answers,
  // within `deadline`. Throws Error naming the peer and the address.
  void open(const DecodedChannelOffer& offer, uint32_t server, std::chrono::milliseconds deadline);

  // Sends one request frame. Throws Error naming the peer if it cannot within `deadline`.
  void send(Span<const char> request, std::chrono::milliseconds deadline);
  // Reads the next reply's head to the start of `head` (grown as needed, never shrunk: a
  // steady stream of replies stops faulting in and zeroing fresh pages), returns its length
  // and sets `body_bytes`. The body must be read next, with one receive_body. Throws Error
  // naming the peer when the connection ends or fails, when no whole head arrives within
  // `deadline`, or when a frame exceeds its limit. After any failure the client is unusable.
  size_t receive_head(std::vector<char>& head, uint64_t& body_bytes, std::chrono::milliseconds deadline);
  // Reads the next `bytes` bytes of the body (at most what is left of it, else Error) to
  // `data`. The body may come in several pieces; it ends when all of it was read.
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

  std::string name_;
  runtime::Wakeup wakeup_;
  runtime::BulkChannel channel_;
  std::atomic<bool> shut_{false};
  bool broken_ = false;
  std::string first_failure_;
  uint64_t body_left_ = 0;  // of the reply whose head was read last
  bool body_due_ = false;
};

// Buffers for receiving rows, reused from one reply to the next.
struct RowsScratch {
  std::vector<char> head;
  std::vector<char> body;
};

// The head of the next reply (a rows header, or an error reply), in scratch.head.
Span<const char> receive_rows_head(ChannelClient& client, RowsScratch& scratch, uint64_t& body_bytes,
                                   std::chrono::milliseconds deadline);
// The rows of that reply, for a target its head was checked against (check_rows_header),
// put in place: read in pieces that stay in cache (scratch.body), each copied to its rows
// by streaming stores. (Measured on loopback against having the kernel write each row to
// its place with a scattered read: slightly less CPU, and no buffer the size of a reply.)
void receive_rows_body(ChannelClient& client, const RowsTarget& target, RowsScratch& scratch,
                       std::chrono::milliseconds deadline);

// One part's rows of one batch over a feature channel. The channel's thread owns it from
// submit() until it sets `reported`, and writes the rows into the batch through its
// targets meanwhile (rows no one else touches); the actor reads it after seeing that flag
// (which a forged report therefore cannot fake).
struct ChannelFetch {
  std::vector<char> requests[2];
  bool asked[2] = {false, false};
  uint64_t ids[2] = {0, 0};
  RowsTarget targets[2];
  RowsScratch scratch;  // reused: its buffers keep their pages across batches
  std::string error;
  std::atomic<bool> reported{false};
};

// A feature channel's exchanges, on a thread of their own so that an actor never blocks:
// it connects, then runs the fetches in order, calling `report` (on its thread) with 0 once
// the connection is up or failed and with each fetch's job once that fetch is done.
class ChannelWorker {
 public:
  ChannelWorker(int part, DecodedChannelOffer offer, std::chrono::milliseconds deadline,
                std::function<void(uint64_t job)> report)
      : part_(part), client_(part_name(part)), deadline_(deadline), report_(std::move(report)) {
    thread_ = std::thread([this, offer = std::move(offer)] { run(offer); });
  }
  // Interrupts whatever the thread waits for and joins it; queued fetches are dropped.
  ~ChannelWorker() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    client_.shut_down();
    wake_.notify_all();
    thread_.join();
  }
  ChannelWorker(const ChannelWorker&) = delete;
  ChannelWorker& operator=(const ChannelWorker&) = delete;

  void submit(uint64_t job, ChannelFetch* fetch) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.emplace_back(job, fetch);
    }
    wake_.notify_one();
  }

  // Once the connection was reported: why it failed, "" if it is up. A forged report
  // finds connected() false.
  bool connected() const { return connect_reported_; }
  std::string failure() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return failure_;
  }

 private:
  void run(const DecodedChannelOffer& offer) {
    std::string failure;
    try {
      client_.open(offer, static_cast<uint32_t>(part_), deadline_);
    } catch (const Error& e) {
      failure = e.what();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      failure_ = failure;
    }
    connect_reported_ = true;
    report(0);
    for (;;) {
      std::pair<uint64_t, ChannelFetch*> task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (stopping_) return;
        task = queue_.front();
        queue_.pop_front();
      }
      ChannelFetch& fetch = *task.second;
      fetch.error.clear();
      try {
        if (!failure.empty()) throw Error(failure);
        // Both requests go out before either reply is read: the partition answers them
        // back to back.
        for (int k = 0; k < 2; ++k) {
          if (fetch.asked[k]) client_.send(fetch.requests[k], deadline_);
        }
        for (int k = 0; k < 2; ++k) {
          if (!fetch.asked[k]) continue;
          uint64_t body_bytes = 0;
          Span<const char> head = receive_rows_head(client_, fetch.scratch, body_bytes, deadline_);
          try {
            check_rows_header(fetch.targets[k], fetch.ids[k], head, body_bytes);
          } catch (const Error&) {
            client_.discard_body(deadline_);  // the channel stays in step for later batches
            throw;
          }
          receive_rows_body(client_, fetch.targets[k], fetch.scratch, deadline_);
        }
      } catch (const Error& e) {
        fetch.error = e.what();
      }
      fetch.reported = true;
      report(task.first);
    }
  }

  void report(uint64_t job) { report_(job); }

  const int part_;
  ChannelClient client_;
  const std::chrono::milliseconds deadline_;
  const std::function<void(uint64_t)> report_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::pair<uint64_t, ChannelFetch*>> queue_;
  std::string failure_;
  std::atomic<bool> connect_reported_{false};
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace partita
