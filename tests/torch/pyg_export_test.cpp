// What `partita export` and `partita predict` take from a model (models/pyg_export.h,
// GnnModel::forward_with_embeddings): every parameter under its PyG name with its shape,
// and the embeddings being the last layer's input, beside the very logits forward() gives.
// That PyG computes the same from them: tests/export/pyg_export_test.py.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "models/batch_tensors.h"
#include "models/gnn_model.h"
#include "models/pyg_export.h"
#include "sampled_batch.h"

namespace partita {
namespace {

ModelConfig config_of(const std::string& kind, int layers = 2) {
  ModelConfig c;
  c.kind = kind;
  c.in_dim = 16;
  c.hidden_dim = 8;
  c.out_dim = 4;
  c.num_layers = layers;
  c.heads = kind == "gat" ? 2 : 1;
  return c;
}

std::vector<std::pair<std::string, std::vector<int64_t>>> names_and_shapes(const ExportedParameters& exported) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> out;
  for (const auto& [name, tensor] : exported.tensors) out.emplace_back(name, tensor.sizes().vec());
  return out;
}

using Shapes = std::vector<std::pair<std::string, std::vector<int64_t>>>;

TEST(PygExportTest, ParametersTakePygNames) {
  ExportedParameters sage = export_parameters(*make_model(config_of("graphsage"), 1));
  EXPECT_EQ(sage.pyg_class, "GraphSAGE");
  EXPECT_EQ(names_and_shapes(sage), (Shapes{{"convs.0.lin_l.weight", {8, 16}},
                                            {"convs.0.lin_l.bias", {8}},
                                            {"convs.0.lin_r.weight", {8, 16}},
                                            {"convs.1.lin_l.weight", {4, 8}},
                                            {"convs.1.lin_l.bias", {4}},
                                            {"convs.1.lin_r.weight", {4, 8}}}));
  ExportedParameters gcn = export_parameters(*make_model(config_of("gcn"), 1));
  EXPECT_EQ(gcn.pyg_class, "GCN");
  EXPECT_EQ(names_and_shapes(gcn), (Shapes{{"convs.0.lin.weight", {8, 16}},
                                           {"convs.0.bias", {8}},
                                           {"convs.1.lin.weight", {4, 8}},
                                           {"convs.1.bias", {4}}}));
  // GAT: 2 heads of 4 channels concatenated, then 2 heads of the 4 classes averaged.
  ExportedParameters gat = export_parameters(*make_model(config_of("gat"), 1));
  EXPECT_EQ(gat.pyg_class, "GAT");
  EXPECT_EQ(names_and_shapes(gat), (Shapes{{"convs.0.lin.weight", {8, 16}},
                                           {"convs.0.att_src", {1, 2, 4}},
                                           {"convs.0.att_dst", {1, 2, 4}},
                                           {"convs.0.bias", {8}},
                                           {"convs.1.lin.weight", {8, 8}},
                                           {"convs.1.att_src", {1, 2, 4}},
                                           {"convs.1.att_dst", {1, 2, 4}},
                                           {"convs.1.bias", {4}}}));
  // The values are the model's own.
  auto model = make_model(config_of("graphsage"), 2);
  EXPECT_TRUE(at::equal(export_parameters(*model).tensors[3].second, model->named_parameters()["conv1.lin_l_weight"]));
}

TEST(PygExportTest, KnowledgeGraphTablesSplitComplexHalves) {
  const at::Tensor entities = at::arange(24, at::kFloat).view({6, 4});
  const at::Tensor relations = at::arange(8, at::kFloat).view({2, 4});
  ExportedParameters distmult = export_kg_tables("distmult", entities, relations);
  EXPECT_EQ(distmult.pyg_class, "DistMult");
  EXPECT_EQ(names_and_shapes(distmult), (Shapes{{"node_emb.weight", {6, 4}}, {"rel_emb.weight", {2, 4}}}));
  ExportedParameters complex = export_kg_tables("complex", entities, relations);
  EXPECT_EQ(complex.pyg_class, "ComplEx");
  EXPECT_EQ(names_and_shapes(complex), (Shapes{{"node_emb.weight", {6, 2}},
                                               {"node_emb_im.weight", {6, 2}},
                                               {"rel_emb.weight", {2, 2}},
                                               {"rel_emb_im.weight", {2, 2}}}));
  EXPECT_TRUE(at::equal(complex.tensors[1].second, entities.narrow(1, 2, 2)));  // the imaginary half
  ExportedParameters transe = export_kg_tables("transe", entities, relations);
  EXPECT_TRUE(transe.pyg_class.empty());
  EXPECT_EQ(transe.tensors[0].first, "entities");
}

class EmbeddingsTest : public ::testing::TestWithParam<std::string> {};

// The logits are forward()'s, bit for bit; the embeddings are what the last layer reads:
// fed through a one-layer model holding the last layer's weights, they give the logits.
TEST_P(EmbeddingsTest, EmbeddingsAreTheLastLayersInput) {
  const Dataset d = testing::small_sbm(500, 16, 3);
  const GraphBatch batch = to_graph_batch(testing::sample_batch(d, testing::first_nodes(32), {4, 4}));
  auto model = make_model(config_of(GetParam()), 4);
  model->eval();
  at::NoGradGuard no_grad;
  const GnnModel::Outputs outputs = model->forward_with_embeddings(batch);
  EXPECT_TRUE(at::equal(outputs.logits, model->forward(batch, false)));
  ASSERT_EQ(outputs.embeddings.sizes().vec(), (std::vector<int64_t>{32, 8}));
  EXPECT_GE(outputs.embeddings.min().item<float>(), 0.0f) << "after the ReLU";

  // The first layer alone (a one-layer model with the first layer's weights and hidden
  // outputs) gives the embeddings before the ReLU. Not for GAT: a last GAT layer averages
  // its heads, so no one-layer model computes a hidden one.
  if (GetParam() == "gat") return;
  ModelConfig first = config_of(GetParam(), 1);
  first.out_dim = first.hidden_dim;
  auto head = make_model(first, 4);
  for (auto& p : head->named_parameters()) p.value().copy_(model->named_parameters()[p.key()]);
  EXPECT_TRUE(at::allclose(head->forward(batch, false).narrow(0, 0, 32).relu(), outputs.embeddings, 1e-5, 1e-6));
}

INSTANTIATE_TEST_SUITE_P(Kinds, EmbeddingsTest, ::testing::Values("graphsage", "gcn", "gat"));

}  // namespace
}  // namespace partita
