// A partition folder opened the way a distributed sampler sees it, for tests that compare
// partitioned sampling with the single-partition reference in original ids.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "graph/frontier_split.h"
#include "graph/subgraph_builder.h"
#include "graph/topology.h"
#include "partitioner/dataset.h"
#include "partitioner/partition_format.h"

namespace partita::testing {

// A mini-batch in original ids, with its features and labels: what must not depend on
// partitioning or on where the parts live.
struct OriginalBatch {
  std::vector<int64_t> nodes, rows, cols, edges, num_nodes, num_edges, y;
  std::vector<float> x;
  int64_t feature_dim = 0;
  bool operator==(const OriginalBatch& o) const {
    return nodes == o.nodes && rows == o.rows && cols == o.cols && edges == o.edges &&
           num_nodes == o.num_nodes && num_edges == o.num_edges && x == o.x && y == o.y &&
           feature_dim == o.feature_dim;
  }
};

// `b` in original ids, given the original id of every global node and edge id.
OriginalBatch to_original(const MiniBatch& b, const std::function<int64_t(int64_t)>& original_node,
                          const std::function<int64_t(int64_t)>& original_edge);

// A small stochastic-block-model graph, the synthetic graph of the sampling tests.
Dataset sbm_graph(int64_t nodes = 2000, uint64_t seed = 5);

class PartitionedGraph {
 public:
  explicit PartitionedGraph(const std::string& dir);

  const PartitionBook& book() const { return folder_.book(); }
  const std::vector<Topology>& parts() const { return parts_; }
  const Topology& owner_of_node(int64_t global) const { return parts_[book().owner(global)]; }
  const Topology& owner_of_edge(int64_t global_edge) const;

  // Original ids of every global node id, and the reverse (the folder's node_map).
  const std::vector<int64_t>& original_of_global() const { return original_of_global_; }
  const std::vector<int64_t>& global_of_original() const { return global_of_original_; }
  int64_t global_edge_of_original(int64_t original_edge) const { return global_edge_of_original_[original_edge]; }
  int64_t original_edge(int64_t global_edge) const { return owner_of_edge(global_edge).original_edge_id(global_edge); }

  // Runs every hop of the batch `builder` started, as a distributed sampler does: each
  // hop's frontier split by owner, sampled by the owner's topology with its own config
  // (configs[p]), joined back in frontier order; `before_merge` sees each joined hop.
  void sample_hops(SubgraphBuilder& builder, const std::vector<SamplerConfig>& configs,
                   const SampleKey& key,
                   const std::function<void(HopOutput&)>& before_merge = {}) const;

 private:
  PartitionFolder folder_;
  std::vector<Topology> parts_;
  std::vector<int64_t> original_of_global_, global_of_original_, global_edge_of_original_;
};

}  // namespace partita::testing
