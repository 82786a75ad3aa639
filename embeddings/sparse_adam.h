// Adam on a few rows of a large table, with torch.optim.SparseAdam's semantics: the
// optional optimiser of an embedding table's owner (Adagrad is the default,
// embeddings/sparse_adagrad.h). Only the rows a step touched change: their value and both of
// their moments. A row no batch used keeps its value and its moments (dense Adam would
// decay its moments and keep moving it), and bias correction counts the table's steps, not
// the row's: a row first touched at step 100 is corrected with 1 - beta^100, as SparseAdam
// does with its one step counter per parameter.
//
// Per element of a touched row, at the table's step t (1 for the first):
//   m += (1 - b1) (g - m);  v += (1 - b2) (g^2 - v)
//   value -= lr sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps)
// (tested: equal to a dense reference of SparseAdam's formula on a toy table, and to
// torch::optim::Adam when every row is touched at every step, up to where each adds eps).
// Plain float loops, no libtorch (embeddings/ links none): the owner side links no torch.
#pragma once

#include <cstdint>

#include "base/span.h"

namespace partita {

struct SparseAdam {
  double learning_rate = 1e-3;
  double beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;

  // Throws UsageError naming the field for lr <= 0, eps <= 0 or a beta outside [0, 1).
  void validate() const;

  // Steps rows[r] for every r in `rows` with the gradient grads[i * dim, (i + 1) * dim), as
  // the table's step `step` (counted from 1, over every step of the table, including those
  // that touched none of these rows). `table` is [num_rows, dim] row-major; `moments` is
  // [2, num_rows, dim]: the first moments, then the second. `rows` must be unique and in
  // [0, num_rows), step at least 1: throws Error otherwise, before changing anything.
  void step(Span<float> table, Span<float> moments, int64_t dim, Span<const int64_t> rows, Span<const float> grads,
            uint64_t step) const;
};

}  // namespace partita
