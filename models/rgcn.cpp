// R-GCN (Schlichtkrull et al. 2018, eq. 2), as PyG's RGCNConv with mean aggregation:
//   h'_i = W_0 h_i + sum_r (1 / |N_r(i)|) sum_{j in N_r(i)} W_r h_j + b
// with the self-connection W_0 (PyG's root weight) and the relation weights W_r either
// full, or decomposed (§2.2): basis W_r = sum_b a_rb V_b, or block-diagonal
// W_r = diag(Q_r1, ..., Q_rB). The per-relation means run first and the R relations then
// take one product, [means of r = 1..R] x [W_1; ...; W_R]; a featureless first layer
// gathers W_r's rows at the batch's node ids (one-hot input, models/relational.h).
#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "models/model_kinds.h"
#include "models/relational.h"

namespace partita {

namespace {

struct RgcnConv : torch::nn::Module {
  RgcnConv(const ModelConfig& c, int64_t in, int64_t out, bool one_hot)
      : in_dim(one_hot ? c.num_nodes : in), out_dim(out), one_hot(one_hot), relations(c.num_relations),
        decomposition(c.decomposition) {
    const int64_t R = relations;
    if (decomposition == "basis") {
      bases = register_parameter("bases", at::empty({c.num_bases, in_dim, out_dim}));
      comp = register_parameter("comp", at::empty({R, c.num_bases}));
    } else if (decomposition == "block") {
      blocks = c.num_blocks;
      weight = register_parameter("blocks", at::empty({R, blocks, in_dim / blocks, out_dim / blocks}));
    } else {
      weight = register_parameter("weight", at::empty({R, in_dim, out_dim}));
    }
    root = register_parameter("root", at::empty({in_dim, out_dim}));
    bias = register_parameter("bias", at::empty({out_dim}));
  }

  // Every W_r, [R, in, out].
  at::Tensor relation_weights() const {
    const int64_t R = relations;
    if (decomposition == "basis") return at::mm(comp, bases.view({bases.size(0), -1})).view({R, in_dim, out_dim});
    if (decomposition == "block") {
      // [R, B, in/B, 1, out/B] x eye(B) as [1, B, 1, B, 1]: block b in rows b*in/B.. and
      // columns b*out/B.., zero elsewhere.
      const at::Tensor eye = at::eye(blocks, weight.options()).view({1, blocks, 1, blocks, 1});
      return (weight.unsqueeze(3) * eye).reshape({R, in_dim, out_dim});
    }
    return weight;
  }

  int64_t in_dim, out_dim;
  bool one_hot;
  int relations;
  std::string decomposition;
  int64_t blocks = 0;
  at::Tensor weight, bases, comp, root, bias;
};

class Rgcn : public GnnModel {
 public:
  explicit Rgcn(const ModelConfig& config) : GnnModel(config) {
    for (int i = 0; i < config.num_layers; ++i) {
      convs_.push_back(register_module(
          "conv" + std::to_string(i),
          std::make_shared<RgcnConv>(config, layer_in_dim(i), layer_out_dim(i), i == 0 && config.in_dim == 0)));
    }
  }

 protected:
  at::Tensor layer(int index, const at::Tensor& x, const GraphBatch& batch, int64_t num_dst,
                   AggregatePath path) override {
    const RgcnConv& conv = *convs_[index];
    check_relational_batch(batch, conv.relations, "rgcn");
    if (conv.one_hot) {
      const at::Tensor ids = batch.node_ids;
      const at::Tensor self = conv.root.index_select(0, ids.narrow(0, 0, num_dst)) + conv.bias;
      if (conv.decomposition == "basis") {
        // sum_r mean_r(W_r[id]) = sum over edges e of (a_{r_e, b} / |N_{r_e}(d)|) V_b[id_src],
        // over the bases b: one pass over every edge with a weight per edge and basis (the
        // bases as heads), never W_r itself: B x N x out numbers instead of R x N x out.
        const int64_t edges = batch.typed_edges.edges_before(num_dst);
        if (edges == 0) return self;
        const at::Tensor weight = conv.comp.index_select(0, batch.typed_edge_relation.narrow(0, 0, edges)) *
                                  batch.typed_edge_mean_weight.narrow(0, 0, edges).unsqueeze(1);
        const at::Tensor x_bases = conv.bases.index_select(1, ids).transpose(0, 1).contiguous();  // [n, B, out]
        return aggregate(x_bases, weight, batch.typed_edges, num_dst, path).sum(1) + self;
      }
      return sum_relation_means(conv.relation_weights().index_select(1, ids), batch, num_dst, path) + self;
    }
    const at::Tensor w = conv.relation_weights();
    const at::Tensor out = at::addmm(conv.bias, x.narrow(0, 0, num_dst), conv.root);
    return at::addmm(out, relation_means(x, batch, num_dst, path), w.reshape({-1, conv.out_dim}));
  }

  // PyG's RGCNConv.reset_parameters: glorot weights (and basis coefficients), zero bias.
  void reset(at::Generator& generator) override {
    for (auto& conv : convs_) {
      for (at::Tensor* t : {&conv->weight, &conv->bases, &conv->comp, &conv->root}) {
        if (t->defined()) init_glorot(*t, generator);
      }
      conv->bias.zero_();
    }
  }

 private:
  std::vector<std::shared_ptr<RgcnConv>> convs_;
};

}  // namespace

std::shared_ptr<GnnModel> make_rgcn(const ModelConfig& config) { return std::make_shared<Rgcn>(config); }

}  // namespace partita
