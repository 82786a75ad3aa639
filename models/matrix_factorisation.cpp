// Biased matrix factorisation (Koren, Bell and Volinsky 2009: "Matrix factorization
// techniques for recommender systems"; Funk's SVD of the Netflix prize) as a link encoder:
// every node has a learnt row of out_dim factors and a learnt bias, and reads nothing else
// (no features, no neighbours). The trainer scores an edge (u, i) as
//   <p_u, q_i> + b_u + b_i
// (plus the training mean of a rating regression: mu + b_u + b_i + <p_u, q_i>), so the
// encoder returns [factors | bias] per seed, out_dim + 1 columns. The rows are one dense
// parameter, trained, allreduced and checkpointed as any GNN weight: the learnt input rows
// of hetero_sage are the same kind of table. It is the baseline a GNN rating model has to
// beat on the same split.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/module.h>

#include <string>

#include "base/error.h"
#include "base/random.h"
#include "models/model_kinds.h"

namespace partita {

namespace {

class MatrixFactorisation : public GnnModel {
 public:
  explicit MatrixFactorisation(const ModelConfig& config) : GnnModel(config) {
    factors_ = register_parameter("factors", at::zeros({config.num_nodes, config.out_dim}));
    bias_ = register_parameter("bias", at::zeros({config.num_nodes, 1}));
  }

  at::Tensor forward(const GraphBatch& batch, bool, uint64_t) override {
    return rows(batch);
  }

  Outputs forward_with_embeddings(const GraphBatch& batch) override {
    const at::Tensor out = rows(batch);
    return {out, out.narrow(1, 0, config().out_dim)};
  }

  // Factors N(0, init_std), biases 0.
  void reset_parameters(uint64_t seed) override {
    at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(mix64(seed, 0x6d66ull /* "mf" */));
    at::NoGradGuard no_grad;
    factors_.normal_(0.0, config().init_std, generator);
    bias_.zero_();
  }

 private:
  at::Tensor rows(const GraphBatch& batch) const {
    if (!batch.node_ids.defined() || batch.node_ids.size(0) < batch.batch_size) {
      throw Error("mf: the batch has no node ids for its " + std::to_string(batch.batch_size) + " seeds");
    }
    const at::Tensor ids = batch.node_ids.narrow(0, 0, batch.batch_size);
    if (batch.batch_size > 0 && (ids.min().item<int64_t>() < 0 || ids.max().item<int64_t>() >= config().num_nodes)) {
      throw Error("mf: a seed's node id is outside the " + std::to_string(config().num_nodes) + " rows");
    }
    return at::cat({factors_.index_select(0, ids), bias_.index_select(0, ids)}, 1);
  }

  at::Tensor factors_;  // [num_nodes, out_dim]
  at::Tensor bias_;     // [num_nodes, 1]
};

}  // namespace

std::shared_ptr<GnnModel> make_matrix_factorisation(const ModelConfig& config) {
  return std::make_shared<MatrixFactorisation>(config);
}

}  // namespace partita
