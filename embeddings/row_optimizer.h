// The optimiser an embedding table's owner applies to the rows a step touched, as the job
// chose it (train.optimizer of an `encoder: none` job): sparse Adagrad, the default
// (embeddings/sparse_adagrad.h), or SparseAdam (embeddings/sparse_adam.h). The owner keeps
// state_slots() floats of optimiser state per table value (Adagrad's accumulator; Adam's
// two moments) and counts the table's steps for SparseAdam's bias correction; both go into
// its checkpoints. Plain float loops, no libtorch (embeddings/ links none): the tables'
// owners run beside the partitions, not beside a model.
#pragma once

#include <cstdint>
#include <string>

#include "base/span.h"
#include "embeddings/sparse_adagrad.h"
#include "embeddings/sparse_adam.h"

namespace partita {

enum class RowOptimizerKind : int64_t { kAdagrad = 0, kSparseAdam = 1 };

struct RowOptimizer {
  RowOptimizerKind kind = RowOptimizerKind::kAdagrad;
  SparseAdagrad adagrad;
  SparseAdam adam;

  // "adagrad" or "sparse_adam" with learning rate `learning_rate`; UsageError naming
  // `field` for another name or a bad rate.
  static RowOptimizer parse(const std::string& name, double learning_rate, const std::string& field);
  const char* name() const;

  // Floats of state per table value (1: Adagrad's accumulator; 2: Adam's moments, laid out
  // [2, rows, dim]) and their value before any step.
  int state_slots() const { return kind == RowOptimizerKind::kAdagrad ? 1 : 2; }
  float initial_state() const;
  void validate() const;

  // The table's step `step` (counted from 1) on `rows` (unique) with `grads`, as the
  // chosen optimiser's step; `state` is state_slots() x the table's size.
  void step(Span<float> table, Span<float> state, int64_t dim, Span<const int64_t> rows, Span<const float> grads,
            uint64_t step) const;
};

}  // namespace partita
