#include "models/gnn_model.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <string>

#include "base/error.h"
#include "base/random.h"
#include "models/keyed_dropout.h"
#include "models/model_kinds.h"

namespace partita {

at::Tensor GnnModel::forward(const GraphBatch& batch, bool train, uint64_t dropout_key) {
  return run_layers(batch, train, dropout_key, nullptr);
}

GnnModel::Outputs GnnModel::forward_with_embeddings(const GraphBatch& batch) {
  Outputs outputs;
  outputs.logits = run_layers(batch, false, 0, &outputs.embeddings);
  return outputs;
}

at::Tensor GnnModel::run_layers(const GraphBatch& batch, bool train, uint64_t dropout_key, at::Tensor* embeddings) {
  if (!batch.x.defined() || batch.x.dim() != 2 || batch.x.size(1) != config_.in_dim ||
      batch.x.size(0) != batch.num_nodes) {
    throw Error("model: the batch has " +
                std::to_string(batch.x.defined() && batch.x.dim() == 2 ? batch.x.size(1) : 0) +
                " features per node; the " + config_.kind + " model takes in_dim = " +
                std::to_string(config_.in_dim));
  }
  const AggregatePath path =
      config_.csc_aggregation ? AggregatePath::kCsc : AggregatePath::kIndexAdd;
  const int layers = config_.num_layers;
  at::Tensor h = batch.x;
  Activation pending;  // the previous layer's ReLU and dropout, for the next layer to apply
  for (int i = 0; i < layers; ++i) {
    if (embeddings != nullptr && i + 1 == layers) *embeddings = activate(h, pending).narrow(0, 0, batch.batch_size);
    h = activated_layer(i, h, pending, batch, batch.layer_rows(i, layers, config_.trim), path);
    pending = {true, train ? config_.dropout : 0.0, mix64(dropout_key, static_cast<uint64_t>(i))};
  }
  return h.narrow(0, 0, batch.batch_size);
}

at::Tensor GnnModel::activated_layer(int index, const at::Tensor& x, const Activation& input,
                                     const GraphBatch& batch, int64_t num_dst, AggregatePath path) {
  return layer(index, activate(x, input), batch, num_dst, path);
}

StepCost GnnModel::step_cost(const GraphBatch&) const {
  throw Error("step cost: not modelled for " + config_.kind + " (only graphsage and rgcn)");
}

void GnnModel::reset_parameters(uint64_t seed) {
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(seed);
  at::NoGradGuard no_grad;
  reset(generator);
}

int64_t GnnModel::layer_in_dim(int index) const {
  return index == 0 ? config_.in_dim : config_.hidden_dim;
}

int64_t GnnModel::layer_out_dim(int index) const {
  return index + 1 == config_.num_layers ? config_.out_dim : config_.hidden_dim;
}

std::shared_ptr<GnnModel> make_model(const ModelConfig& config, uint64_t seed) {
  config.validate();
  std::shared_ptr<GnnModel> model = config.kind == "graphsage"     ? make_graphsage(config)
                                    : config.kind == "gcn"         ? make_gcn(config)
                                    : config.kind == "rgcn"        ? make_rgcn(config)
                                    : config.kind == "hetero_sage" ? make_hetero_sage(config)
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
