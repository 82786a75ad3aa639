// Heterogeneous GraphSAGE as PyG's to_hetero(GraphSAGE, aggr="sum") builds it: a SAGEConv
// per relation r (src type -> dst type), lin_l_r(mean over N_r(i)) + b_r + lin_r_r(x_i),
// summed over the relations that end in i's node type. The self terms of the relations
// into one type add up to one matrix per node type, S_t = sum_{r -> t} lin_r_r (and one
// bias), so each node takes one self product, with its own type's matrix; the neighbour
// terms take one product over every relation's mean (models/relational.h). A node type no
// relation ends in gets zeros, as to_hetero gives it no output. A first layer whose node
// types read both features and learnt rows (ModelConfig::type_inputs) is two such convs
// summed, a dense one and a one-hot one without biases (models/relational.h).
#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "models/model_kinds.h"
#include "models/relational.h"

namespace partita {

namespace {

struct HeteroSageConv : torch::nn::Module {
  HeteroSageConv(const ModelConfig& c, int64_t in, int64_t out, bool one_hot, bool bias = true)
      : in_dim(one_hot ? one_hot_rows(c) : in), out_dim(out), one_hot(one_hot), relations(c.num_relations),
        node_types(c.num_node_types) {
    const int64_t R = relations;
    lin_l = register_parameter("lin_l", at::empty({R, in_dim, out_dim}));
    if (bias) lin_l_bias = register_parameter("lin_l_bias", at::empty({R, out_dim}));
    lin_r = register_parameter("lin_r", at::empty({R, in_dim, out_dim}));
    // Which relation ends in which node type: [R, T], a 1 per relation. Not a parameter.
    ends_in = at::zeros({R, node_types});
    for (int r = 0; r < relations; ++r) ends_in[r][c.relation_dst_type[r]] = 1.0f;
  }

  int64_t in_dim, out_dim;
  bool one_hot;
  int relations, node_types;
  at::Tensor lin_l, lin_l_bias, lin_r, ends_in;
};

class HeteroSage : public LayeredModel {
 public:
  explicit HeteroSage(const ModelConfig& config) : LayeredModel(config) {
    for (int i = 0; i < config.num_layers; ++i) {
      convs_.push_back(register_module(
          "conv" + std::to_string(i),
          std::make_shared<HeteroSageConv>(config, layer_in_dim(i), layer_out_dim(i), i == 0 && config.in_dim == 0)));
    }
    if (config.in_dim > 0 && config.reads_learnt_rows()) {
      rows_ = register_module("rows", std::make_shared<HeteroSageConv>(config, 0, layer_out_dim(0), true, false));
    }
  }

 protected:
  at::Tensor layer(int index, const at::Tensor& x, const GraphBatch& batch, int64_t num_dst,
                   AggregatePath path) override {
    const HeteroSageConv& conv = *convs_[index];
    check_relational_batch(batch, conv.relations, "hetero_sage");
    const at::Tensor type = batch.node_type.narrow(0, 0, num_dst);
    const at::Tensor self_bias = at::mm(conv.ends_in.t(), conv.lin_l_bias);  // [T, out]
    at::Tensor out;
    if (conv.one_hot) {
      out = one_hot_terms(conv, batch, num_dst, path, {});
    } else {
      out = dense_terms(conv, index == 0 ? read_features(config(), batch, x) : x, batch, num_dst, path);
      if (index == 0 && rows_) out = out + one_hot_terms(*rows_, batch, num_dst, path, learnt_row_mask(config(), batch));
    }
    return out + self_bias.index_select(0, type);
  }

  // Each SAGEConv as PyG's (torch.nn.Linear's default: uniform within 1 / sqrt(fan_in)).
  void reset(at::Generator& generator) override {
    std::vector<std::shared_ptr<HeteroSageConv>> all = convs_;
    if (rows_) all.push_back(rows_);
    for (auto& conv : all) {
      init_linear(conv->lin_l, conv->in_dim, generator);
      if (conv->lin_l_bias.defined()) init_linear(conv->lin_l_bias, conv->in_dim, generator);
      init_linear(conv->lin_r, conv->in_dim, generator);
    }
  }

 private:
  // S_t = sum_{r -> t} lin_r_r: [T, in, out].
  static at::Tensor self_weight(const HeteroSageConv& conv) {
    return at::mm(conv.ends_in.t(), conv.lin_r.view({conv.relations, -1})).view({conv.node_types, conv.in_dim, conv.out_dim});
  }

  // [num_dst, out]: the self and neighbour terms of dense rows x, without bias.
  at::Tensor dense_terms(const HeteroSageConv& conv, const at::Tensor& x, const GraphBatch& batch, int64_t num_dst,
                         AggregatePath path) const {
    const int64_t T = conv.node_types, in = conv.in_dim, out = conv.out_dim;
    const at::Tensor type = batch.node_type.narrow(0, 0, num_dst);
    // [num_dst, T, out]: every type's self product, then each row's own type.
    const at::Tensor all = at::mm(x.narrow(0, 0, num_dst), self_weight(conv).permute({1, 0, 2}).reshape({in, T * out}));
    const at::Tensor self = all.view({num_dst, T, out}).gather(1, type.view({-1, 1, 1}).expand({num_dst, 1, out})).squeeze(1);
    return self + at::mm(relation_means(x, batch, num_dst, path), conv.lin_l.reshape({-1, out}));
  }

  // The same for one-hot rows (each node's learnt row), without bias; `mask` [n, 1], when
  // defined, zeroes the rows of nodes that read none.
  at::Tensor one_hot_terms(const HeteroSageConv& conv, const GraphBatch& batch, int64_t num_dst, AggregatePath path,
                           const at::Tensor& mask) const {
    const int64_t in = conv.in_dim, out = conv.out_dim;
    const at::Tensor type = batch.node_type.narrow(0, 0, num_dst);
    const at::Tensor ids = one_hot_row_ids(config(), batch);
    // Row (t, id) of S flattened to [T * N, out]: each node's own type's row.
    at::Tensor self = self_weight(conv).view({conv.node_types * in, out}).index_select(0, type * in + ids.narrow(0, 0, num_dst));
    at::Tensor messages = conv.lin_l.index_select(1, ids);  // [R, n, out]
    if (mask.defined()) {
      self = self * mask.narrow(0, 0, num_dst);
      messages = messages * mask.unsqueeze(0);
    }
    return self + sum_relation_means(messages, batch, num_dst, path);
  }

  std::vector<std::shared_ptr<HeteroSageConv>> convs_;
  std::shared_ptr<HeteroSageConv> rows_;  // the first layer's learnt rows beside features
};

}  // namespace

std::shared_ptr<GnnModel> make_hetero_sage(const ModelConfig& config) { return std::make_shared<HeteroSage>(config); }

}  // namespace partita
