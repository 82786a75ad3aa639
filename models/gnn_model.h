// The node models behind one interface, as torch modules: what a trainer calls per step
// (forward over a batch's tensors), what its optimiser and the allreduce read (the
// module's parameters), what a checkpoint holds (its parameters and buffers by name). The
// built-in kinds (GraphSAGE, GCN, GAT, R-GCN, heterogeneous GraphSAGE) are stacks of layers
// (models/layered_model.h), but for mf, biased matrix factorisation (a learnt row and bias
// per node, models/matrix_factorisation.cpp); a host application's own module comes in through the registry
// (models/model_registry.h). Parameters, in registration order, are the fixed order in which
// gradients are flattened for the allreduce and weights are hashed and checkpointed.
#pragma once

#include <torch/nn/module.h>

#include <cstdint>
#include <memory>

#include "models/batch_tensors.h"
#include "models/model_config.h"
#include "models/step_cost.h"

namespace partita {

class GnnModel : public torch::nn::Module {
 public:
  const ModelConfig& config() const { return config_; }

  // The outputs [batch.batch_size, out_dim] of the batch's seeds (a node classifier's
  // logits, a link encoder's node representations). Dropout applies only when `train`; the
  // built-in kinds key its masks by `dropout_key` alone (see models/keyed_dropout.h).
  // Throws Error if the batch's features do not fit in_dim.
  virtual at::Tensor forward(const GraphBatch& batch, bool train, uint64_t dropout_key = 0) = 0;

  // forward(batch, false) and, per seed, what the last layer reads: the layer before it's
  // output after its ReLU (the input features for a one-layer model). The node embeddings
  // `partita predict` writes. Throws Error for a model that does not tell its layers apart
  // (a registered one).
  struct Outputs {
    at::Tensor logits;      // [batch_size, out_dim]
    at::Tensor embeddings;  // [batch_size, the last layer's input width]
  };
  virtual Outputs forward_with_embeddings(const GraphBatch& batch) = 0;

  // The arithmetic of a training step (forward with dropout, backward) on `batch`, as
  // forward() would run it: the floor `bench train` compares steps against. Throws Error
  // for the kinds that do not model it (all but graphsage and rgcn).
  virtual StepCost step_cost(const GraphBatch& batch) const;

  // Redraws every parameter from `seed`: the same seed gives bit-identical weights, which
  // is how data-parallel replicas start identical.
  virtual void reset_parameters(uint64_t seed) = 0;

 protected:
  explicit GnnModel(ModelConfig config) : config_(std::move(config)) {}

 private:
  ModelConfig config_;
};

// Validates the config (UsageError naming the field) and builds the model with parameters
// drawn from `seed`: a built-in kind, or with kind "registered" the module registered under
// config.name in this process (models/model_registry.h; UsageError naming the registered
// ones when there is none of that name).
std::shared_ptr<GnnModel> make_model(const ModelConfig& config, uint64_t seed);

}  // namespace partita
