// The sampler actor: the mini-batches of one trainer, built without blocking a thread.
//
// Placed with its partition (on the same daemon), it samples that partition by direct calls
// into its immutable stores, sends one asynchronous hop request per other partition and
// merges exactly as the single-partition sampler does (graph/batch_assembly.h); then it gathers
// its own rows directly and fetches the others' by owner: over their feature channels for
// partitions in other processes (one I/O thread per channel, so the actor never waits), by
// message otherwise. Several batches are in flight at once, so one batch's remote waits
// overlap another's local work. See protocol.h (sampler_actor) for its messages.
//
// It is the one sampling pipeline: trainers take their training and evaluation batches
// from it (epoch, then next), and so do the benchmarks. In one process a batch reaches its
// consumer by move (messages/sampled_batch.h); Cap'n Proto only between processes.
//
// With a cache of other partitions' rows (graph/row_cache.h), the rows of partitions in
// other processes are looked up there first: hits land in the batch at once, and only the
// misses are requested over the channel (then offered to the cache). Batches are the same
// bytes with and without it.
//
// Every remote request has the deadline; a lost partition (a down message, a broken
// channel) fails the batches in flight at once, naming it, and every later one too.
#pragma once

#include <caf/fwd.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "actors/protocol.h"
#include "graph/batch_features.h"
#include "graph/hop_sampler.h"
#include "graph/partition_book.h"
#include "graph/row_cache.h"
#include "graph/stores.h"

namespace partita {

// The seeds a sampler serves, by split: global ids of nodes its partition owns (a
// trainer's share of the partition's training, validation and test nodes).
struct SamplerSeeds {
  std::vector<int64_t> train, val, test;
  // The split named "train", "val" or "test"; nullptr for any other name.
  const std::vector<int64_t>* of(const std::string& split) const {
    return split == "train" ? &train : split == "val" ? &val : split == "test" ? &test : nullptr;
  }
};

// Rows a sampler requested from partitions in other processes, and their bytes (over
// feature channels, cache misses only), and the batches whose rows it gathered.
struct RemoteRowCounts {
  std::atomic<uint64_t> rows{0};
  std::atomic<uint64_t> bytes{0};
  std::atomic<uint64_t> batches{0};
};

struct SamplerOptions {
  SamplerConfig config;
  FeatureNames names;
  std::chrono::milliseconds deadline{60000};  // for every remote request
  // Batches in flight at once, and sampled ahead of the trainer's next messages, at most.
  int prefetch = 2;
  // The node's cache of other partitions' rows, shared by its samplers; null: none. Its
  // columns are the batch's wanted attributes, x then y (checked when spawning).
  std::shared_ptr<RowCache> cache;
  // Counted into when given.
  std::shared_ptr<RemoteRowCounts> remote_counts;
};

// Spawns the sampler of partition `part` of `book`, which reads `stores` (that partition)
// directly and samples batches of `seeds`. Throws UsageError when the stores do not fit
// the book or the config, a seed is not the partition's, prefetch is below 1, or the
// cache's columns are not the batch's.
sampler_actor spawn_sampler_actor(caf::actor_system& system, PartitionBook book, int part, PartitionStores stores,
                                  SamplerSeeds seeds, SamplerOptions options);

}  // namespace partita
