#include "models/step_cost.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <string>

#include "base/error.h"
#include "base/stopwatch.h"

namespace partita {

namespace {

constexpr double kValueBytes = 4;  // float32

double as_double(int64_t n) { return static_cast<double>(n); }

}  // namespace

double DenseProduct::bytes() const {
  return kValueBytes * (as_double(m) * as_double(k) + as_double(k) * as_double(n) + as_double(m) * as_double(n));
}

double aggregation_bytes(double edges, int64_t rows, int64_t width) {
  return kValueBytes * (edges + as_double(rows)) * as_double(width);
}

double activation_bytes(int64_t rows, int64_t width) { return kValueBytes * (2 + 3) * as_double(rows) * as_double(width); }

double adam_bytes(int64_t parameters) { return kValueBytes * 4 * 2 * as_double(parameters); }

void StepCost::add(const DenseProduct& product) {
  products.push_back(product);
  bytes.dense += product.bytes();
}

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

MemcpyClock::MemcpyClock(int64_t bytes) {
  if (bytes < (int64_t{1} << 20)) throw Error("MemcpyClock: a buffer of " + std::to_string(bytes) + " bytes is below 1 MB");
  from_ = at::rand({bytes / 4});
  to_ = at::empty_like(from_);
}

double MemcpyClock::bytes_per_second() {
  to_.copy_(from_);  // warm-up: pages mapped, threads awake
  Stopwatch watch;
  to_.copy_(from_);
  return 2.0 * static_cast<double>(from_.nbytes()) / watch.seconds();
}

}  // namespace partita
