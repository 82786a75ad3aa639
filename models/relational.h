// Internal to models/: the per-relation half of the relational layers (R-GCN and PyG's
// to_hetero GraphSAGE). Both sum, over the relations r ending in a node, a transform of the
// node's mean over its r-neighbours; each relation's mean runs on the CSC aggregation kernel
// over that relation's edges (GraphBatch::relations), trimmed like every other layer.
//
// A layer's input is dense rows h [n, C] or, for the first layer of a featureless graph, a
// one-hot vector per node that is never built: one-hot(id) * W = W[id], so a weight with a
// row per node is gathered at the batch's node ids instead. The node types of
// ModelConfig::shared_input_types read one row per type instead (rows num_nodes + type):
// every node of such a type has the same input, so it is told apart by its neighbours only.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "models/aggregate.h"
#include "models/batch_tensors.h"
#include "models/model_config.h"

namespace partita {

// [num_dst, R * C]: columns [r*C, (r+1)*C) hold, for each destination d < num_dst, the mean
// of h[src] over d's in-edges of relation r (0 where it has none). Concatenated so that one
// product with the R weights stacked as [R * C, out] applies every relation at once.
at::Tensor relation_means(const at::Tensor& h, const GraphBatch& batch, int64_t num_dst, AggregatePath path);

// [num_dst, out]: sum over relations r of the mean of messages[r][src] over d's in-edges of
// relation r. messages [R, n, out]: per relation, a row per batch node (message-first,
// for one-hot inputs).
at::Tensor sum_relation_means(const at::Tensor& messages, const GraphBatch& batch, int64_t num_dst,
                              AggregatePath path);

// The rows of a one-hot first layer's weight: a row per node, and a row per node type
// when some types share one (ModelConfig::shared_input_types).
int64_t one_hot_rows(const ModelConfig& config);

// int64 [batch.num_nodes]: the row of that weight each batch node reads: its global id, or
// num_nodes + its type for a node of a shared type.
at::Tensor one_hot_row_ids(const ModelConfig& config, const GraphBatch& batch);

// Throws Error unless `batch` is a heterogeneous batch with `num_relations` relations.
void check_relational_batch(const GraphBatch& batch, int num_relations, const std::string& kind);

}  // namespace partita
