// The feature channel: a partition's feature rows for samplers in other processes, over the
// transport's request channel (runtime/transport/request_channel.h, which says why rows go
// beside CAF, and wire_format.h for the frames).
//
// A request is an encoded feature request (messages/codec.h); a reply's head is an encoded
// rows header, or an error reply naming the problem (with an empty body); the body is the
// rows. What this file adds to the generic channel: offers as the protocol encodes them,
// encoded error replies for requests the channel refuses, and the client side of a batch's
// rows: received in cache-sized pieces and put in place with streaming stores, on a worker
// thread (runtime/transport/worker.h) that reports each batch's fetch to the sampler actor.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "actors/batch_messages.h"
#include "base/span.h"
#include "messages/codec.h"
#include "runtime/transport/request_channel.h"
#include "runtime/transport/worker.h"

namespace partita {

using runtime::ChannelReply;

// Answers one feature request; must not throw (a bad request gets an error reply). One
// handler per session, called on that session's thread only.
using ChannelHandler = std::function<void(Span<const char> request, ChannelReply& reply)>;

// A partition's sessions. See runtime::RequestServer for the contract; a request longer
// than the channel's limit is answered with an encoded error reply (kBadRequest) naming its
// length and the limit.
class ChannelServer {
 public:
  // `self`: the partition, which the server says hello as; `name` ("partition 1").
  ChannelServer(std::string host, uint32_t self, std::function<ChannelHandler()> make_handler,
                std::chrono::milliseconds deadline, std::string name);

  // A session for one more client. Throws Error when it cannot listen or too many sessions
  // are open.
  DecodedChannelOffer open();

 private:
  runtime::RequestServer server_;
};

// One client's connection to a partition's session; errors start with "<name>: feature
// channel". See runtime::RequestClient.
class ChannelClient : public runtime::RequestClient {
 public:
  explicit ChannelClient(const std::string& name) : RequestClient(name + ": feature channel") {}
  using RequestClient::open;
  // Connects to the offer of partition `server`.
  void open(const DecodedChannelOffer& offer, uint32_t server, std::chrono::milliseconds deadline);
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
  // Optional, run on the channel's thread: `prepare` before the requests go out (it may
  // encode or narrow them, or drop both: a cache lookup that found every row), `finish`
  // once every row landed. Either may throw Error: the fetch's error.
  std::function<void(ChannelFetch&)> prepare, finish;
  std::vector<char> requests[2];
  bool asked[2] = {false, false};
  uint64_t ids[2] = {0, 0};
  RowsTarget targets[2];
  RowsScratch scratch;  // reused: its buffers keep their pages across batches
  std::string error;
  std::atomic<bool> reported{false};
};

// A feature channel's exchanges, on a runtime::Worker so that an actor never blocks: it
// connects, then runs the fetches in order, calling `report` (on its thread) with 0 once
// the connection is up or failed and with each fetch's tag once that fetch is done.
class ChannelWorker {
 public:
  ChannelWorker(int part, DecodedChannelOffer offer, std::chrono::milliseconds deadline,
                std::function<void(uint64_t tag)> report);
  // Interrupts whatever the thread waits for and joins it; queued fetches are dropped.
  ~ChannelWorker() = default;
  ChannelWorker(const ChannelWorker&) = delete;
  ChannelWorker& operator=(const ChannelWorker&) = delete;

  // Queues `fetch`, reported as `tag` (not 0: the connection's).
  void submit(uint64_t tag, ChannelFetch* fetch);

  // Once the connection was reported: why it failed, "" if it is up. A forged report
  // finds connected() false.
  bool connected() const { return connect_reported_; }
  std::string failure() const;

 private:
  void fetch(ChannelFetch& fetch);

  const int part_;
  ChannelClient client_;
  const std::chrono::milliseconds deadline_;
  mutable std::mutex mutex_;
  std::string failure_;
  std::atomic<bool> connect_reported_{false};
  runtime::Worker worker_;  // last: stopped before the rest goes
};

}  // namespace partita
