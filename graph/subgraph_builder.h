// The merge step of multi-hop sampling: takes each hop's neighbour lists in frontier order,
// deduplicates and relabels the nodes, and grows the mini-batch. The reference sampler
// (graph/neighbor_sampler.h) and batch assembly across partitions (graph/batch_assembly.h)
// both use it, fed by the same one-hop kernel, so they agree.
#pragma once

#include <cstdint>
#include <vector>

#include "base/span.h"
#include "graph/mini_batch.h"
#include "graph/hop_sampler.h"
#include "graph/node_map.h"

namespace partita {

class SubgraphBuilder {
 public:
  explicit SubgraphBuilder(bool disjoint) : disjoint_(disjoint) {}

  // Starts a batch. seed_times: the time bound of each seed (temporal sampling), or empty.
  void start(Span<const int64_t> seeds, Span<const int64_t> seed_times = {});

  // The nodes to sample at the next hop, in order, with their trees and time bounds.
  Span<const int64_t> frontier_nodes() const { return {frontier_.data(), frontier_.size()}; }
  Span<const int64_t> frontier_trees() const { return {frontier_trees_.data(), frontier_trees_.size()}; }
  Span<const int64_t> frontier_times() const { return {frontier_times_.data(), frontier_times_.size()}; }

  // Appends one hop: `hop` holds the neighbour lists of frontier_nodes(), in that order.
  void add_hop(const HopOutput& hop);

  // The finished batch; the builder is ready for start() again.
  MiniBatch finish();

  // Hands back a batch finish() returned, once its user is done with it: the next start()
  // fills its vectors again, so that a batch of hundreds of thousands of nodes and edges
  // reuses their memory instead of faulting in fresh pages (about a thousand a batch on the
  // shared benchmark graph, BENCHMARKS.md "Neighbour sampling"). Keeps one.
  void recycle(MiniBatch&& used) { spare_ = std::move(used); }

 private:
  // The dedup key of a node: in disjoint mode the same node in two trees is two nodes.
  int64_t key_of(int64_t node, int64_t tree) const {
    return disjoint_ ? node * num_trees_ + tree : node;
  }

  bool disjoint_;
  int64_t num_trees_ = 1;
  NodeMap map_;
  MiniBatch batch_;
  std::vector<int64_t> frontier_, frontier_trees_, frontier_times_;
  int64_t frontier_begin_ = 0;  // local index of frontier_[0]
  std::vector<int64_t> seed_times_;
  std::vector<int64_t> keys_;  // add_hop's: each neighbour's dedup key, kept for its capacity
  // add_hop's next frontier, swapped with frontier_*: kept for their capacity.
  std::vector<int64_t> next_, next_trees_, next_times_;
  MiniBatch spare_;  // recycle()'s, emptied and taken by start()
};

}  // namespace partita
