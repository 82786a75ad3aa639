#include "embeddings/row_optimizer.h"

#include "base/error.h"

namespace partita {

RowOptimizer RowOptimizer::parse(const std::string& name, double learning_rate, const std::string& field) {
  RowOptimizer out;
  if (name == "adagrad") {
    out.kind = RowOptimizerKind::kAdagrad;
  } else if (name == "sparse_adam") {
    out.kind = RowOptimizerKind::kSparseAdam;
  } else {
    throw UsageError(field + ": '" + name + "' is not an optimiser of embedding rows (adagrad or sparse_adam)");
  }
  out.adagrad.learning_rate = learning_rate;
  out.adam.learning_rate = learning_rate;
  out.validate();
  return out;
}

const char* RowOptimizer::name() const { return kind == RowOptimizerKind::kAdagrad ? "adagrad" : "sparse_adam"; }

float RowOptimizer::initial_state() const {
  return kind == RowOptimizerKind::kAdagrad ? static_cast<float>(adagrad.initial_accumulator) : 0.0f;
}

void RowOptimizer::validate() const {
  if (kind == RowOptimizerKind::kAdagrad) {
    adagrad.validate();
  } else {
    adam.validate();
  }
}

void RowOptimizer::step(Span<float> table, Span<float> state, int64_t dim, Span<const int64_t> rows,
                        Span<const float> grads, uint64_t step) const {
  if (kind == RowOptimizerKind::kAdagrad) {
    adagrad.step(table, state, dim, rows, grads);
  } else {
    adam.step(table, state, dim, rows, grads, step);
  }
}

}  // namespace partita
