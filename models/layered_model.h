// Internal to models/: the built-in kinds as a stack of layers, which GnnModel's forward
// runs one after the other: keyed dropout of the input features in training (when
// input_dropout > 0), ReLU between layers, keyed dropout after every ReLU in training,
// hierarchical trimming (each layer computes only the rows later layers read).
// A kind gives its layers and their initialisation; the stack is the same for all.
#pragma once

#include <ATen/core/Generator.h>

#include <cstdint>

#include "models/aggregate.h"
#include "models/gnn_model.h"
#include "models/keyed_dropout.h"

namespace partita {

class LayeredModel : public GnnModel {
 public:
  at::Tensor forward(const GraphBatch& batch, bool train, uint64_t dropout_key = 0) override;
  Outputs forward_with_embeddings(const GraphBatch& batch) override;
  void reset_parameters(uint64_t seed) override;

 protected:
  explicit LayeredModel(ModelConfig config) : GnnModel(std::move(config)) {}

  // Layer `index` maps x (one row per node of its input, the batch's first x.size(0)
  // nodes) to the rows [0, num_dst) of its output.
  virtual at::Tensor layer(int index, const at::Tensor& x, const GraphBatch& batch,
                           int64_t num_dst, AggregatePath path) = 0;
  // layer(index, activate(x, input), ...): what forward() calls. Kinds override it to fuse
  // the activation into their first operation.
  virtual at::Tensor activated_layer(int index, const at::Tensor& x, const Activation& input,
                                     const GraphBatch& batch, int64_t num_dst, AggregatePath path);
  // Draws every parameter from `generator` (under no_grad).
  virtual void reset(at::Generator& generator) = 0;

  // Layer `index`'s input and output features: in_dim, hidden_dim..., out_dim.
  int64_t layer_in_dim(int index) const;
  int64_t layer_out_dim(int index) const;

 private:
  at::Tensor run_layers(const GraphBatch& batch, bool train, uint64_t dropout_key, at::Tensor* embeddings);
};

}  // namespace partita
