// Internal to models/: the model kinds make_model chooses from, and the weight
// initialisations they share (PyG's, drawn from an explicit generator).
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <memory>

#include "models/gnn_model.h"

namespace partita {

std::shared_ptr<GnnModel> make_graphsage(const ModelConfig& config);
std::shared_ptr<GnnModel> make_gcn(const ModelConfig& config);
std::shared_ptr<GnnModel> make_gat(const ModelConfig& config);
std::shared_ptr<GnnModel> make_rgcn(const ModelConfig& config);
std::shared_ptr<GnnModel> make_hetero_sage(const ModelConfig& config);

// Uniform in [-bound, bound].
void init_uniform(at::Tensor& t, double bound, at::Generator& generator);
// Glorot/Xavier uniform over the last two dimensions (PyG's glorot).
void init_glorot(at::Tensor& t, at::Generator& generator);
// torch.nn.Linear's default: kaiming_uniform(a = sqrt(5)), i.e. bound 1 / sqrt(fan_in).
void init_linear(at::Tensor& t, int64_t fan_in, at::Generator& generator);

}  // namespace partita
