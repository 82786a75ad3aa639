#include "embeddings/sparse_adagrad.h"

#include <cmath>
#include <string>

#include "base/error.h"
#include "embeddings/row_step.h"

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
  const uint64_t num_rows = table.size() / static_cast<size_t>(dim);
  check_row_step("sparse adagrad", num_rows, dim, rows, grads.size());
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
