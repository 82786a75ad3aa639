// Heterogeneous GraphSAGE as PyG's to_hetero(GraphSAGE, aggr="sum") builds it: a SAGEConv
// per relation r (src type -> dst type), lin_l_r(mean over N_r(i)) + b_r + lin_r_r(x_i),
// summed over the relations that end in i's node type. The self terms of the relations
// into one type add up to one matrix per node type, S_t = sum_{r -> t} lin_r_r (and one
// bias), so each node takes one self product, with its own type's matrix; the neighbour
// terms take one product over every relation's mean (models/relational.h). A node type no
// relation ends in gets zeros, as to_hetero gives it no output.
#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "models/model_kinds.h"
#include "models/relational.h"

namespace partita {

namespace {

struct HeteroSageConv : torch::nn::Module {
  HeteroSageConv(const ModelConfig& c, int64_t in, int64_t out, bool one_hot)
      : in_dim(one_hot ? one_hot_rows(c) : in), out_dim(out), one_hot(one_hot), relations(c.num_relations),
        node_types(c.num_node_types) {
    const int64_t R = relations;
    lin_l = register_parameter("lin_l", at::empty({R, in_dim, out_dim}));
    lin_l_bias = register_parameter("lin_l_bias", at::empty({R, out_dim}));
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

class HeteroSage : public GnnModel {
 public:
  explicit HeteroSage(const ModelConfig& config) : GnnModel(config) {
    for (int i = 0; i < config.num_layers; ++i) {
      convs_.push_back(register_module(
          "conv" + std::to_string(i),
          std::make_shared<HeteroSageConv>(config, layer_in_dim(i), layer_out_dim(i), i == 0 && config.in_dim == 0)));
    }
  }

 protected:
  at::Tensor layer(int index, const at::Tensor& x, const GraphBatch& batch, int64_t num_dst,
                   AggregatePath path) override {
    const HeteroSageConv& conv = *convs_[index];
    check_relational_batch(batch, conv.relations, "hetero_sage");
    const int64_t T = conv.node_types, in = conv.in_dim, out = conv.out_dim;
    const at::Tensor type = batch.node_type.narrow(0, 0, num_dst);
    // S_t = sum_{r -> t} lin_r_r: [T, in, out]; the biases likewise: [T, out].
    const at::Tensor self_weight = at::mm(conv.ends_in.t(), conv.lin_r.view({conv.relations, -1})).view({T, in, out});
    const at::Tensor self_bias = at::mm(conv.ends_in.t(), conv.lin_l_bias);
    at::Tensor self, neighbours;
    if (conv.one_hot) {
      const at::Tensor ids = one_hot_row_ids(config(), batch);
      // Row (t, id) of S flattened to [T * N, out]: each node's own type's row.
      self = self_weight.view({T * in, out}).index_select(0, type * in + ids.narrow(0, 0, num_dst));
      neighbours = sum_relation_means(conv.lin_l.index_select(1, ids), batch, num_dst, path);
    } else {
      // [num_dst, T, out]: every type's self product, then each row's own type.
      const at::Tensor all = at::mm(x.narrow(0, 0, num_dst), self_weight.permute({1, 0, 2}).reshape({in, T * out}));
      self = all.view({num_dst, T, out}).gather(1, type.view({-1, 1, 1}).expand({num_dst, 1, out})).squeeze(1);
      neighbours = at::mm(relation_means(x, batch, num_dst, path), conv.lin_l.reshape({-1, out}));
    }
    return neighbours + self + self_bias.index_select(0, type);
  }

  // Each SAGEConv as PyG's (torch.nn.Linear's default: uniform within 1 / sqrt(fan_in)).
  void reset(at::Generator& generator) override {
    for (auto& conv : convs_) {
      init_linear(conv->lin_l, conv->in_dim, generator);
      init_linear(conv->lin_l_bias, conv->in_dim, generator);
      init_linear(conv->lin_r, conv->in_dim, generator);
    }
  }

 private:
  std::vector<std::shared_ptr<HeteroSageConv>> convs_;
};

}  // namespace

std::shared_ptr<GnnModel> make_hetero_sage(const ModelConfig& config) { return std::make_shared<HeteroSage>(config); }

}  // namespace partita
