// GAT as PyG's GATConv (v1): per head, attention leaky_relu(a_src . h_j + a_dst . h_i, 0.2)
// softmaxed over each node's in-edges and its self loop; heads concatenated in hidden
// layers and averaged in the last, as PyG's GAT model does.
#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "models/model_kinds.h"

namespace partita {

namespace {

constexpr double kNegativeSlope = 0.2;

struct GatConv : torch::nn::Module {
  GatConv(int64_t in, int64_t channels, int64_t heads, bool concat)
      : in_dim(in), channels(channels), heads(heads), concat(concat) {
    weight = register_parameter("weight", at::empty({heads * channels, in}));
    att_src = register_parameter("att_src", at::empty({1, heads, channels}));
    att_dst = register_parameter("att_dst", at::empty({1, heads, channels}));
    bias = register_parameter("bias", at::empty({concat ? heads * channels : channels}));
  }

  int64_t in_dim, channels, heads;
  bool concat;
  at::Tensor weight, att_src, att_dst, bias;
};

class Gat : public LayeredModel {
 public:
  explicit Gat(const ModelConfig& config) : LayeredModel(config) {
    for (int i = 0; i < config.num_layers; ++i) {
      const bool last = i + 1 == config.num_layers;
      const int64_t channels = last ? config.out_dim : config.hidden_dim / config.heads;
      convs_.push_back(register_module(
          "conv" + std::to_string(i),
          std::make_shared<GatConv>(layer_in_dim(i), channels, config.heads, !last)));
    }
  }

 protected:
  at::Tensor layer(int index, const at::Tensor& x, const GraphBatch& batch, int64_t num_dst,
                   AggregatePath path) override {
    const GatConv& conv = *convs_[index];
    const CscEdges& edges = batch.edges_with_self_loops;
    const at::Tensor h = at::mm(x, conv.weight.t()).view({x.size(0), conv.heads, conv.channels});
    // score[n, k] = <h[n, k, :], att[k, :]> = x[n, :] . (W_k^T att[k, :]): folding att into
    // the weight first makes the scores a thin matrix product instead of an elementwise
    // product over every node's [heads, channels] block and its backward.
    const at::Tensor weight = conv.weight.view({conv.heads, conv.channels, conv.in_dim});
    const at::Tensor to_src = (weight * conv.att_src.view({conv.heads, conv.channels, 1})).sum(1);
    const at::Tensor to_dst = (weight * conv.att_dst.view({conv.heads, conv.channels, 1})).sum(1);
    const at::Tensor score_src = at::mm(x, to_src.t());
    const at::Tensor score_dst = at::mm(x.narrow(0, 0, num_dst), to_dst.t());
    const at::Tensor alpha =
        attention_softmax(score_src, score_dst, edges, num_dst, kNegativeSlope, path);
    const at::Tensor out = aggregate(h, alpha, edges, num_dst, path);
    return (conv.concat ? out.reshape({num_dst, conv.heads * conv.channels}) : out.mean(1)) +
           conv.bias;
  }

  void reset(at::Generator& generator) override {
    for (auto& conv : convs_) {
      init_glorot(conv->weight, generator);
      init_glorot(conv->att_src, generator);
      init_glorot(conv->att_dst, generator);
      conv->bias.zero_();
    }
  }

 private:
  std::vector<std::shared_ptr<GatConv>> convs_;
};

}  // namespace

std::shared_ptr<GnnModel> make_gat(const ModelConfig& config) {
  return std::make_shared<Gat>(config);
}

}  // namespace partita
