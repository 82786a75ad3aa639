// Internal to models/: the model kinds make_model chooses from (the built-in layer stacks,
// and a module registered by the host application), and the weight initialisations the
// built-ins share (PyG's, drawn from an explicit generator).
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <memory>

#include "models/gnn_model.h"
#include "models/layered_model.h"

namespace partita {

std::shared_ptr<GnnModel> make_graphsage(const ModelConfig& config);
std::shared_ptr<GnnModel> make_gcn(const ModelConfig& config);
std::shared_ptr<GnnModel> make_gat(const ModelConfig& config);
std::shared_ptr<GnnModel> make_rgcn(const ModelConfig& config);
std::shared_ptr<GnnModel> make_hetero_sage(const ModelConfig& config);
std::shared_ptr<GnnModel> make_matrix_factorisation(const ModelConfig& config);
// The module registered under config.name (models/model_registry.h), its parameters drawn
// with torch's default generator seeded from `seed`.
std::shared_ptr<GnnModel> make_registered(const ModelConfig& config, uint64_t seed);

// Uniform in [-bound, bound].
void init_uniform(at::Tensor& t, double bound, at::Generator& generator);
// Glorot/Xavier uniform over the last two dimensions (PyG's glorot).
void init_glorot(at::Tensor& t, at::Generator& generator);
// torch.nn.Linear's default: kaiming_uniform(a = sqrt(5)), i.e. bound 1 / sqrt(fan_in).
void init_linear(at::Tensor& t, int64_t fan_in, at::Generator& generator);

}  // namespace partita
