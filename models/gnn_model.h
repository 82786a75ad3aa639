// The node classifiers: GraphSAGE, GCN and GAT behind one interface, as torch modules.
// Their parameters, in registration order (layer by layer), are the fixed order in which
// gradients are flattened for the allreduce and weights are hashed and checkpointed.
#pragma once

#include <ATen/core/Generator.h>
#include <torch/nn/module.h>

#include <cstdint>
#include <memory>

#include "models/aggregate.h"
#include "models/batch_tensors.h"
#include "models/keyed_dropout.h"
#include "models/model_config.h"
#include "models/step_cost.h"

namespace partita {

class GnnModel : public torch::nn::Module {
 public:
  const ModelConfig& config() const { return config_; }

  // The logits [batch.batch_size, out_dim] of the batch's seeds. Layers are separated by
  // ReLU and, when `train`, by dropout whose masks depend on `dropout_key` alone (see
  // models/keyed_dropout.h). Throws Error if the batch's features do not fit in_dim.
  at::Tensor forward(const GraphBatch& batch, bool train, uint64_t dropout_key = 0);

  // forward(batch, false) and, per seed, what the last layer reads: the layer before it's
  // output after its ReLU (the input features for a one-layer model). The node embeddings
  // `partita predict` writes.
  struct Outputs {
    at::Tensor logits;      // [batch_size, out_dim]
    at::Tensor embeddings;  // [batch_size, the last layer's input width]
  };
  Outputs forward_with_embeddings(const GraphBatch& batch);

  // The arithmetic of a training step (forward with dropout, backward) on `batch`, as
  // forward() would run it: the floor `bench train` compares steps against. Throws Error
  // for the kinds that do not model it (GCN, GAT).
  virtual StepCost step_cost(const GraphBatch& batch) const;

  // Redraws every parameter from `seed`: the same seed gives bit-identical weights, which
  // is how data-parallel replicas start identical.
  void reset_parameters(uint64_t seed);

 protected:
  explicit GnnModel(ModelConfig config) : config_(std::move(config)) {}

  // Layer `index` maps x (one row per node of its input, the batch's first x.size(0)
  // nodes) to the rows [0, num_dst) of its output.
  virtual at::Tensor layer(int index, const at::Tensor& x, const GraphBatch& batch,
                           int64_t num_dst, AggregatePath path) = 0;
  // layer(index, activate(x, input), ...): what forward() calls. Kinds override it to fuse
  // the activation into their first operation.
  virtual at::Tensor activated_layer(int index, const at::Tensor& x, const Activation& input,
                                     const GraphBatch& batch, int64_t num_dst, AggregatePath path);
  virtual void reset(at::Generator& generator) = 0;

  // Layer `index`'s input and output features: in_dim, hidden_dim..., out_dim.
  int64_t layer_in_dim(int index) const;
  int64_t layer_out_dim(int index) const;

 private:
  at::Tensor run_layers(const GraphBatch& batch, bool train, uint64_t dropout_key, at::Tensor* embeddings);

  ModelConfig config_;
};

// Validates the config (UsageError naming the field) and builds the model with parameters
// drawn from `seed`.
std::shared_ptr<GnnModel> make_model(const ModelConfig& config, uint64_t seed);

}  // namespace partita
