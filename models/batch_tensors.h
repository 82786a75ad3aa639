// A MiniBatch as the tensors the models read. The sampled edges are laid out once per
// batch, for every layer: sorted by destination (CSC), which the aggregation's forward pass
// walks, and grouped by source, which its backward pass walks, so neither pass scatters.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "graph/mini_batch.h"

namespace partita {

// Edges sorted by destination, stably (the edges of one destination keep their batch
// order, so sums run in a fixed order), with the transpose used by backward passes.
struct CscEdges {
  int64_t num_nodes = 0;
  at::Tensor colptr;     // int64 [num_nodes + 1]: the in-edges of d are [colptr[d], colptr[d+1])
  at::Tensor src;        // int64 [E]: each edge's source
  at::Tensor dst;        // int64 [E]: each edge's destination, non-decreasing
  at::Tensor rowptr;     // int64 [num_nodes + 1]: the out-edges of s are
  at::Tensor out_edges;  // out_edges[rowptr[s] .. rowptr[s+1]): edge positions, ascending

  int64_t num_edges() const { return src.defined() ? src.size(0) : 0; }
  // The edges whose destination is below num_dst: a prefix, since the edges are sorted.
  int64_t edges_before(int64_t num_dst) const;
};

// Sorts (src[e], dst[e]) by destination. Indices must be in [0, num_nodes).
CscEdges make_csc(int64_t num_nodes, std::vector<int64_t> src, std::vector<int64_t> dst);

struct GraphBatch {
  int64_t num_nodes = 0;
  int64_t batch_size = 0;  // the seeds: nodes [0, batch_size), whose logits the models return
  at::Tensor x;            // float32 [num_nodes, feature_dim]
  at::Tensor y;            // int64, as the batch gave it ([num_nodes] or [batch_size]); may be undefined

  // The sampled edges, self loops included (GraphSAGE's neighbourhood, as PyG's SAGEConv),
  // and 1 / in-degree of each edge's destination (float32, per edge): the mean's weights.
  CscEdges edges;
  at::Tensor mean_weight;
  // The same edges with sampled self loops dropped and one self loop per node added, first
  // among its node's in-edges (GCN and GAT, as PyG's GCNConv and GATConv add them), and
  // GCN's symmetric normalisation deg^-1/2[src] * deg^-1/2[dst] per edge (float32), the
  // degrees counting the self loop. Degrees are of the whole sampled subgraph, so a trimmed
  // layer normalises as the untrimmed one does.
  CscEdges edges_with_self_loops;
  at::Tensor gcn_weight;

  // The global id of every node (the one-hot input of featureless graphs is indexed by it).
  at::Tensor node_ids;  // int64 [num_nodes]

  // Heterogeneous batches (laid out with a HeteroLayout): every node's type, and the
  // sampled edges split by edge type (relation r = edge type r of the graph), each in CSC
  // with its own mean weights 1 / |N_r(d)| (the in-edges of d of relation r: R-GCN's
  // per-relation normalisation, and the mean of each SAGEConv of PyG's to_hetero). Empty
  // (undefined) for homogeneous batches. Each relation's edges are a subset of `edges`, so
  // layer_rows trims them alike: a relation's edges into the first num_dst nodes are the
  // prefix edges_before(num_dst).
  at::Tensor node_type;  // int64 [num_nodes]
  std::vector<CscEdges> relations;
  std::vector<at::Tensor> relation_mean_weight;
  // The same edges in one CSC, each destination's in-edges grouped by relation, with each
  // edge's relation (int64) and its relation's mean weight (float32): what a per-edge
  // combination of the relations' weights (R-GCN's basis coefficients) aggregates over in
  // one pass.
  CscEdges typed_edges;
  at::Tensor typed_edge_relation;
  at::Tensor typed_edge_mean_weight;
  bool is_hetero() const { return !relations.empty(); }

  // Per hop (index 0 = the seeds), as the sampler counted them; empty when unknown.
  std::vector<int64_t> num_sampled_nodes;
  std::vector<int64_t> num_sampled_edges;
  // Whether every edge's source lies at most one hop beyond its destination, as sampled
  // batches are: then trimming the layers to fewer rows leaves the seeds' logits unchanged.
  bool hop_ordered = false;

  // The rows layer `layer` (0-based) of `num_layers` must compute. Trimmed (HGAM, like PyG's
  // trim_to_layer): the nodes within num_layers - 1 - layer hops of the seeds, so the last
  // layer computes only the seeds; untrimmed, or when the batch has no usable hop counts:
  // every node.
  int64_t layer_rows(int layer, int num_layers, bool trim) const;
};

// What a heterogeneous batch needs beside the batch itself: the graph's number of edge
// types and every node's type by global id (int32 [N], from the partition folder).
struct HeteroLayout {
  int num_relations = 0;
  const std::vector<int32_t>* node_type = nullptr;
};

// Validates the batch (sizes agree, indices in range; Error naming the first problem) and
// lays it out. With a `hetero` layout the batch must carry an edge type per edge, each
// below num_relations (Error otherwise), and every node id must be below node_type's size. The rvalue overload takes over the feature buffer instead of copying it,
// and hands it to `recycle_x` (when given) once the tensors are done with it, on the
// thread that drops the last of them: a sampler fills it again (graph/buffer_pool.h).
GraphBatch to_graph_batch(MiniBatch&& batch, std::function<void(std::vector<float>&&)> recycle_x = {},
                          const HeteroLayout& hetero = {});
GraphBatch to_graph_batch(const MiniBatch& batch, const HeteroLayout& hetero = {});

}  // namespace partita
