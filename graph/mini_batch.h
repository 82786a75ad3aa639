// A sampled mini-batch, laid out as PyG's NeighborLoader returns it, so models written for
// PyG's conventions (and hierarchical trimming) apply unchanged.
#pragma once

#include <cstdint>
#include <vector>

namespace partita {

struct MiniBatch {
  // Global node ids in BFS order: the seeds first, then each hop's new nodes in the order
  // their sources were sampled.
  std::vector<int64_t> node_ids;
  // Sampled edges as local indices into node_ids: row = the neighbour (message source),
  // col = the node it was sampled for (destination). Hop by hop, in frontier order.
  std::vector<int64_t> row;
  std::vector<int64_t> col;
  std::vector<int64_t> edge_ids;    // global edge ids
  std::vector<int32_t> edge_types;  // heterogeneous graphs only
  // Per hop (index 0 = the seeds): nodes added and edges sampled, for trim_to_layer.
  std::vector<int64_t> num_sampled_nodes;
  std::vector<int64_t> num_sampled_edges;
  // Disjoint mode: the tree (seed position) each node belongs to; empty otherwise.
  std::vector<int64_t> batch;
  // The seeds as given, and the local index of each (duplicates share one node unless
  // disjoint).
  std::vector<int64_t> input_ids;
  std::vector<int64_t> input_local;
  int64_t batch_size = 0;  // number of seed nodes at the head of node_ids
  // The sampled nodes' features [node_ids.size(), feature_dim] and labels, once attached
  // (graph/batch_features.h).
  int64_t feature_dim = 0;
  std::vector<float> x;
  std::vector<int64_t> y;
};

}  // namespace partita
