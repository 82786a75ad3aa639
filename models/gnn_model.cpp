#include "models/gnn_model.h"

#include <ATen/ATen.h>

#include <cmath>
#include <string>

#include "base/error.h"
#include "models/model_kinds.h"

namespace partita {

StepCost GnnModel::step_cost(const GraphBatch&) const {
  throw Error("step cost: not modelled for " + config_.kind + " (only graphsage and rgcn)");
}

std::shared_ptr<GnnModel> make_model(const ModelConfig& config, uint64_t seed) {
  config.validate();
  if (config.is_registered()) return make_registered(config, seed);
  std::shared_ptr<GnnModel> model = config.kind == "graphsage"     ? make_graphsage(config)
                                    : config.kind == "gcn"         ? make_gcn(config)
                                    : config.kind == "rgcn"        ? make_rgcn(config)
                                    : config.kind == "hetero_sage" ? make_hetero_sage(config)
                                    : config.kind == "mf"          ? make_matrix_factorisation(config)
                                                                   : make_gat(config);
  model->reset_parameters(seed);
  return model;
}

void init_uniform(at::Tensor& t, double bound, at::Generator& generator) {
  t.uniform_(-bound, bound, generator);
}

void init_glorot(at::Tensor& t, at::Generator& generator) {
  const int64_t fans = t.size(-2) + t.size(-1);
  init_uniform(t, std::sqrt(6.0 / static_cast<double>(fans)), generator);
}

void init_linear(at::Tensor& t, int64_t fan_in, at::Generator& generator) {
  init_uniform(t, 1.0 / std::sqrt(static_cast<double>(fan_in)), generator);
}

}  // namespace partita
