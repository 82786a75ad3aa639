// The loader behind partita.pyg.NeighborLoader: batches of given seed nodes, sampled by
// the sampler actors (python/sampler_session.h), laid out as PyG's NeighborLoader yields
// them and in the dataset's own node ids.
//
// An epoch's plan is made here, over the seeds' positions in `input_nodes`: shuffled with
// (seed, epoch) and cut into batches (graph/epoch_plan.h, as a trainer's sampler plans its
// split), then handed to the sampler as a plan of its own (protocol.h: link plan), whose
// seeds may live in any partition. Batch b of an epoch is keyed (seed, epoch, b), so it is
// the same batch, in original ids, whatever the number of partitions (DESIGN.md,
// "Partition invariance"); and on a folder of one part, the loader of a split is the
// trainer's epoch of that split, batch for batch.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graph/mini_batch.h"
#include "python/epoch_cursor.h"
#include "python/graph_handle.h"
#include "python/sampler_session.h"

namespace partita::python {

// A batch as Python receives it: each field its own buffer, handed to numpy without a copy.
struct LoadedBatch {
  std::vector<int64_t> n_id;        // original ids; the seeds first
  std::vector<int64_t> edge_index;  // [2, E]: row 0 the message source, row 1 the destination (local)
  std::vector<int64_t> e_id;        // original edge ids
  std::vector<int64_t> input_id;    // each seed's position in input_nodes (empty: not known)
  std::vector<int64_t> num_sampled_nodes;  // per hop, index 0 the seeds (num_hops + 1), as PyG's
  std::vector<int64_t> num_sampled_edges;  // per hop (num_hops), as PyG's
  std::vector<int64_t> batch;       // disjoint: each node's tree; empty otherwise
  // Heterogeneous graphs, as PyG's HeteroData.to_homogeneous() lays them out: each node's
  // and each edge's type (indices into the folder's node and edge types); empty otherwise.
  std::vector<int64_t> node_type, edge_type;
  int64_t batch_size = 0;
  int64_t feature_dim = 0;
  std::vector<float> x;             // [n_id.size(), feature_dim]; empty without features
  std::vector<int64_t> y;           // [n_id.size()]; empty without labels
  // Gives x's buffer back to the sampler once Python has dropped it (graph/buffer_pool.h).
  std::function<void(std::vector<float>&&)> recycle;
};

// The sampler's batch in Python's layout: node and edge ids to original ids, edges as one [2, E].
LoadedBatch loaded_batch(MiniBatch&& batch, const GraphHandle& graph,
                         std::function<void(std::vector<float>&&)> recycle);

struct LoaderOptions {
  SessionOptions session;
  int64_t batch_size = 1;
  bool shuffle = false;
  bool drop_last = false;  // drop an epoch's last, smaller batch
  uint64_t seed = 0;       // of the shuffle and of the neighbour draws
};

class NodeLoader {
 public:
  // `input_nodes`: the seeds, original ids, no id twice. Throws UsageError naming the
  // problem (an id outside the graph, a repeated id, batch_size < 1), RuntimeClosed when
  // the runtime is not running, Error when the actors fail. A heterogeneous graph's batches
  // carry node and edge types (each fanout then applies to every edge type of a node).
  NodeLoader(std::shared_ptr<const GraphHandle> graph, std::vector<int64_t> input_nodes, const LoaderOptions& options);

  // Batches in every epoch.
  int64_t num_batches() const { return num_batches_; }
  int64_t num_inputs() const { return static_cast<int64_t>(input_global_.size()); }

  // Plans epoch `epoch` and hands it to the sampler, which starts sampling at once; what is
  // left of the previous epoch is dropped. Throws as SamplerSession does.
  void start_epoch(uint64_t epoch);
  // The epoch's next batch. Blocks until the sampler has it (call without Python's lock);
  // throws UsageError past the epoch's last batch or before an epoch, and as
  // SamplerSession::next does.
  LoadedBatch next();

  void close() { session_.close(); }

 private:
  std::shared_ptr<const GraphHandle> graph_;
  LoaderOptions options_;
  std::vector<int64_t> input_global_;  // checked before any actor is spawned
  int64_t num_batches_ = 0;
  std::mutex mutex_;  // held by start_epoch and next, while waiting for a batch
  SamplerSession session_;
  EpochCursor epoch_;  // over positions in input_nodes
};

}  // namespace partita::python
