// Multi-hop sampling of one mini-batch across partitions, some co-located (sampled and
// gathered by direct calls into their stores: no message, no copy), the others behind
// partition actors in this or another process. Its batches are those of the
// single-partition NeighborSampler followed by attach_features: every hop goes through the
// same one-hop kernel, split by owner and joined back in frontier order.
#pragma once

#include <caf/fwd.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "actors/protocol.h"
#include "base/span.h"
#include "graph/batch_features.h"
#include "graph/feature_store.h"
#include "graph/frontier_split.h"
#include "graph/mini_batch.h"
#include "graph/partition_book.h"
#include "graph/row_split.h"
#include "graph/subgraph_builder.h"
#include "graph/topology.h"
#include "messages/codec.h"

namespace partita {

// Where one partition lives, as the sampler reaches it.
struct PartitionRef {
  // Co-located: its immutable stores, shared with whoever else reads them.
  std::shared_ptr<const Topology> topology;
  std::shared_ptr<const FeatureStore> features;
  // Otherwise: its actor.
  partition_actor actor;

  static PartitionRef local(std::shared_ptr<const Topology> topology,
                            std::shared_ptr<const FeatureStore> features);
  static PartitionRef remote(partition_actor actor);
  bool is_local() const { return topology != nullptr; }
};

// Not thread-safe: one sampler per thread. Blocks the calling thread while remote
// partitions answer, so call it from a thread of its own, not from inside an actor.
class DistributedSampler {
 public:
  // parts[p] is partition p of `book`. Each remote request must be answered within
  // `deadline` of being sent. Throws UsageError when the parts do not fit the book or the
  // config does not fit a co-located topology.
  DistributedSampler(caf::actor_system& system, PartitionBook book, std::vector<PartitionRef> parts,
                     SamplerConfig config, std::chrono::milliseconds deadline, FeatureNames names = {});
  ~DistributedSampler();
  DistributedSampler(const DistributedSampler&) = delete;
  DistributedSampler& operator=(const DistributedSampler&) = delete;

  // Samples the batch of `seeds` (global ids) and attaches features and labels. Throws
  // Error naming the partition when one does not answer within the deadline, is gone, or
  // answers with an error reply (whose message it includes).
  MiniBatch sample(Span<const int64_t> seeds, const SampleKey& key, Span<const int64_t> seed_times = {});
  // The same, into `batch`, reusing its feature and label buffers: a loop that passes the
  // same batch back avoids faulting in tens of MB of fresh memory per batch.
  void sample_into(Span<const int64_t> seeds, const SampleKey& key, MiniBatch& batch,
                   Span<const int64_t> seed_times = {});

 private:
  // Fills outputs_[p] for every partition with a part of the current hop's frontier.
  void sample_hop_parts(const SampleKey& key, int hop);
  // Gathers node attribute `name` (rows of T) for the ids rows_ was split from into `out`,
  // row after row; returns the row width.
  template <typename T>
  int64_t fetch(const std::string& name, std::vector<T>& out);

  caf::actor_system& system_;
  PartitionBook book_;
  std::vector<PartitionRef> parts_;
  SamplerConfig config_;
  std::chrono::milliseconds deadline_;
  FeatureNames names_;

  SubgraphBuilder builder_;
  FrontierSplit split_;
  RowSplit rows_;
  std::vector<HopOutput> outputs_;
  HopOutput joined_;
  std::vector<std::vector<char>> scratch_;  // co-located parts' gathered rows, reused
  Encoder encoder_;
  uint64_t next_request_id_ = 1;
};

}  // namespace partita
