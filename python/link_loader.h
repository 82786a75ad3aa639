// The loader behind partita.pyg.LinkNeighborLoader: batches of given edges (the
// "positives", in the dataset's own node ids), their negatives, and the sampled
// neighbourhood of every end, laid out as PyG's LinkNeighborLoader yields them.
//
// An epoch shuffles the positives' positions with (seed, epoch) and cuts them into batches
// (graph/epoch_plan.h, as NodeLoader does); batch b's negatives are drawn keyed by (seed,
// epoch, b) as original node ids. So a batch — positives, negatives and subgraph — is the
// same whatever the number of partitions (DESIGN.md, "Partition invariance"). Its seeds go
// to the sampler as one link plan (protocol.h) in PyG's order:
//   no negatives:  sources, destinations;
//   binary:        sources, negative sources, destinations, negative destinations
//                  (ceil(amount * positives) random pairs);
//   triplet:       sources, destinations, negative destinations (`amount` per positive,
//                  positive i's at [i * amount, (i + 1) * amount)).
// Under temporal sampling every seed carries its positive's time (a negative pair j of a
// binary batch that of positive j mod positives, as PyG repeats the times), and the
// sampler keeps edges at or before it.
//
// Heterogeneous graphs (MovieLens' users and movies): the positives are the edges of one
// edge type (options.edge_type, an index into the folder's edge types), each source of its
// source type and each destination of its destination type. A negative source is drawn
// among the source type's nodes and a negative destination among the destination type's
// (uniformly over that type's original ids in ascending order, so again the same draws on
// any number of parts), as PyG's heterogeneous negative sampling does. Neighbourhoods are
// sampled over every edge type; a batch carries each node's and edge's type (the layout of
// HeteroData.to_homogeneous()).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "python/epoch_cursor.h"
#include "python/graph_handle.h"
#include "python/node_loader.h"
#include "python/sampler_session.h"

namespace partita::python {

// Edges in original node ids, one per position, with their times where the folder has them.
struct EdgeList {
  std::vector<int64_t> src, dst;
  std::vector<int64_t> time;  // empty: no times
  int64_t size() const { return static_cast<int64_t>(src.size()); }
};

// A folder's link split: "train" every edge of the graph that trains (by original edge id;
// without held-out history, every edge), "val" and "test" its held-out edges (partitioner/
// splits.h), ordered by (source, destination) in original ids, so the same on any number of
// parts. `edge_type` >= 0 keeps the edges of that type alone (an index into the folder's edge
// types); -1 keeps all. Throws UsageError naming the split for another name, or for
// "val"/"test" of a folder without held-out edges, and naming the edge type when it is
// outside the folder's.
EdgeList read_edge_split(const GraphHandle& graph, const std::string& split, int32_t edge_type = -1);

enum class NegativeMode { kNone, kBinary, kTriplet };

struct LinkLoaderOptions {
  SessionOptions session;
  int64_t batch_size = 1;  // positives per batch
  bool shuffle = false;
  bool drop_last = false;
  uint64_t seed = 0;  // of the shuffle, the negatives and the neighbour draws
  NegativeMode negatives = NegativeMode::kNone;
  // binary: ceil(amount * positives) negative pairs a batch (amount > 0); triplet: `amount`
  // negative destinations per positive (a whole number >= 1).
  double amount = 1;
  // The positives' edge type (an index into the folder's edge types): required on a
  // heterogeneous graph, -1 (none) on a homogeneous one.
  int32_t edge_type = -1;
};

// A link batch as Python receives it. The ends' local indices are into batch.n_id.
struct LoadedLinkBatch {
  LoadedBatch batch;  // input_id: each positive's position in the loader's edges
  int64_t num_positives = 0;
  std::vector<int64_t> src_index;      // positives, then binary negatives
  std::vector<int64_t> dst_index;      // positives, then binary negatives
  std::vector<int64_t> dst_neg_index;  // triplet: [positives, amount]
  std::vector<int64_t> seed_time;      // temporal: src_index's times; empty otherwise
};

class LinkLoader {
 public:
  // `edges`: the positives (original ids; times required, and only allowed, when
  // options.session.temporal is on). Throws UsageError naming the problem (an id outside
  // the graph, a missing or extra time, batch_size < 1, a bad amount, temporal sampling
  // without disjoint or on a folder without edge times; on a heterogeneous graph no edge
  // type or one outside the folder's, an end not of the edge type's node type; an edge
  // type on a homogeneous graph, or a node type with no node to draw negatives from),
  // RuntimeClosed when the runtime is not running, Error when the actors fail.
  LinkLoader(std::shared_ptr<const GraphHandle> graph, EdgeList edges, const LinkLoaderOptions& options);

  int64_t num_batches() const { return num_batches_; }
  int64_t num_edges() const { return edges_.size(); }

  // Plans epoch `epoch` (positives, negatives) and hands it to the sampler; what is left of
  // the previous epoch is dropped. Throws as SamplerSession does.
  void start_epoch(uint64_t epoch);
  // The epoch's next batch; blocks until the sampler has it (call without Python's lock).
  // Throws UsageError past the epoch's last batch or before an epoch, and as
  // SamplerSession::next does.
  LoadedLinkBatch next();

  void close() { session_.close(); }

 private:
  // Batch b's seeds (global ids) and their times, appended to `plan`.
  void add_batch(EpochPlan& plan, Span<const int64_t> positions, uint64_t epoch, int64_t b) const;

  std::shared_ptr<const GraphHandle> graph_;
  LinkLoaderOptions options_;
  EdgeList edges_;  // global ids, checked before any actor is spawned
  // Heterogeneous: the original ids of the edge type's source and destination node types,
  // ascending, the pools negatives are drawn from; empty (every node) on a homogeneous graph.
  std::vector<int64_t> src_pool_, dst_pool_;
  int64_t num_batches_ = 0;
  std::mutex mutex_;  // held by start_epoch and next, while waiting for a batch
  SamplerSession session_;
  EpochCursor epoch_;  // over positions in the loader's edges
};

}  // namespace partita::python
