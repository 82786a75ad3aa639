#include "embeddings/sparse_adam.h"

#include <cmath>
#include <string>

#include "base/error.h"
#include "embeddings/row_step.h"

namespace partita {

void SparseAdam::validate() const {
  if (!(learning_rate > 0)) throw UsageError("train.learning_rate: must be positive, got " + std::to_string(learning_rate));
  if (!(eps > 0)) throw UsageError("sparse_adam eps: must be positive, got " + std::to_string(eps));
  if (!(beta1 >= 0 && beta1 < 1)) throw UsageError("sparse_adam beta1: must be in [0, 1), got " + std::to_string(beta1));
  if (!(beta2 >= 0 && beta2 < 1)) throw UsageError("sparse_adam beta2: must be in [0, 1), got " + std::to_string(beta2));
}

void SparseAdam::step(Span<float> table, Span<float> moments, int64_t dim, Span<const int64_t> rows,
                      Span<const float> grads, uint64_t step) const {
  if (dim <= 0 || table.size() % static_cast<size_t>(dim) != 0 || moments.size() != 2 * table.size()) {
    throw Error("sparse adam: the table must be [rows, " + std::to_string(dim) + "] and its moments [2, rows, " +
                std::to_string(dim) + "]");
  }
  if (step < 1) throw Error("sparse adam: steps count from 1");
  const uint64_t num_rows = table.size() / static_cast<size_t>(dim);
  check_row_step("sparse adam", num_rows, dim, rows, grads.size());
  const double t = static_cast<double>(step);
  const double correction1 = 1 - std::pow(beta1, t), correction2 = 1 - std::pow(beta2, t);
  const float step_size = static_cast<float>(learning_rate * std::sqrt(correction2) / correction1);
  const float keep1 = static_cast<float>(1 - beta1), keep2 = static_cast<float>(1 - beta2);
  const float eps = static_cast<float>(this->eps);
  float* const first = moments.data();
  float* const second = moments.data() + table.size();
  for (size_t i = 0; i < rows.size(); ++i) {
    const size_t at = static_cast<size_t>(rows[i] * dim);
    float* value = table.data() + at;
    float* m = first + at;
    float* v = second + at;
    const float* g = grads.data() + i * dim;
    for (int64_t j = 0; j < dim; ++j) {
      m[j] += (g[j] - m[j]) * keep1;
      v[j] += (g[j] * g[j] - v[j]) * keep2;
      value[j] -= step_size * (m[j] / (std::sqrt(v[j]) + eps));
    }
  }
}

}  // namespace partita
