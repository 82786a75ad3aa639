// The sampler actor's insides, shared by its three files and private to them: its
// interface with the messages it sends itself, the state of its batches in flight and of
// its partitions, and the steps its behaviours call. sampler_actor.cpp holds the phases
// (unwired, wiring, ready: behaviours switched with `become`), sampler_wiring.cpp the
// partitions (actors, channels, direct connections, losses), sampler_pipeline.cpp the
// epochs and the batches in flight. Nothing else includes this header.
#pragma once

#include <caf/all.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/feature_channel.h"
#include "actors/protocol.h"
#include "actors/sampler_actor.h"
#include "graph/batch_assembly.h"
#include "graph/buffer_pool.h"
#include "graph/epoch_plan.h"
#include "messages/codec.h"
#include "messages/sampled_batch.h"
#include "runtime/address.h"

namespace partita::sampler_internal {

using io_done_atom = caf::atom_constant<caf::atom("p_iodone")>;
using resume_atom = caf::atom_constant<caf::atom("p_resume")>;

// The actor's own interface: the protocol, plus what it tells itself. A channel thread
// reports an exchange with (io_done, flight, part) (flight 0: the channel's connection); a
// finished batch makes the actor send itself (resume) to start the next ones, so that a
// run of batches that need no remote answer still lets the mailbox in between.
using sampler_impl =
    sampler_actor::extend<caf::reacts_to<io_done_atom, uint64_t, int32_t>, caf::reacts_to<resume_atom>>;

// The attributes a batch holds rows of.
constexpr Rows kRows[] = {Rows::kX, Rows::kY};

// One part's rows of a batch that go through the node's cache, on the channel's thread:
// the batch's columns, then the misses (indices into rows_of(part), and their ids and batch
// positions) as requested over the channel, with an encoder of that thread's own.
struct CacheMisses {
  std::vector<CacheColumn> columns;
  std::vector<size_t> which;
  std::vector<int64_t> ids, positions;
  Encoder encoder;
};

// One batch being sampled.
struct BatchInFlight {
  BatchInFlight(const PartitionBook& book, const SamplerOptions& options, std::vector<PartitionStores> local)
      : assembly(book, options.config, options.names, std::move(local)),
        fetches(book.num_parts()),
        misses(book.num_parts()) {}
  uint64_t id = 0;
  uint64_t generation = 0;  // of the epoch it belongs to
  int64_t batch = -1;
  BatchAssembly assembly;
  int pending = 0;         // answers the current step awaits
  int io_outstanding = 0;  // fetches with channel threads, not yet reported
  bool dead = false;       // failed or discarded: kept only until its fetches come back
  std::vector<ChannelFetch> fetches;  // by part
  std::vector<CacheMisses> misses;    // by part, when the node has a cache
};

struct Part {
  partition_actor actor;
  bool other_process = false;
  std::unique_ptr<ChannelWorker> channel;
  bool connection_reported = false;
  std::string lost;  // why the partition is gone; "" while it is there
};

struct SamplerState {
  PartitionBook book;
  int part = 0;
  PartitionStores stores;
  SamplerSeeds seeds;
  SamplerOptions options;

  Encoder encoder;
  uint64_t next_request_id = 1;
  uint64_t next_flight_id = 1;  // 0 is the channels' connection report

  // Wiring: the partitions message, answered once every channel is connected.
  int connecting = 0;
  std::string wiring_failure;
  std::optional<caf::typed_response_promise<Encoded>> wiring;

  // The epoch: batches are started in plan order, at most `prefetch` beyond those claimed
  // by next messages and at most `prefetch` at once (the backpressure bound: CAF has none
  // of its own, and an unbounded queue of mini-batches exhausts memory).
  std::optional<EpochPlan> plan;
  uint64_t generation = 0;
  int64_t next_to_start = 0;
  int64_t claimed = 0;
  int live = 0;  // batches in flight, not dead
  std::map<int64_t, SampledBatch> ready;
  std::map<int64_t, caf::typed_response_promise<SampledBatch>> waiting;
  std::string failure;  // the first failed batch of the epoch, and why; later ones fail too
  int64_t failed_batch = -1;
  bool resume_pending = false;

  // Feature buffers, back from the consumers in this process: a few per batch in flight.
  std::shared_ptr<BufferPool> pool;
  std::map<uint64_t, std::unique_ptr<BatchInFlight>> flights;  // live and dead
  std::vector<std::unique_ptr<BatchInFlight>> spare_flights;
  // Last: destroyed first, so the channel threads are joined before the flights they fill.
  std::vector<Part> parts;

  static inline const char* name = "partita.sampler";
};

using Pointer = sampler_impl::stateful_pointer<SamplerState>;


// -- Replies (sampler_actor.cpp) ------------------------------------------------------------
Encoded error_reply(SamplerState& s, WireErrorCode code, const std::string& message);
Encoded ack(SamplerState& s, int64_t num_batches);
// Why a request failed: its deadline, or what CAF says.
std::string request_failure(caf::actor_system& system, const caf::error& e, std::chrono::milliseconds deadline);

// -- Phases (sampler_actor.cpp) -------------------------------------------------------------
sampler_impl::behavior_type wiring(Pointer self);
sampler_impl::behavior_type ready(Pointer self);

// -- Partitions (sampler_wiring.cpp) --------------------------------------------------------
// Validates the partitions message, then monitors the actors, asks those in other
// processes for their feature channels and connects to their nodes; moves on to `wiring`
// (answered once every connection reported) or straight to `ready`.
caf::result<Encoded> on_partitions(Pointer self, const std::vector<caf::actor>& actors,
                                   const std::vector<std::string>& addresses);
// A channel's connection report (io_done with flight 0).
void on_channel_connected(Pointer self, int32_t part);
// Answers the partitions message once nothing is connecting any more, and moves to `ready`.
void finish_wiring_if_done(Pointer self);
// A partition actor went down: it is lost, and so is the epoch if batches need it.
void on_down(Pointer self, const caf::down_msg& msg);
// Throws the reason partition `part` is gone, if it is.
void check_not_lost(const SamplerState& s, int part);

// -- Epochs and batches (sampler_pipeline.cpp) ----------------------------------------------
Encoded on_epoch(Pointer self, const std::string& split, uint64_t plan_seed, uint64_t epoch, int64_t batch_size,
                 bool shuffle);
// A trainer's own plan (protocol.h, link plan): validated against the book, then as on_epoch.
Encoded on_link_plan(Pointer self, const Encoded& plan);
caf::result<SampledBatch> on_next(Pointer self);
// A channel fetch's report (io_done with a flight).
void on_fetch_done(Pointer self, uint64_t flight_id, int32_t part);
// Starts batches up to the prefetch bound.
void top_up(Pointer self);
// Fails the epoch from `batch` on, naming why, and every batch in flight with it.
void fail_epoch(Pointer self, int64_t batch, const std::string& message);
// Every consumer waiting for a batch is told `why` (the sampler is stopping).
void release_waiting(SamplerState& s, const std::string& why);

}  // namespace partita::sampler_internal
