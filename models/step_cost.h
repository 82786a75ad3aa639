// How far a training step is from its compute floor.
//
// The floor is the step's arithmetic done at the matrix-product speed this machine reaches:
// the FLOPs of every dense product the model runs, forward and backward, at the row counts
// a (trimmed) batch really computes, plus the multiply-adds of its aggregations, at the
// FLOP/s of torch::mm on those very product shapes and the same thread count, measured
// next to the step. A step near 1x the floor spends its time in BLAS; the ratio says how
// much any other change could still gain. `bench train` prints it (BENCHMARKS.md).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace partita {

// C [m, n] = A [m, k] * B [k, n], with A stored transposed ([k, m]) or B ([n, k]) as
// autograd's products read them, which changes BLAS's speed a little.
struct DenseProduct {
  int64_t m = 0, k = 0, n = 0;
  bool transpose_a = false, transpose_b = false;
  double flops() const { return 2.0 * static_cast<double>(m) * static_cast<double>(k) * static_cast<double>(n); }
};

// A training step's arithmetic: forward, cross-entropy and backward of one batch.
struct StepCost {
  std::vector<DenseProduct> products;  // forward and backward
  double aggregation_flops = 0;        // 2 per edge and feature, for each pass that runs
  double product_flops() const;
  double flops() const { return product_flops() + aggregation_flops; }
};

// Times torch::mm on products, on libtorch's current intra-op threads, reading operands
// from one buffer of random values that it keeps (and grows) between calls.
class GemmClock {
 public:
  // Seconds for one pass of at::mm_out over `products`, after an untimed warm-up pass (BLAS
  // threads awake, operands in cache as the step's are). Throws Error when no product has
  // a nonzero size.
  double seconds(const std::vector<DenseProduct>& products);

 private:
  at::Tensor values_, out_;
};

}  // namespace partita
