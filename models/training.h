// What a trainer needs beyond the model: the loss and accuracy, the optimisers, flat
// gradient buffers and weight hashes over a model's parameters, and its saved state.
#pragma once

#include <torch/nn/module.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "models/checkpoint.h"
#include "models/gnn_model.h"
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

// One batch's share of a training step: forward in training mode with the step's dropout
// key, the cross-entropy summed over the seeds, and backward, which adds the gradients to
// the parameters' .grad. What the trainer runs and `bench train` times, phase by phase.
struct BatchResult {
  double loss_sum = 0;
  int64_t seeds = 0;    // labelled seeds
  int64_t correct = 0;  // of them, predicted right
};
struct BatchTimes {
  double forward = 0;   // seconds: the model's forward and the loss
  double backward = 0;  // seconds: backward, and counting the seeds and correct predictions
};
BatchResult forward_backward(GnnModel& model, const GraphBatch& batch, uint64_t dropout_key,
                             BatchTimes* times = nullptr);

}  // namespace partita
