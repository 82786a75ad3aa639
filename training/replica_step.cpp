#include "training/replica_step.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "base/error.h"

namespace partita {

std::array<double, 3> allreduce_and_step(torch::nn::Module& model, torch::optim::Optimizer& optimizer,
                                         runtime::Allreduce& allreduce, std::vector<float>& gradients,
                                         const BatchResult& result, int64_t step) {
  flatten_gradients(model, gradients);
  const size_t n = gradients.size();
  gradients.push_back(static_cast<float>(result.loss_sum));
  gradients.push_back(static_cast<float>(result.seeds));
  gradients.push_back(static_cast<float>(result.correct));
  allreduce.sum(gradients.data(), gradients.size());
  // The gradients are checked too: ReLU maps a NaN to 0, so NaN features can leave the
  // loss finite while their gradients poison the weights for every later step.
  if (!std::all_of(gradients.begin(), gradients.end(), [](float v) { return std::isfinite(v); })) {
    throw Error("step " + std::to_string(step) +
                ": the loss or its gradients are not finite (NaN or Inf): features with NaN or Inf values, or a "
                "learning rate too high for this model");
  }
  const double total_seeds = gradients[n + 1];
  if (total_seeds > 0) {
    // The mean over every seed of the step: the gradient of one big batch.
    const float scale = static_cast<float>(1.0 / total_seeds);
    for (size_t i = 0; i < n; ++i) gradients[i] *= scale;
    assign_gradients(model, gradients.data(), n);
    optimizer.step();
  }
  std::array<double, 3> sums{gradients[n], gradients[n + 1], gradients[n + 2]};
  gradients.resize(n);
  return sums;
}

}  // namespace partita
