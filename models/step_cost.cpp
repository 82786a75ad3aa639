#include "models/step_cost.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "base/error.h"
#include "base/stopwatch.h"

namespace partita {

double StepCost::product_flops() const {
  double sum = 0;
  for (const DenseProduct& p : products) sum += p.flops();
  return sum;
}

double GemmClock::seconds(const std::vector<DenseProduct>& products) {
  int64_t operand = 0, result = 0;
  for (const DenseProduct& p : products) {
    operand = std::max({operand, p.m * p.k, p.k * p.n});
    result = std::max(result, p.m * p.n);
  }
  if (operand == 0 || result == 0) throw Error("GemmClock: no product of nonzero size to time");
  if (!values_.defined() || values_.numel() < operand) values_ = at::rand({operand}) - 0.5;
  if (!out_.defined() || out_.numel() < result) out_ = at::empty({result});
  const auto matrix = [&](int64_t rows, int64_t cols, bool transposed) {
    const at::Tensor flat = values_.narrow(0, 0, rows * cols);
    return transposed ? flat.view({cols, rows}).t() : flat.view({rows, cols});
  };
  const auto run = [&](const DenseProduct& p) {
    at::Tensor c = out_.narrow(0, 0, p.m * p.n).view({p.m, p.n});
    at::mm_out(c, matrix(p.m, p.k, p.transpose_a), matrix(p.k, p.n, p.transpose_b));
  };
  for (const DenseProduct& p : products) run(p);  // warm-up: the BLAS threads, the caches
  Stopwatch watch;
  for (const DenseProduct& p : products) run(p);
  return watch.seconds();
}

}  // namespace partita
