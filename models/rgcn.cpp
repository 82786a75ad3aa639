// R-GCN (Schlichtkrull et al. 2018, eq. 2), as PyG's RGCNConv with mean aggregation:
//   h'_i = W_0 h_i + sum_r (1 / |N_r(i)|) sum_{j in N_r(i)} W_r h_j + b
// with the self-connection W_0 (PyG's root weight) and the relation weights W_r either
// full, or decomposed (§2.2): basis W_r = sum_b a_rb V_b, or block-diagonal
// W_r = diag(Q_r1, ..., Q_rB). The per-relation means run first and the R relations then
// take one product, [means of r = 1..R] x [W_1; ...; W_R]; a featureless first layer
// gathers W_r's rows at the batch's node ids (one-hot input, models/relational.h). A first
// layer whose node types read both features and learnt rows (ModelConfig::type_inputs) is
// two such convs summed, a dense one and a one-hot one without bias.
#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "models/model_kinds.h"
#include "models/relational.h"

namespace partita {

namespace {

struct RgcnConv : torch::nn::Module {
  RgcnConv(const ModelConfig& c, int64_t in, int64_t out, bool one_hot, bool with_bias = true)
      : in_dim(one_hot ? one_hot_rows(c) : in), out_dim(out), one_hot(one_hot), relations(c.num_relations),
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
    if (with_bias) bias = register_parameter("bias", at::empty({out_dim}));
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

class Rgcn : public LayeredModel {
 public:
  explicit Rgcn(const ModelConfig& config) : LayeredModel(config) {
    for (int i = 0; i < config.num_layers; ++i) {
      convs_.push_back(register_module(
          "conv" + std::to_string(i),
          std::make_shared<RgcnConv>(config, layer_in_dim(i), layer_out_dim(i), i == 0 && config.in_dim == 0)));
    }
    if (config.in_dim > 0 && config.reads_learnt_rows()) {
      rows_ = register_module("rows", std::make_shared<RgcnConv>(config, 0, layer_out_dim(0), true, false));
    }
  }

 protected:
  at::Tensor layer(int index, const at::Tensor& x, const GraphBatch& batch, int64_t num_dst,
                   AggregatePath path) override {
    const RgcnConv& conv = *convs_[index];
    check_relational_batch(batch, conv.relations, "rgcn");
    if (conv.one_hot) return one_hot_terms(conv, batch, num_dst, path, {}) + conv.bias;
    const at::Tensor h = index == 0 ? read_features(config(), batch, x) : x;
    const at::Tensor w = conv.relation_weights();
    const at::Tensor out = at::addmm(at::addmm(conv.bias, h.narrow(0, 0, num_dst), conv.root),
                                     relation_means(h, batch, num_dst, path), w.reshape({-1, conv.out_dim}));
    if (index == 0 && rows_) return out + one_hot_terms(*rows_, batch, num_dst, path, learnt_row_mask(config(), batch));
    return out;
  }

  // Mirrors layer(), as GraphSage::step_cost does (models/step_cost.h): per layer, the
  // products forward() and backward() run and the aggregations. A dense layer: W_r from the
  // bases (basis decomposition: comp [R, B] x bases [B, in*out]), the root product and
  // [means of r] x [W_1; ...; W_R]; each mean is 2 FLOPs per edge and input feature, again
  // for its gradient when the input needs one. A one-hot first layer runs no GEMM (its
  // products are gathers of rows): only its aggregation, over B bases as heads with the
  // basis decomposition, of out features, forward and backward. Bytes (StepBytes) as
  // GraphSage::step_cost counts them: the features of every batch node for a dense first
  // layer; the stacked means written as R target rows per row; a one-hot layer's gather of
  // its learnt rows ([nodes, B, out], and the roots of its rows) and its aggregation, each
  // forward and backward; Adam on every parameter, the learnt rows included.
  StepCost step_cost(const GraphBatch& batch) const override {
    StepCost cost;
    const int layers = config().num_layers;
    const double value = 4;
    if (!convs_[0]->one_hot) {
      cost.bytes.features = 2 * value * static_cast<double>(batch.num_nodes) * static_cast<double>(convs_[0]->in_dim);
      if (config().input_dropout > 0) cost.bytes.activations += cost.bytes.features;  // forward only
    }
    for (int i = 0; i < layers; ++i) {
      const RgcnConv& conv = *convs_[i];
      const int64_t ci = conv.in_dim, co = conv.out_dim, R = conv.relations;
      const int64_t rows = batch.layer_rows(i, layers, config().trim);
      double edges = 0;
      for (const CscEdges& relation : batch.relations) edges += static_cast<double>(relation.edges_before(rows));
      const bool basis = conv.decomposition == "basis";
      const int64_t B = basis ? conv.bases.size(0) : 0;
      const int64_t heads = (basis ? B : 1) * co;
      cost.bytes.activations += i + 1 < layers ? activation_bytes(rows, co)
                                               : 2 * value * static_cast<double>(batch.batch_size) * static_cast<double>(co);
      // A one-hot conv's learnt rows: gathered (read, written) and aggregated, each way.
      const auto one_hot_bytes = [&] {
        const double gathered = static_cast<double>(batch.num_nodes * heads + rows * co);
        return 2 * (2 * value * gathered + aggregation_bytes(edges, rows, heads));
      };
      if (conv.one_hot) {
        cost.aggregation_flops += 2 * 2 * edges * static_cast<double>(heads);
        cost.bytes.aggregation += one_hot_bytes();
        continue;
      }
      if (i == 0 && rows_) {
        cost.aggregation_flops += 2 * 2 * edges * static_cast<double>(heads);
        cost.bytes.aggregation += one_hot_bytes();
      }
      if (basis) {
        cost.add({R, B, ci * co, false, false});  // W = comp x bases
        cost.add({R, ci * co, B, false, true});   // grad comp = grad_W x bases^T
        cost.add({B, R, ci * co, true, false});   // grad bases = comp^T x grad_W
      }
      const bool input_grad = i > 0;
      // x [m, k] x W [k, co]: forward, grad_W = x^T grad, and grad_x = grad W^T.
      auto linear = [&](int64_t m, int64_t k) {
        cost.add({m, k, co, false, false});
        cost.add({k, m, co, true, false});
        if (input_grad) cost.add({m, co, k, false, true});
      };
      linear(rows, ci);      // the self-connection (root)
      linear(rows, R * ci);  // the relations' means, stacked
      cost.aggregation_flops += (input_grad ? 2 : 1) * 2 * edges * static_cast<double>(ci);
      cost.bytes.aggregation += (input_grad ? 2 : 1) * aggregation_bytes(edges, R * rows, ci);
    }
    int64_t parameters = 0;
    for (const at::Tensor& p : this->parameters()) parameters += p.numel();
    cost.bytes.optimizer = adam_bytes(parameters);
    return cost;
  }

  // PyG's RGCNConv.reset_parameters: glorot weights (and basis coefficients), zero bias.
  void reset(at::Generator& generator) override {
    std::vector<std::shared_ptr<RgcnConv>> all = convs_;
    if (rows_) all.push_back(rows_);
    for (auto& conv : all) {
      for (at::Tensor* t : {&conv->weight, &conv->bases, &conv->comp, &conv->root}) {
        if (t->defined()) init_glorot(*t, generator);
      }
      if (conv->bias.defined()) conv->bias.zero_();
    }
  }

 private:
  // [num_dst, out]: the self and relation terms of one-hot rows (each node's learnt row),
  // without bias; `mask` [n, 1], when defined, zeroes the rows of nodes that read none.
  at::Tensor one_hot_terms(const RgcnConv& conv, const GraphBatch& batch, int64_t num_dst, AggregatePath path,
                           const at::Tensor& mask) const {
    const at::Tensor ids = one_hot_row_ids(config(), batch);
    at::Tensor self = conv.root.index_select(0, ids.narrow(0, 0, num_dst));
    if (mask.defined()) self = self * mask.narrow(0, 0, num_dst);
    if (conv.decomposition == "basis") {
      // sum_r mean_r(W_r[id]) = sum over edges e of (a_{r_e, b} / |N_{r_e}(d)|) V_b[id_src],
      // over the bases b: one pass over every edge with a weight per edge and basis (the
      // bases as heads), never W_r itself: B x N x out numbers instead of R x N x out.
      const int64_t edges = batch.typed_edges.edges_before(num_dst);
      if (edges == 0) return self;
      const at::Tensor weight = conv.comp.index_select(0, batch.typed_edge_relation.narrow(0, 0, edges)) *
                                batch.typed_edge_mean_weight.narrow(0, 0, edges).unsqueeze(1);
      at::Tensor x_bases = conv.bases.index_select(1, ids).transpose(0, 1).contiguous();  // [n, B, out]
      if (mask.defined()) x_bases = x_bases * mask.unsqueeze(2);
      return aggregate(x_bases, weight, batch.typed_edges, num_dst, path).sum(1) + self;
    }
    at::Tensor messages = conv.relation_weights().index_select(1, ids);  // [R, n, out]
    if (mask.defined()) messages = messages * mask.unsqueeze(0);
    return sum_relation_means(messages, batch, num_dst, path) + self;
  }

  std::vector<std::shared_ptr<RgcnConv>> convs_;
  std::shared_ptr<RgcnConv> rows_;  // the first layer's learnt rows beside features
};

}  // namespace

std::shared_ptr<GnnModel> make_rgcn(const ModelConfig& config) { return std::make_shared<Rgcn>(config); }

}  // namespace partita
