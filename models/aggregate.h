// Message aggregation over a batch's edges: the sparse half of every GNN layer, and most
// of its time once the dense products run on BLAS.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "models/batch_tensors.h"
#include "models/keyed_dropout.h"

namespace partita {

enum class AggregatePath {
  // Walks the CSC in the forward pass and its transpose in the backward pass, one
  // destination (or source) row per task on all torch threads: no per-edge message tensor,
  // no scatter, and sums in a fixed order whatever the thread count. The default.
  kCsc,
  // Gathers one message per edge and sums them with index_add_, differentiated by
  // autograd: plain torch operations, kept as the reference the CSC path is tested against.
  kIndexAdd,
};

// out[d] = sum over the in-edges e of d of weight[e] * x[src[e]], for d < num_dst.
// Either x [N, C] with weight [E_d], or per head x [N, H, C] with weight [E_d, H], where
// E_d = edges.edges_before(num_dst); every source among those edges must be below N.
// Returns [num_dst, C] or [num_dst, H, C]; differentiable in x and weight.
at::Tensor aggregate(const at::Tensor& x, const at::Tensor& weight, const CscEdges& edges,
                     int64_t num_dst, AggregatePath path = AggregatePath::kCsc);

// GraphSAGE's layer input from the previous layer's output x: with h = activate(x, input),
// [num_dst, 2C] holding aggregate(h, weight, edges, num_dst) in columns [0, C) and h's own
// rows [0, num_dst) in [C, 2C), so that lin_l and lin_r run as one product with their
// weights side by side. The backward pass starts each row of x's gradient from its own
// row's, gathers the aggregation's and applies the activation's gate, all in one pass: a
// slice's backward and a sum of two [N, C] gradients (8 ms of a 180 ms step on the benchmark
// graph, `bench train`) are gone; the gate costs about what the activation's own backward
// pass did, as both are bound by the 64 MB gradient they write. x [N >= num_dst, C] with
// weight [E_d]; differentiable in x only.
at::Tensor aggregate_with_self(const at::Tensor& x, const at::Tensor& weight, const CscEdges& edges,
                               int64_t num_dst, AggregatePath path = AggregatePath::kCsc,
                               const Activation& input = {});

// GAT's attention coefficients: for each edge e of the destinations d < num_dst, the
// softmax over d's in-edges of leaky_relu(score_src[src[e]] + score_dst[d]), per head.
// score_src [N, H], score_dst [M >= num_dst, H]; returns [E_d, H]. Differentiable in both
// scores.
at::Tensor attention_softmax(const at::Tensor& score_src, const at::Tensor& score_dst,
                             const CscEdges& edges, int64_t num_dst, double negative_slope,
                             AggregatePath path = AggregatePath::kCsc);

}  // namespace partita
