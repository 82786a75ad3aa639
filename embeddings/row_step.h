// What an optimiser of a few rows of a large table (embeddings/sparse_adagrad.h,
// embeddings/sparse_adam.h) checks of a step before it changes anything: `dim` gradient values
// per row, and rows unique (an owner sums its trainers' gradients per row first) and inside
// the table. One check, so that the row optimisers refuse the same steps with the same
// words.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/span.h"

namespace partita {

// Throws Error, its message opening with `who`, when grad_values != rows.size() * dim or a
// row is repeated or outside [0, num_rows). `dim` must be positive.
void check_row_step(const char* who, uint64_t num_rows, int64_t dim, Span<const int64_t> rows, size_t grad_values);

}  // namespace partita
