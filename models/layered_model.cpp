#include "models/layered_model.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <string>

#include "base/error.h"
#include "base/random.h"

namespace partita {

namespace {

constexpr uint64_t kInputDropoutSalt = 0x1b7a3d5e9c2f4068ULL;

}  // namespace

at::Tensor LayeredModel::forward(const GraphBatch& batch, bool train, uint64_t dropout_key) {
  return run_layers(batch, train, dropout_key, nullptr);
}

GnnModel::Outputs LayeredModel::forward_with_embeddings(const GraphBatch& batch) {
  Outputs outputs;
  outputs.logits = run_layers(batch, false, 0, &outputs.embeddings);
  return outputs;
}

at::Tensor LayeredModel::run_layers(const GraphBatch& batch, bool train, uint64_t dropout_key, at::Tensor* embeddings) {
  const ModelConfig& c = config();
  if (!batch.x.defined() || batch.x.dim() != 2 || batch.x.size(1) != c.in_dim || batch.x.size(0) != batch.num_nodes) {
    throw Error("model: the batch has " +
                std::to_string(batch.x.defined() && batch.x.dim() == 2 ? batch.x.size(1) : 0) +
                " features per node; the " + c.kind + " model takes in_dim = " + std::to_string(c.in_dim));
  }
  const AggregatePath path = c.csc_aggregation ? AggregatePath::kCsc : AggregatePath::kIndexAdd;
  const int layers = c.num_layers;
  // The input's mask has a key of its own: the layers' are mix64(dropout_key, i), i < layers.
  at::Tensor h = train && c.input_dropout > 0
                     ? keyed_dropout(batch.x, c.input_dropout, mix64(dropout_key, kInputDropoutSalt))
                     : batch.x;
  Activation pending;  // the previous layer's ReLU and dropout, for the next layer to apply
  for (int i = 0; i < layers; ++i) {
    if (embeddings != nullptr && i + 1 == layers) *embeddings = activate(h, pending).narrow(0, 0, batch.batch_size);
    h = activated_layer(i, h, pending, batch, batch.layer_rows(i, layers, c.trim), path);
    pending = {true, train ? c.dropout : 0.0, mix64(dropout_key, static_cast<uint64_t>(i))};
  }
  return h.narrow(0, 0, batch.batch_size);
}

at::Tensor LayeredModel::activated_layer(int index, const at::Tensor& x, const Activation& input,
                                         const GraphBatch& batch, int64_t num_dst, AggregatePath path) {
  return layer(index, activate(x, input), batch, num_dst, path);
}

void LayeredModel::reset_parameters(uint64_t seed) {
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(seed);
  at::NoGradGuard no_grad;
  reset(generator);
}

int64_t LayeredModel::layer_in_dim(int index) const {
  return index == 0 ? config().in_dim : config().hidden_dim;
}

int64_t LayeredModel::layer_out_dim(int index) const {
  return index + 1 == config().num_layers ? config().out_dim : config().hidden_dim;
}

}  // namespace partita
