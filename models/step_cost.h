// How far a training step is from its floor.
//
// The compute floor is the step's arithmetic done at the matrix-product speed this machine
// reaches: the FLOPs of every dense product the model runs, forward and backward, at the row
// counts a (trimmed) batch really computes, plus the multiply-adds of its aggregations, at
// the FLOP/s of torch::mm on those very product shapes and the same thread count, measured
// next to the step. On a machine of little memory bandwidth the memory-bound work decides
// the step instead, so the step also counts the bytes it must move at least (StepBytes),
// which at the rate of a large buffer copy (MemcpyClock) give the memory floor. The
// roofline floor is their sum: flops / GEMM rate + bytes / copy rate, a bound no schedule
// of the step beats that does not overlap the two. `bench train` prints both against the
// step (BENCHMARKS.md).
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
  // A, B read once and C written once, float32.
  double bytes() const;
};

// The bytes of float32 values a step must move at least, by what moves them. The model:
// every tensor a pass must read is read once and every tensor it must write is written
// once, 4 bytes a value; index arrays (12 bytes an edge against 4 x width) and the biases
// are left out.
struct StepBytes {
  // The batch's input rows, gathered from the feature store into the batch (read and
  // written): the loader's work, before the step's lay out, so not in step().
  double features = 0;
  // Each mean-aggregation pass (aggregation_bytes): per edge one source row read, each
  // target row written once; the pass's backward, when it runs, the same again. Row
  // gathers inside the model (R-GCN's learnt rows) count here too.
  double aggregation = 0;
  // Every dense product, forward and backward: operands read, result written (DenseProduct::bytes).
  double dense = 0;
  // ReLU and dropout between layers (activation_bytes), and the loss reading the logits
  // and writing their gradient.
  double activations = 0;
  // The optimiser's update (adam_bytes).
  double optimizer = 0;
  // What the timed step (lay out, forward, backward, optimiser) moves.
  double step() const { return aggregation + dense + activations + optimizer; }
};

// One aggregation pass of `edges` edges into `rows` target rows of `width` values.
double aggregation_bytes(double edges, int64_t rows, int64_t width);
// ReLU and dropout on a [rows, width] activation: forward reads and writes it; backward
// reads the gradient and the saved output (dropout's mask is recomputed from its key) and
// writes the input's gradient.
double activation_bytes(int64_t rows, int64_t width);
// Adam on `parameters` values: parameters, gradients and both moments, each read and written.
double adam_bytes(int64_t parameters);

// A training step's arithmetic: forward, cross-entropy and backward of one batch.
struct StepCost {
  std::vector<DenseProduct> products;  // forward and backward
  double aggregation_flops = 0;        // 2 per edge and feature, for each pass that runs
  StepBytes bytes;
  double product_flops() const;
  double flops() const { return product_flops() + aggregation_flops; }
  // Appends a product and its bytes (StepBytes::dense).
  void add(const DenseProduct& product);
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

// Times a copy of one large buffer (libtorch's copy_ on its current intra-op threads, far
// larger than the caches), as the memory floor's rate.
class MemcpyClock {
 public:
  // `bytes`: the size of each of the two buffers; at least 1 MB (Error otherwise).
  explicit MemcpyClock(int64_t bytes = int64_t{256} << 20);
  // Bytes moved per second (read plus written) by one copy, after an untimed warm-up copy.
  double bytes_per_second();

 private:
  at::Tensor from_, to_;
};

}  // namespace partita
