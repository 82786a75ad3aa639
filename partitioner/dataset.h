// A graph dataset in memory, as the readers and generators yield it and the partitioner
// consumes it. Node ids are 0..num_nodes-1 in the dataset's own order ("original ids");
// edge ids are positions in `edges` ("original edge ids"). Partitioning relabels nodes
// but keeps both of these on disk, so results can always be mapped back.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace partita {

// Directed edges src[i] -> dst[i], with an optional relation/edge type per edge.
struct EdgeList {
  std::vector<int64_t> src;
  std::vector<int64_t> dst;
  std::vector<int32_t> type;  // empty, or one entry per edge (index into Dataset::edge_types)

  int64_t size() const { return static_cast<int64_t>(src.size()); }
  void reserve(size_t n);
  void push_back(int64_t s, int64_t d) { src.push_back(s); dst.push_back(d); }
};

// (source node type, relation, destination node type), as PyG names edge types.
struct EdgeType {
  std::string src_type;
  std::string relation;
  std::string dst_type;
};

// Heterogeneous graphs use one global node id space in which every node carries a type
// (DGL's "homogenised" view): partitioning, relabelling and the partition book then need
// no per-type cases, and per-type ids are recovered from the type vector.
struct Dataset {
  std::string name;
  int64_t num_nodes = 0;
  EdgeList edges;  // the message-passing graph

  // Node features, row-major [num_nodes, feature_dim]; empty when feature_dim == 0.
  int64_t feature_dim = 0;
  std::vector<float> x;
  // Node labels [num_nodes], -1 for unlabelled nodes; empty when there are none.
  std::vector<int64_t> y;
  int64_t num_classes = 0;
  // Edge features, row-major [num_edges, edge_feature_dim]; empty when 0.
  int64_t edge_feature_dim = 0;
  std::vector<float> edge_attr;
  // Timestamps for temporal sampling; empty, or one per node / per edge.
  std::vector<int64_t> node_time;
  std::vector<int64_t> edge_time;

  // Heterogeneous graphs: non-empty names, a type per node, and edges.type set.
  std::vector<std::string> node_type_names;
  std::vector<int32_t> node_type;
  std::vector<EdgeType> edge_types;
  // Reverse edge types: empty, or one entry per edge type, the type that mirrors it edge by
  // edge (MovieLens' rated_by for rates, and back), -1 for none. Link prediction's held-out
  // edges (partitioner/splits.h) leave the graph in both types: a rating held out of
  // `rates` would otherwise still be read off `rated_by`.
  std::vector<int32_t> reverse_edge_type;
  // Node types whose features differ in width (a PyG HeteroData's papers of 128 columns,
  // authors of 64): empty when every type uses all feature_dim columns, or per node type
  // the width of its features, the leading columns of x (the rest of its rows zero).
  std::vector<int64_t> node_type_feature_dim;

  // Node splits: sorted, unique node ids.
  std::vector<int64_t> train_idx;
  std::vector<int64_t> val_idx;
  std::vector<int64_t> test_idx;
  // Link-prediction splits: held-out edges, not part of `edges` (e.g. FB15k-237 valid/test).
  EdgeList val_edges;
  EdgeList test_edges;
  // Their edge features, row-major [held-out edges, edge_feature_dim], as the edge held out
  // had them (a MovieLens rating, what rating regression predicts): empty, or all of them.
  std::vector<float> val_edge_attr;
  std::vector<float> test_edge_attr;
  // Their times, as the edge held out had them: empty, or one per held-out edge.
  std::vector<int64_t> val_edge_time;
  std::vector<int64_t> test_edge_time;
  // The held-out edges are also in `edges`, as history (a streaming time split: a held-out
  // edge at time t is the answer for a seed at t, and a neighbour of seeds after t; see
  // partitioner/splits.h). False: they are in the graph in no edge type.
  bool held_out_in_graph = false;

  // The feature transforms applied to x, in order (partitioner/feature_transforms.h), as
  // META.json records them.
  std::vector<std::string> transforms;

  // The dataset's own string ids where its format has them (LINQS paper ids, Freebase
  // entity ids); empty otherwise.
  std::vector<std::string> node_names;

  int64_t num_edges() const { return edges.size(); }
  bool is_hetero() const { return !node_type_names.empty() || !edge_types.empty(); }

  // Checks every size and id range; throws Error naming the first inconsistent field
  // (e.g. "dataset 'x': y has 10 entries, expected num_nodes = 12").
  void validate() const;
};

}  // namespace partita
