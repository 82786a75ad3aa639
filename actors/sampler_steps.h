// The steps of sampling one mini-batch across partitions, without any waiting: the core
// that both samplers drive. DistributedSampler (distributed_sampler.h) runs them on a
// thread and blocks for the remote answers; the sampler actor (sampler_actor.h) runs them
// as the answers arrive, with several batches in flight. Either way the batch is the one
// the single-partition NeighborSampler and attach_features give: every hop goes through
// the same one-hop kernel, split by owner and joined back in frontier order.
//
//   start -> [ per hop: hop_needs / sample_local | hop_request ... take_hop_reply;
//              finish_hop ] -> start_rows -> rows_of / gather_local | feature_request ...
//              take_feature_reply (a message) or rows_target (a channel) -> finish
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "actors/partition_actor.h"
#include "base/span.h"
#include "graph/batch_features.h"
#include "graph/feature_store.h"
#include "graph/frontier_split.h"
#include "graph/mini_batch.h"
#include "graph/partition_book.h"
#include "graph/subgraph_builder.h"
#include "graph/topology.h"
#include "messages/codec.h"

namespace partita {

// "partition 3", the way every error names a partition.
std::string part_name(int part);

// Which node attribute a feature request or reply is about.
enum class Rows { kX, kY };

// Where one partition's rows of one attribute go in a batch: row k of the part's reply
// lands at row positions[k] of base. Stays valid (and only the part's own rows are written
// through it) until the assembly finishes the batch, so another thread may fill it while
// the assembly's thread gathers other parts.
struct RowsTarget {
  int part = 0;
  Rows rows = Rows::kX;
  char* base = nullptr;
  size_t row_bytes = 0;
  DType dtype = DType::kFloat32;
  Span<const int64_t> positions;
  uint64_t bytes() const { return positions.size() * row_bytes; }
};

// Checks the head of a channel reply for `target` (its request id, and rows of the dtype,
// count and width the target expects): Error naming the partition (a RemoteError's message
// when the head is an error reply).
void check_rows_header(const RowsTarget& target, uint64_t request_id, Span<const char> head, uint64_t body_bytes);
// Copies the target's rows [first, first + count), contiguous at `rows`, to their places.
void place_rows(const RowsTarget& target, const char* rows, size_t first, size_t count);

// Not thread-safe; one per batch in flight. Every method that takes a remote answer
// validates it and throws Error naming the partition.
class BatchAssembly {
 public:
  // local[p] holds partition p's stores when it is co-located (nullptrs when it is behind
  // an actor). Throws UsageError when a
  // co-located part does not fit the book or the config.
  BatchAssembly(const PartitionBook& book, const SamplerConfig& config, const FeatureNames& names,
                std::vector<PartitionStores> local);

  int num_parts() const { return static_cast<int>(local_.size()); }
  bool is_local(int part) const { return local_[part].topology != nullptr; }

  // Starts the batch of `seeds` into `batch`, whose feature and label buffers are kept:
  // pages already mapped are cheaper than fresh ones (tens of MB per batch).
  void start(Span<const int64_t> seeds, const SampleKey& key, MiniBatch batch,
             Span<const int64_t> seed_times = {});
  const SampleKey& key() const { return key_; }

  // Hops. While sampling(), hop() is the current hop; each part with frontier nodes
  // (hop_needs) is sampled by sample_local (co-located) or answers hop_request; once every
  // such part is done, finish_hop merges them and moves on.
  bool sampling() const { return hop_ < config_.num_hops(); }
  int hop() const { return hop_; }
  bool hop_needs(int part) const { return !split_.empty(part); }
  void sample_local(int part);
  void hop_request(int part, uint64_t request_id, Encoder& encoder, std::vector<char>& out) const;
  void take_hop_reply(int part, uint64_t request_id, Span<const char> reply);
  void finish_hop();

  // Rows. After the last hop, start_rows builds the batch and splits its nodes by owner;
  // each owning part (rows_of non-empty) is gathered by gather_local or answers
  // feature_request for each Rows the batch wants.
  void start_rows();
  bool wants(Rows rows) const { return !(rows == Rows::kX ? names_.x : names_.y).empty(); }
  Span<const int64_t> rows_of(int part) const { return Span<const int64_t>(row_ids_[part]); }
  void gather_local(int part);
  void feature_request(int part, Rows rows, uint64_t request_id, Encoder& encoder, std::vector<char>& out) const;
  // Places the rows of a feature reply; returns their bytes.
  size_t take_feature_reply(int part, Rows rows, uint64_t request_id, Span<const char> reply);
  // For rows that arrive raw (a feature channel): where the part's rows go. Requires their
  // width: known from a co-located part, or given by set_width.
  RowsTarget rows_target(int part, Rows rows);
  bool width_known(Rows rows) const { return widths_[static_cast<int>(rows)] >= 0; }
  // Sizes the attribute's rows to `width` values when not known yet; throws Error naming
  // `part` when they are known and differ.
  void set_width(int part, Rows rows, int64_t width) { size_rows(rows, part, width); }

  // The finished batch (features and labels attached); the assembly is ready to start again.
  MiniBatch finish();

 private:
  // Sizes x (y) once the row width is known: from a co-located store or the first reply.
  void size_rows(Rows rows, int part, int64_t width);

  PartitionBook book_;
  SamplerConfig config_;
  FeatureNames names_;
  std::vector<PartitionStores> local_;

  SampleKey key_;
  int hop_ = 0;
  SubgraphBuilder builder_;
  FrontierSplit split_;
  std::vector<HopOutput> outputs_;
  HopOutput joined_;
  MiniBatch batch_;
  MiniBatch recycled_;  // the caller's buffers, until the batch is built
  // The batch's nodes by owner: their ids and their positions in node_ids.
  std::vector<std::vector<int64_t>> row_ids_, row_positions_;
  int64_t widths_[2] = {-1, -1};  // of x and y, -1 until known
};

}  // namespace partita
