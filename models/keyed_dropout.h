// Dropout whose mask is a pure function of a 64-bit key and each element's position. A
// training step is then reproducible from its key alone, whatever ran before it, whatever
// other trainers in the process do, and whatever the thread count: torch's dropout draws
// from a process-wide generator that every replica in the process shares.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace partita {

// The key of one training step's randomness.
uint64_t step_key(uint64_t job_seed, uint64_t epoch, uint64_t step, uint64_t trainer);

// Zeroes each element of x with probability p (resolved to 2^-32) and scales the others by
// 1 / (1 - p). Differentiable in x; the backward pass regenerates the mask from the key
// instead of keeping it. p must be in [0, 1).
at::Tensor keyed_dropout(const at::Tensor& x, double p, uint64_t key);

// keyed_dropout(relu(x), p, key), the same values and gradients, in one pass each way.
at::Tensor relu_keyed_dropout(const at::Tensor& x, double p, uint64_t key);

// The ReLU and dropout between two layers, as still to be applied to a layer's input.
struct Activation {
  bool relu = false;
  double dropout = 0;  // with relu only; 0 in evaluation
  uint64_t key = 0;    // of the dropout mask
};

// relu_keyed_dropout, relu or nothing, as `activation` says.
at::Tensor activate(const at::Tensor& x, const Activation& activation);

}  // namespace partita
