// Parameters and gradients as flat float32 buffers: the allreduce sums one contiguous
// buffer per replica, and replicas compare a hash of their weights to prove they agree.
// Every function walks the parameters in the order given (a model's parameters(): layer
// by layer, fixed by construction), so equal models give equal buffers.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace partita {

// Elements over all parameters: the length of a flat gradient buffer.
int64_t num_elements(const std::vector<at::Tensor>& params);

// Copies every parameter's gradient into `out` (resized to num_elements; its capacity is
// reused), in order. A parameter without a gradient contributes zeros. float32 only.
void flatten_gradients(const std::vector<at::Tensor>& params, std::vector<float>& out);

// Writes data[0, size) back into the gradients, in the same order (creating them where
// missing). Throws Error if size != num_elements(params).
void assign_gradients(const std::vector<at::Tensor>& params, const float* data, size_t size);

// A 64-bit hash of the parameters' values, in order (and of their shapes): equal exactly
// when the weights are bit-identical, up to hash collisions.
uint64_t parameter_hash(const std::vector<at::Tensor>& params);

}  // namespace partita
