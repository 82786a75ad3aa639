#include "models/sparse_adagrad.h"

#include <cmath>
#include <string>
#include <vector>

#include "base/error.h"

namespace partita {

void SparseAdagrad::validate() const {
  if (!(learning_rate > 0)) throw UsageError("train.learning_rate: must be positive, got " + std::to_string(learning_rate));
  if (!(eps > 0)) throw UsageError("adagrad eps: must be positive, got " + std::to_string(eps));
  if (!(initial_accumulator >= 0)) {
    throw UsageError("adagrad initial accumulator: must not be negative, got " + std::to_string(initial_accumulator));
  }
}

void SparseAdagrad::step(Span<float> table, Span<float> state, int64_t dim, Span<const int64_t> rows,
                         Span<const float> grads) const {
  if (dim <= 0 || table.size() % static_cast<size_t>(dim) != 0 || state.size() != table.size()) {
    throw Error("sparse adagrad: table and state must both be [rows, " + std::to_string(dim) + "]");
  }
  if (grads.size() != rows.size() * static_cast<size_t>(dim)) {
    throw Error("sparse adagrad: " + std::to_string(grads.size()) + " gradient values for " +
                std::to_string(rows.size()) + " rows of " + std::to_string(dim));
  }
  const uint64_t num_rows = table.size() / static_cast<size_t>(dim);
  std::vector<bool> seen(num_rows, false);
  for (int64_t r : rows) {
    if (static_cast<uint64_t>(r) >= num_rows) {
      throw Error("sparse adagrad: row " + std::to_string(r) + " outside the table's " + std::to_string(num_rows));
    }
    if (seen[r]) throw Error("sparse adagrad: row " + std::to_string(r) + " given twice (sum duplicates first)");
    seen[r] = true;
  }
  const float lr = static_cast<float>(learning_rate), eps = static_cast<float>(this->eps);
  for (size_t i = 0; i < rows.size(); ++i) {
    float* value = table.data() + rows[i] * dim;
    float* sum = state.data() + rows[i] * dim;
    const float* g = grads.data() + i * dim;
    for (int64_t j = 0; j < dim; ++j) {
      sum[j] += g[j] * g[j];
      value[j] -= lr * g[j] / (std::sqrt(sum[j]) + eps);
    }
  }
}

}  // namespace partita
