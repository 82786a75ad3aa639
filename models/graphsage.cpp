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

class GraphSage : public GnnModel {
 public:
  explicit GraphSage(const ModelConfig& config) : GnnModel(config) {
    for (int i = 0; i < config.num_layers; ++i) {
      convs_.push_back(register_module(
          "conv" + std::to_string(i), std::make_shared<SageConv>(layer_in_dim(i), layer_out_dim(i))));
    }
  }

 protected:
  at::Tensor layer(int index, const at::Tensor& x, const GraphBatch& batch, int64_t num_dst,
                   AggregatePath path) override {
    const SageConv& conv = *convs_[index];
    const at::Tensor weight = batch.mean_weight.narrow(0, 0, batch.edges.edges_before(num_dst));
    // The mean commutes with lin_l, so it runs on the narrower side of the product.
    at::Tensor out =
        conv.out_dim < conv.in_dim
            ? aggregate(at::mm(x, conv.lin_l_weight.t()), weight, batch.edges, num_dst, path) +
                  conv.lin_l_bias
            : at::addmm(conv.lin_l_bias, aggregate(x, weight, batch.edges, num_dst, path),
                        conv.lin_l_weight.t());
    return at::addmm(out, x.narrow(0, 0, num_dst), conv.lin_r_weight.t());
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
