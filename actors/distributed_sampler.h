// Multi-hop sampling of one mini-batch across partitions, some co-located (sampled and
// gathered by direct calls into their stores: no message, no copy), the others behind
// partition actors in this or another process. Its batches are those of the
// single-partition NeighborSampler followed by attach_features (sampler_steps.h). Rows from
// a partition in another process come over its feature channel (feature_channel.h), opened
// at the first batch that needs them; everything else is CAF messages.
#pragma once

#include <caf/fwd.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "actors/feature_channel.h"
#include "actors/protocol.h"
#include "actors/sampler_steps.h"
#include "base/span.h"
#include "graph/batch_features.h"
#include "graph/feature_store.h"
#include "graph/mini_batch.h"
#include "graph/partition_book.h"
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
  // One hop of the current batch: remote parts by message, co-located ones meanwhile.
  void sample_hop_parts();
  // The rows of the current batch: remote parts by channel or message, co-located ones
  // meanwhile.
  void fetch_rows();
  ChannelClient& channel(int part);
  // Runs `use` on part's channel; a failure closes the channel before it propagates.
  template <typename Use>
  void on_channel(int part, Use use);

  caf::actor_system& system_;
  std::vector<PartitionRef> parts_;
  std::vector<bool> other_process_;  // parts_[p] is an actor of another node
  std::chrono::milliseconds deadline_;
  BatchAssembly assembly_;
  Encoder encoder_;
  uint64_t next_request_id_ = 1;
  std::vector<std::unique_ptr<ChannelClient>> channels_;  // opened on first use
  RowsScratch scratch_;
};

}  // namespace partita
