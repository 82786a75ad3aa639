// A trainer's view of a sharded embedding table (embeddings/embedding_shard.h): reads rows by
// global id from their owners and pushes a step's gradients back to them. A shard in the
// trainer's process is called directly; one in another process through a request-channel
// session that its actor offers, with the frames of runtime/transport/wire_format.h
// (section 5). Every wait has a deadline; errors name the shard.
#pragma once

#include <caf/fwd.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/span.h"
#include "embeddings/embedding_shard.h"
#include "graph/partition_book.h"
#include "runtime/transport/request_channel.h"

namespace partita {

class ShardedEmbedding {
 public:
  // shards[p]: the actor of partition p's shard; run_key finds those in this process.
  // Connects to the others now. Throws Error naming the shard that cannot be reached.
  ShardedEmbedding(caf::actor_system& system, const PartitionBook& book, std::vector<caf::actor> shards,
                   const std::string& run_key, int trainer, int64_t dim, std::chrono::milliseconds deadline);
  ~ShardedEmbedding();

  int64_t dim() const { return dim_; }
  const PartitionBook& book() const { return book_; }

  // The rows of `ids` (sorted, unique global ids) into out[i * dim, ...).
  void read(Span<const int64_t> ids, float* out);
  // Rows [first, last) of partition `part`'s ids, once its shard has no pending step.
  void read_range(int part, int64_t first, int64_t last, float* out);
  // This trainer's step: grads[i * dim, ...) for ids[i] (sorted, unique), sent to every
  // shard (an empty push to those it touched none of: each shard counts every trainer's
  // step).
  void push(Span<const int64_t> ids, Span<const float> grads);
  // Overwrites the rows of `ids` (sorted, unique) with values[i * dim, ...) at their owners
  // (EmbeddingShard::write: a computed table, such as a GNN encoder's outputs).
  void write(Span<const int64_t> ids, Span<const float> values);

 private:
  struct Remote;
  // Sends one request to remote shard p and reads its reply's head; throws the shard's error.
  uint64_t exchange(int part, const shard_wire::RequestHead& head, Span<const int64_t> ids, Span<const float> grads);

  PartitionBook book_;
  int trainer_;
  int64_t dim_;
  std::chrono::milliseconds deadline_;
  std::vector<std::shared_ptr<EmbeddingShard>> local_;  // per part, or null
  std::vector<std::unique_ptr<Remote>> remote_;         // per part, or null
};

}  // namespace partita
