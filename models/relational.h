// Internal to models/: the per-relation half of the relational layers (R-GCN and PyG's
// to_hetero GraphSAGE). Both sum, over the relations r ending in a node, a transform of the
// node's mean over its r-neighbours; each relation's mean runs on the CSC aggregation kernel
// over that relation's edges (GraphBatch::relations), trimmed like every other layer.
//
// A layer's input is dense rows h [n, C] or, for the first layer's learnt rows
// (ModelConfig::type_inputs learnt, shared, features+learnt; every node of a featureless
// graph), a one-hot vector per node that is never built: one-hot(id) * W = W[id], so a
// weight with a row per node is gathered at the batch's node ids instead. A shared type's
// nodes read one row of their type (rows num_nodes + type): every node of such a type has
// the same input, so it is told apart by its neighbours only. When types differ in what
// they read, the first layer is the sum of a dense part over the features (zero for a type
// that reads none) and a one-hot part (zero for a type that reads features only), each
// with its own weights and one bias: the layer of the input [features | one-hot row].
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
// when some types share one (ModelConfig::type_inputs "shared").
int64_t one_hot_rows(const ModelConfig& config);

// int64 [batch.num_nodes]: the row of that weight each batch node reads: its global id, or
// num_nodes + its type for a node of a shared type.
at::Tensor one_hot_row_ids(const ModelConfig& config, const GraphBatch& batch);

// float [batch.num_nodes, 1]: 1 for a node whose type reads a learnt row, 0 for one that
// reads its features only; undefined when every type reads a learnt row (nothing to mask).
at::Tensor learnt_row_mask(const ModelConfig& config, const GraphBatch& batch);

// The batch's features with the rows of types that do not read them ("learnt", "shared")
// zeroed; x itself when every type reads its features.
at::Tensor read_features(const ModelConfig& config, const GraphBatch& batch, const at::Tensor& x);

// Throws Error unless `batch` is a heterogeneous batch with `num_relations` relations.
void check_relational_batch(const GraphBatch& batch, int num_relations, const std::string& kind);

}  // namespace partita
