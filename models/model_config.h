// What a model is: its kind, sizes and the options that change its cost but not its
// results. Validated before a model is built, naming the bad field.
#pragma once

#include <cstdint>
#include <string>

namespace partita {

struct ModelConfig {
  std::string kind = "graphsage";  // "graphsage", "gcn" or "gat"
  int64_t in_dim = 0;              // input features per node
  int64_t hidden_dim = 256;        // features between layers
  int64_t out_dim = 0;             // classes
  int num_layers = 2;
  // GAT: attention heads, concatenated in hidden layers (each with hidden_dim / heads
  // features, so hidden_dim must be a multiple) and averaged in the last.
  int heads = 1;
  double dropout = 0.5;  // after the ReLU of every layer but the last, in training
  // Hierarchical trimming (HGAM): each layer computes only the rows later layers read. The
  // logits are the same either way; trimming makes sampled batches several times cheaper.
  bool trim = true;
  // Aggregate over the batch's CSC with its own backward pass (fast); false gathers a
  // message per edge and sums it with index_add_ (the reference).
  bool csc_aggregation = true;

  // Throws UsageError naming the field, e.g. "model.hidden_dim: must be positive (got 0)".
  void validate() const;
  // The structure a checkpoint must match, e.g. "gat in=128 hidden=256 out=16 layers=3 heads=4".
  std::string structure() const;
};

}  // namespace partita
