// The optimisers a job can name.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/optim/optimizer.h>

#include <memory>
#include <string>
#include <vector>

namespace partita {

// "adam" (torch's Adam: L2 weight decay added to the gradient, betas 0.9/0.999) or "sgd"
// (with momentum, no dampening, no Nesterov). Throws UsageError naming the field for an
// unknown name, lr <= 0, weight_decay < 0, or (sgd) momentum outside [0, 1).
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const std::string& name,
                                                        std::vector<at::Tensor> params,
                                                        double lr, double weight_decay = 0,
                                                        double momentum = 0.9);

// "adam" or "sgd" for the optimisers make_optimizer builds; throws Error for others.
std::string optimizer_name(const torch::optim::Optimizer& optimizer);

}  // namespace partita
