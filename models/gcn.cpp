// GCN as PyG's GCNConv on the sampled subgraph: D^-1/2 (A + I) D^-1/2 X W + b, the degrees
// counting the self loop.
#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "models/model_kinds.h"

namespace partita {

namespace {

struct GcnConv : torch::nn::Module {
  GcnConv(int64_t in, int64_t out) : in_dim(in), out_dim(out) {
    weight = register_parameter("weight", at::empty({out, in}));
    bias = register_parameter("bias", at::empty({out}));
  }

  int64_t in_dim, out_dim;
  at::Tensor weight, bias;
};

class Gcn : public LayeredModel {
 public:
  explicit Gcn(const ModelConfig& config) : LayeredModel(config) {
    for (int i = 0; i < config.num_layers; ++i) {
      convs_.push_back(register_module(
          "conv" + std::to_string(i), std::make_shared<GcnConv>(layer_in_dim(i), layer_out_dim(i))));
    }
  }

 protected:
  at::Tensor layer(int index, const at::Tensor& x, const GraphBatch& batch, int64_t num_dst,
                   AggregatePath path) override {
    const GcnConv& conv = *convs_[index];
    const CscEdges& edges = batch.edges_with_self_loops;
    const at::Tensor weight = batch.gcn_weight.narrow(0, 0, edges.edges_before(num_dst));
    // Propagation commutes with W, so it runs on the narrower side of the product.
    if (conv.out_dim < conv.in_dim) {
      return aggregate(at::mm(x, conv.weight.t()), weight, edges, num_dst, path) + conv.bias;
    }
    return at::addmm(conv.bias, aggregate(x, weight, edges, num_dst, path), conv.weight.t());
  }

  void reset(at::Generator& generator) override {
    for (auto& conv : convs_) {
      init_glorot(conv->weight, generator);
      conv->bias.zero_();
    }
  }

 private:
  std::vector<std::shared_ptr<GcnConv>> convs_;
};

}  // namespace

std::shared_ptr<GnnModel> make_gcn(const ModelConfig& config) {
  return std::make_shared<Gcn>(config);
}

}  // namespace partita
