// Assembling one mini-batch from partitions, as pure steps with no messages: split each
// hop's frontier by owner, sample the co-located parts, merge every part's answer in
// frontier order (deduplicate, relabel), then split the batch's nodes by owner and place
// each part's rows where its nodes are. pyg-lib keeps its distributed steps pure the same
// way. A caller drives the steps and moves the answers of remote parts however it likes:
// the sampler actor with asynchronous messages and feature channels (actors/
// batch_messages.h holds that glue), with several batches in flight. Whoever drives it,
// the batch is the one the single-partition NeighborSampler and attach_features give:
// every hop goes through the same one-hop kernel and merge step.
//
//   start -> [ per hop: hop_needs / sample_local | hop_input -> hop_output ...;
//              finish_hop ] -> start_rows -> rows_of / gather_local | rows_target ...
//              -> finish
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/span.h"
#include "graph/batch_features.h"
#include "graph/frontier_split.h"
#include "graph/hop_sampler.h"
#include "graph/link_sampler.h"
#include "graph/mini_batch.h"
#include "graph/partition_book.h"
#include "graph/row_split.h"
#include "graph/stores.h"
#include "graph/subgraph_builder.h"

namespace partita {

// Which node attribute rows are about.
enum class Rows { kX, kY };
const char* rows_name(Rows rows);  // "x", "y"

// Where one partition's rows of one attribute go in a batch: row k of the part's answer
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

// Copies the target's rows [first, first + count), contiguous at `rows`, to their places.
void place_rows(const RowsTarget& target, const char* rows, size_t first, size_t count);

// Not thread-safe; one per batch in flight. Every step that takes a part's answer
// validates it and throws Error naming the partition.
class BatchAssembly {
 public:
  // local[p] holds partition p's stores when it is co-located (nullptrs when it is
  // reached otherwise). Throws UsageError when a co-located part does not fit the book or
  // the config.
  BatchAssembly(const PartitionBook& book, const SamplerConfig& config, const FeatureNames& names,
                std::vector<PartitionStores> local);

  int num_parts() const { return static_cast<int>(local_.size()); }
  bool is_local(int part) const { return local_[part].topology != nullptr; }
  const SamplerConfig& config() const { return config_; }
  const FeatureNames& names() const { return names_; }

  // Starts the batch of `seeds` into `batch`, whose feature and label buffers are kept and
  // refilled: pages already mapped are cheaper than fresh ones (tens of MB per batch).
  void start(Span<const int64_t> seeds, const SampleKey& key, MiniBatch batch, Span<const int64_t> seed_times = {});
  const SampleKey& key() const { return key_; }
  // Link batches: every hop of the batch started last leaves out the edges src[i] ->
  // dst[i] and dst[i] -> src[i] (global ids; GraphBolt's exclude_seed_edges with their
  // reverses), so that a model cannot read a positive off its own subgraph. Call after
  // start; the next start clears it.
  void exclude_edges(Span<const int64_t> src, Span<const int64_t> dst);

  // Hops. While sampling(), hop() is the current hop; each part with frontier nodes
  // (hop_needs) is sampled by sample_local (co-located) or gets hop_input and has its
  // answer written to hop_output; once every such part is done, finish_hop validates and
  // merges them and moves on.
  bool sampling() const { return hop_ < config_.num_hops(); }
  int hop() const { return hop_; }
  bool hop_needs(int part) const { return !split_.empty(part); }
  void sample_local(int part);
  HopInput hop_input(int part) const { return split_.input(part); }
  HopOutput& hop_output(int part) { return outputs_[part]; }
  void finish_hop();

  // Rows. After the last hop, start_rows builds the batch and splits its nodes by owner;
  // each owning part (rows_of non-empty) is gathered by gather_local or has its rows
  // placed through rows_target, for each Rows the batch wants.
  void start_rows();
  bool wants(Rows rows) const { return !name_of(rows).empty(); }
  const std::string& name_of(Rows rows) const { return rows == Rows::kX ? names_.x : names_.y; }
  Span<const int64_t> rows_of(int part) const { return rows_.ids(part); }
  // Where those rows go: rows_of(part)[k] is the batch's row positions_of(part)[k].
  Span<const int64_t> positions_of(int part) const { return rows_.positions(part); }
  void gather_local(int part);
  // Where the part's rows go. Requires their width: known from a co-located part, or
  // given by set_width.
  RowsTarget rows_target(int part, Rows rows);
  bool width_known(Rows rows) const { return widths_[static_cast<int>(rows)] >= 0; }
  // Sizes the attribute's rows to `width` values when not known yet; throws Error naming
  // `part` when they are known and differ.
  void set_width(int part, Rows rows, int64_t width) { size_rows(rows, part, width); }

  // The finished batch (features and labels attached); the assembly is ready to start again.
  MiniBatch finish();

 private:
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
  SeedEdgeFilter excluded_;
  MiniBatch batch_;
  MiniBatch recycled_;  // the caller's buffers, until the batch is built
  RowSplit rows_;       // the batch's nodes by owner
  int64_t widths_[2] = {-1, -1};  // of x and y, -1 until known
};

}  // namespace partita
