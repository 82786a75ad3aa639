// Adagrad on a few rows of a large table: how an embedding table's owner applies the sparse
// gradients its clients send (Marius's and DGL DistEmbedding's default optimiser). Only the
// rows a step touched change, and their accumulators only; a row no batch used keeps its
// value and its state, exactly as torch's dense Adagrad leaves a row whose gradient is zero
// (tested: the same values as torch::optim::Adagrad on the dense table).
//
// Per element, as torch's Adagrad (no weight decay, no learning-rate decay):
//   state += g^2;  value -= lr * g / (sqrt(state) + eps)
// Plain float loops, no libtorch (embeddings/ links none): the owner side links no torch,
// and the rows a step touches are few and scattered.
#pragma once

#include <cstdint>

#include "base/span.h"

namespace partita {

struct SparseAdagrad {
  double learning_rate = 0.1;
  double eps = 1e-10;
  double initial_accumulator = 0.0;  // the state's value before any step (torch's default 0)

  // Throws UsageError naming the field for lr <= 0, eps <= 0 or initial_accumulator < 0.
  void validate() const;

  // Steps rows[r] for every r in `rows` with the gradient grads[i * dim, (i + 1) * dim).
  // `table` and `state` are [num_rows, dim] row-major. `rows` must be unique (sum
  // duplicates first) and in [0, num_rows): throws Error otherwise, before changing anything.
  void step(Span<float> table, Span<float> state, int64_t dim, Span<const int64_t> rows,
            Span<const float> grads) const;
};

}  // namespace partita
