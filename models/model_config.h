// What a model is: its kind, sizes and the options that change its cost but not its
// results. Validated before a model is built, naming the bad field.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace partita {

struct ModelConfig {
  // "graphsage", "gcn", "gat", "rgcn", "hetero_sage", "mf" (biased matrix factorisation: a
  // learnt row of out_dim factors and a bias per node of num_nodes, no input, no layers; its
  // output is out_dim + 1 wide), or "registered": the host application's module registered
  // under `name` (models/model_registry.h).
  std::string kind = "graphsage";
  std::string name;  // kind "registered" only
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
  // Dropout of the input features before the first layer, in training (Kipf & Welling's
  // GCN and Velickovic et al.'s GAT drop the bag-of-words input as well as the hidden
  // features). 0: none. A featureless (one-hot) input has no features to drop.
  double input_dropout = 0;
  double init_std = 0.1;  // mf: its factors start N(0, init_std), its biases 0
  // The relational kinds (rgcn, hetero_sage) run on heterogeneous graphs: one weight per
  // relation (edge type), per-relation means.
  int num_relations = 0;
  int num_node_types = 0;
  std::vector<int32_t> relation_dst_type;  // per relation: the node type it ends in
  // What the first layer reads for a node, per node type (relational kinds; indexed by
  // type). Empty: every node reads its features, or its own learnt row when in_dim is 0.
  //   "features": its in_dim features, projected by the layer's weights.
  //   "learnt": a learnt row of its own (one-hot by global id: one-hot(id) W = W[id]).
  //   "shared": one learnt row of its type, read by all its nodes: such a node is known by
  //     its neighbourhood only (inductive; a MovieLens user is what it rated, so a user first
  //     seen after training is encoded like any other).
  //   "features+learnt": its features' projection plus a learnt row of its own, summed (PyG's
  //     MovieLens tutorial: movie_lin(x) + movie_emb(id)). A node no training step reached
  //     (a movie first rated after training) keeps its small initial row, so its features
  //     decide its encoding.
  // in_dim > 0 exactly when some type reads features.
  std::vector<std::string> type_inputs;
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
  bool is_registered() const { return kind == "registered"; }
  bool is_matrix_factorisation() const { return kind == "mf"; }
  // type_inputs[type], or the default for every type ("features", or "learnt" for in_dim 0).
  std::string input_of(int32_t type) const;
  // What an input of type_inputs reads: its node's features ("features", "features+learnt"),
  // a learnt row ("learnt", "shared", "features+learnt"), one shared by its type ("shared").
  static bool input_reads_features(const std::string& input) { return input == "features" || input == "features+learnt"; }
  static bool input_reads_row(const std::string& input) { return input != "features"; }
  static bool input_is_shared(const std::string& input) { return input == "shared"; }
  // Whether some node reads a learnt row ("learnt", "shared" or "features+learnt").
  bool reads_learnt_rows() const;
  // Whether some node type reads its type's shared row.
  bool has_shared_input() const;

  // Throws UsageError naming the field, e.g. "model.hidden_dim: must be positive (got 0)".
  void validate() const;
  // The structure a checkpoint must match, e.g. "gat in=128 hidden=256 out=16 layers=3 heads=4"
  // or "registered:my_sage in=1433 hidden=64 out=7 layers=2".
  std::string structure() const;
};

}  // namespace partita
