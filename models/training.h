// What a trainer needs beyond the model: the loss and accuracy, the optimisers, flat
// gradient buffers and weight hashes over a model's parameters, and its saved state.
#pragma once

#include <torch/nn/module.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "models/checkpoint.h"
#include "models/loss.h"
#include "models/optimizer.h"
#include "models/parameters.h"

namespace partita {

// The parameter-list functions of models/parameters.h over a module's parameters(), in
// their fixed registration order.
inline void flatten_gradients(const torch::nn::Module& model, std::vector<float>& out) {
  flatten_gradients(model.parameters(), out);
}
inline void assign_gradients(const torch::nn::Module& model, const float* data, size_t size) {
  assign_gradients(model.parameters(), data, size);
}
inline uint64_t parameter_hash(const torch::nn::Module& model) {
  return parameter_hash(model.parameters());
}

}  // namespace partita
