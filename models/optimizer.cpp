#include "models/optimizer.h"

#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>

#include "base/error.h"

namespace partita {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const std::string& name,
                                                        std::vector<at::Tensor> params,
                                                        double lr, double weight_decay,
                                                        double momentum) {
  if (!(lr > 0)) throw UsageError("optimizer.lr: must be positive (got " + std::to_string(lr) + ")");
  if (!(weight_decay >= 0)) {
    throw UsageError("optimizer.weight_decay: must be at least 0 (got " +
                     std::to_string(weight_decay) + ")");
  }
  if (name == "adam") {
    return std::make_unique<torch::optim::Adam>(
        std::move(params), torch::optim::AdamOptions(lr).weight_decay(weight_decay));
  }
  if (name == "sgd") {
    if (!(momentum >= 0 && momentum < 1)) {
      throw UsageError("optimizer.momentum: must be in [0, 1) (got " + std::to_string(momentum) + ")");
    }
    return std::make_unique<torch::optim::SGD>(
        std::move(params),
        torch::optim::SGDOptions(lr).momentum(momentum).weight_decay(weight_decay));
  }
  throw UsageError("optimizer.name: must be adam or sgd (got \"" + name + "\")");
}

std::string optimizer_name(const torch::optim::Optimizer& optimizer) {
  if (dynamic_cast<const torch::optim::Adam*>(&optimizer) != nullptr) return "adam";
  if (dynamic_cast<const torch::optim::SGD*>(&optimizer) != nullptr) return "sgd";
  throw Error("optimizer: not one make_optimizer builds");
}

}  // namespace partita
