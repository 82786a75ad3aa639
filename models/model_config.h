// What a model is: its kind, sizes and the options that change its cost but not its
// results. Validated before a model is built, naming the bad field.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace partita {

struct ModelConfig {
  std::string kind = "graphsage";  // "graphsage", "gcn", "gat", "rgcn" or "hetero_sage"
  // Input features per node. 0 (featureless graphs, relational kinds only): the input is
  // one-hot by global node id, of width num_nodes, as R-GCN gives AIFB's entities; the
  // first layer's weights then have a row per node.
  int64_t in_dim = 0;
  int64_t num_nodes = 0;
  int64_t hidden_dim = 256;        // features between layers
  int64_t out_dim = 0;             // classes
  int num_layers = 2;
  // GAT: attention heads, concatenated in hidden layers (each with hidden_dim / heads
  // features, so hidden_dim must be a multiple) and averaged in the last.
  int heads = 1;
  double dropout = 0.5;  // after the ReLU of every layer but the last, in training
  // The relational kinds (rgcn, hetero_sage) run on heterogeneous graphs: one weight per
  // relation (edge type), per-relation means.
  int num_relations = 0;
  int num_node_types = 0;
  std::vector<int32_t> relation_dst_type;  // per relation: the node type it ends in
  // One-hot input only (in_dim 0): the node types whose nodes all read one row of the first
  // layer, shared by the type, instead of a row each. Such a node is then known only by its
  // neighbourhood (inductive): a MovieLens user is what it rated, so a user first seen after
  // training (no trained row of its own) is encoded like any other. Sorted, no repeats.
  std::vector<int32_t> shared_input_types;
  // R-GCN's weight decomposition (Schlichtkrull et al. §2.2): "none" (a matrix per
  // relation), "basis" (W_r = sum_b a_rb V_b over num_bases shared V_b) or "block" (W_r
  // block-diagonal, num_blocks blocks; in and out dims must divide by it).
  std::string decomposition = "none";
  int num_bases = 0;
  int num_blocks = 0;
  // Hierarchical trimming (HGAM): each layer computes only the rows later layers read. The
  // logits are the same either way; trimming makes sampled batches several times cheaper.
  bool trim = true;
  // Aggregate over the batch's CSC with its own backward pass (fast); false gathers a
  // message per edge and sums it with index_add_ (the reference).
  bool csc_aggregation = true;

  bool is_relational() const { return kind == "rgcn" || kind == "hetero_sage"; }

  // Throws UsageError naming the field, e.g. "model.hidden_dim: must be positive (got 0)".
  void validate() const;
  // The structure a checkpoint must match, e.g. "gat in=128 hidden=256 out=16 layers=3 heads=4".
  std::string structure() const;
};

}  // namespace partita
