// GraphSAGE with mean aggregation, as PyG's SAGEConv: lin_l(mean of the in-neighbours) +
// lin_r(self), lin_r without bias.
#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "models/model_kinds.h"

namespace partita {

namespace {

struct SageConv : torch::nn::Module {
  SageConv(int64_t in, int64_t out) : in_dim(in), out_dim(out) {
    lin_l_weight = register_parameter("lin_l_weight", at::empty({out, in}));
    lin_l_bias = register_parameter("lin_l_bias", at::empty({out}));
    lin_r_weight = register_parameter("lin_r_weight", at::empty({out, in}));
  }

  int64_t in_dim, out_dim;
  at::Tensor lin_l_weight, lin_l_bias, lin_r_weight;
};

class GraphSage : public LayeredModel {
 public:
  explicit GraphSage(const ModelConfig& config) : LayeredModel(config) {
    for (int i = 0; i < config.num_layers; ++i) {
      convs_.push_back(register_module(
          "conv" + std::to_string(i), std::make_shared<SageConv>(layer_in_dim(i), layer_out_dim(i))));
    }
  }

 protected:
  at::Tensor layer(int index, const at::Tensor& x, const GraphBatch& batch, int64_t num_dst,
                   AggregatePath path) override {
    return activated_layer(index, x, {}, batch, num_dst, path);
  }

  at::Tensor activated_layer(int index, const at::Tensor& x, const Activation& input, const GraphBatch& batch,
                             int64_t num_dst, AggregatePath path) override {
    const SageConv& conv = *convs_[index];
    const at::Tensor weight = batch.mean_weight.narrow(0, 0, batch.edges.edges_before(num_dst));
    // The mean commutes with lin_l, so it runs on the narrower side of the product.
    if (conv.out_dim < conv.in_dim) {
      const at::Tensor h = activate(x, input);
      const at::Tensor out =
          aggregate(at::mm(h, conv.lin_l_weight.t()), weight, batch.edges, num_dst, path) + conv.lin_l_bias;
      return at::addmm(out, h.narrow(0, 0, num_dst), conv.lin_r_weight.t());
    }
    // [mean | self] * [lin_l | lin_r]^T: one product, no slice of x to differentiate, and
    // the input's activation applied on the way.
    return at::addmm(conv.lin_l_bias, aggregate_with_self(x, weight, batch.edges, num_dst, path, input),
                     at::cat({conv.lin_l_weight, conv.lin_r_weight}, 1).t());
  }

  // Mirrors layer(): per layer, the products and aggregations forward() runs and those
  // backward() runs (no input gradients for the first layer, whose input is the features),
  // and their bytes (StepBytes): the features of every batch node; each aggregation pass
  // over the layer's edges into its rows, at the width it runs at; ReLU and dropout on
  // every layer's output but the last, whose logits the loss reads; the input's dropout,
  // when configured, forward only; Adam on every parameter.
  StepCost step_cost(const GraphBatch& batch) const override {
    StepCost cost;
    const int layers = config().num_layers;
    int64_t in_rows = batch.num_nodes;
    cost.bytes.features = 2 * 4 * static_cast<double>(batch.num_nodes) * static_cast<double>(convs_[0]->in_dim);
    // Input dropout reads and writes the features; they need no gradient.
    if (config().input_dropout > 0) cost.bytes.activations += cost.bytes.features;
    for (int i = 0; i < layers; ++i) {
      const SageConv& conv = *convs_[i];
      const int64_t ci = conv.in_dim, co = conv.out_dim;
      const int64_t rows = batch.layer_rows(i, layers, config().trim);
      const double edges = static_cast<double>(batch.edges.edges_before(rows));
      const bool input_grad = i > 0;
      // A product x [m, k] * W^T: forward, then grad_W = grad^T x and grad_x = grad W.
      auto linear = [&](int64_t m, int64_t k, bool needs_input_grad) {
        cost.add({m, k, co, false, true});
        cost.add({co, m, k, true, false});
        if (needs_input_grad) cost.add({m, co, k, false, false});
      };
      if (co < ci) {
        linear(in_rows, ci, input_grad);
        cost.aggregation_flops += 2 * 2 * edges * static_cast<double>(co);  // forward and grad
        cost.bytes.aggregation += 2 * aggregation_bytes(edges, rows, co);
        linear(rows, ci, input_grad);  // lin_r on the layer's own rows
      } else {
        cost.aggregation_flops += (input_grad ? 2 : 1) * 2 * edges * static_cast<double>(ci);
        cost.bytes.aggregation += (input_grad ? 2 : 1) * aggregation_bytes(edges, rows, ci);
        linear(rows, 2 * ci, input_grad);  // [mean | self] * [lin_l | lin_r]^T
      }
      cost.bytes.activations += i + 1 < layers ? activation_bytes(rows, co)
                                               : 2 * 4 * static_cast<double>(batch.batch_size) * static_cast<double>(co);
      in_rows = rows;
    }
    int64_t parameters = 0;
    for (const at::Tensor& p : this->parameters()) parameters += p.numel();
    cost.bytes.optimizer = adam_bytes(parameters);
    return cost;
  }

  void reset(at::Generator& generator) override {
    for (auto& conv : convs_) {
      init_linear(conv->lin_l_weight, conv->in_dim, generator);
      init_linear(conv->lin_l_bias, conv->in_dim, generator);
      init_linear(conv->lin_r_weight, conv->in_dim, generator);
    }
  }

 private:
  std::vector<std::shared_ptr<SageConv>> convs_;
};

}  // namespace

std::shared_ptr<GnnModel> make_graphsage(const ModelConfig& config) {
  return std::make_shared<GraphSage>(config);
}

}  // namespace partita
