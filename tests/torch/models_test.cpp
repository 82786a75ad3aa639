// GraphSAGE, GCN and GAT: shapes, hand-computed numerics, trimming and the two aggregation
// paths leaving results unchanged, dropout keyed by the step, and learning.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>
#include <string>
#include <vector>

#include "base/error.h"
#include "models/batch_tensors.h"
#include "models/gnn_model.h"
#include "models/keyed_dropout.h"
#include "models/training.h"
#include "sampled_batch.h"

namespace partita {
namespace {

ModelConfig config_of(const std::string& kind) {
  ModelConfig c;
  c.kind = kind;
  c.in_dim = 16;
  c.hidden_dim = 32;
  c.out_dim = 4;
  c.num_layers = 3;
  c.heads = kind == "gat" ? 4 : 1;
  c.dropout = 0.5;
  return c;
}

const GraphBatch& sampled_batch() {
  static const GraphBatch batch = [] {
    Dataset d = testing::small_sbm();
    return to_graph_batch(testing::sample_batch(d, testing::first_nodes(64), {5, 4, 3}));
  }();
  return batch;
}

struct Pass {
  at::Tensor logits;
  std::vector<at::Tensor> grads;
};

Pass forward_backward(GnnModel& model, const GraphBatch& batch, bool train) {
  model.zero_grad();
  Pass pass;
  pass.logits = model.forward(batch, train, step_key(1, 2, 3, 0));
  cross_entropy_sum(pass.logits, batch.y).backward();
  for (const auto& p : model.parameters()) pass.grads.push_back(p.grad().clone());
  pass.logits = pass.logits.detach();
  return pass;
}

void expect_same_pass(const Pass& a, const Pass& b, const std::string& what) {
  EXPECT_TRUE(at::allclose(a.logits, b.logits, 1e-5, 1e-6))
      << what << ": logits differ by " << (a.logits - b.logits).abs().max().item<float>();
  ASSERT_EQ(a.grads.size(), b.grads.size());
  for (size_t i = 0; i < a.grads.size(); ++i) {
    EXPECT_TRUE(at::allclose(a.grads[i], b.grads[i], 1e-5, 1e-6))
        << what << ": gradient " << i << " differs by " << (a.grads[i] - b.grads[i]).abs().max().item<float>();
  }
}

class ModelKindTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ModelKindTest, LogitsCoverTheSeeds) {
  auto model = make_model(config_of(GetParam()), 1);
  at::Tensor logits = model->forward(sampled_batch(), false);
  EXPECT_EQ(logits.sizes(), (at::IntArrayRef{64, 4}));
  EXPECT_TRUE(at::isfinite(logits).all().item<bool>());
}

TEST_P(ModelKindTest, TrimmingLeavesLogitsAndGradientsUnchanged) {
  ModelConfig trimmed = config_of(GetParam()), full = trimmed;
  full.trim = false;
  auto a = make_model(trimmed, 3), b = make_model(full, 3);
  for (bool train : {false, true}) {
    expect_same_pass(forward_backward(*a, sampled_batch(), train),
                     forward_backward(*b, sampled_batch(), train),
                     std::string(train ? "training" : "evaluation"));
  }
}

TEST_P(ModelKindTest, CscAggregationEqualsIndexAddAggregation) {
  ModelConfig csc = config_of(GetParam()), index_add = csc;
  index_add.csc_aggregation = false;
  auto a = make_model(csc, 4), b = make_model(index_add, 4);
  expect_same_pass(forward_backward(*a, sampled_batch(), true),
                   forward_backward(*b, sampled_batch(), true), "index_add_ path");
}

TEST_P(ModelKindTest, SameSeedSameWeights) {
  auto a = make_model(config_of(GetParam()), 5), b = make_model(config_of(GetParam()), 5);
  auto c = make_model(config_of(GetParam()), 6);
  EXPECT_EQ(parameter_hash(*a), parameter_hash(*b));
  EXPECT_NE(parameter_hash(*a), parameter_hash(*c));
}

TEST_P(ModelKindTest, DropoutDependsOnTheKeyAlone) {
  auto model = make_model(config_of(GetParam()), 7);
  const GraphBatch& batch = sampled_batch();
  at::Tensor first = model->forward(batch, true, 42).detach();
  model->forward(batch, true, 43);  // whatever ran in between
  EXPECT_TRUE(at::equal(first, model->forward(batch, true, 42).detach()));
  EXPECT_FALSE(at::equal(first, model->forward(batch, true, 43).detach()));
  // Evaluation has no dropout: the key does not matter.
  EXPECT_TRUE(at::equal(model->forward(batch, false, 1), model->forward(batch, false, 2)));
}

TEST_P(ModelKindTest, InputDropoutIsKeyedAndOnlyInTraining) {
  ModelConfig plain = config_of(GetParam()), dropped = plain;
  dropped.input_dropout = 0.5;
  auto a = make_model(plain, 8), b = make_model(dropped, 8);
  const GraphBatch& batch = sampled_batch();
  EXPECT_TRUE(at::equal(a->forward(batch, false), b->forward(batch, false))) << "evaluation drops nothing";
  const at::Tensor first = b->forward(batch, true, 42).detach();
  EXPECT_FALSE(at::equal(first, a->forward(batch, true, 42).detach())) << "the input is dropped in training";
  EXPECT_TRUE(at::equal(first, b->forward(batch, true, 42).detach()));
  EXPECT_FALSE(at::equal(first, b->forward(batch, true, 43).detach()));
}

INSTANTIATE_TEST_SUITE_P(Kinds, ModelKindTest, ::testing::Values("graphsage", "gcn", "gat"));

GraphBatch triangle(std::vector<float> x, int64_t dim) {
  return to_graph_batch(testing::triangle_batch(std::move(x), dim));
}

void set(at::Tensor p, std::vector<float> values) {
  at::NoGradGuard no_grad;
  p.copy_(at::tensor(values).view(p.sizes()));
}

at::Tensor parameter(GnnModel& model, const std::string& name) {
  return model.named_parameters()[name];
}

TEST(ModelNumericsTest, GcnMatchesTheHandComputedPropagation) {
  ModelConfig c;
  c.kind = "gcn";
  c.in_dim = 2;
  c.out_dim = 1;
  c.num_layers = 1;
  auto model = make_model(c, 0);
  set(parameter(*model, "conv0.weight"), {0.5f, -1.0f});
  set(parameter(*model, "conv0.bias"), {0.25f});
  // h = x W^T = 0.5 x0 - x1.
  GraphBatch batch = triangle({2, 0, 4, 1, 8, 2}, 2);
  const double h0 = 1, h1 = 1, h2 = 2;
  // Degrees with self loops: 3, 2, 1.
  const double expected[3] = {
      h0 / 3 + h1 / std::sqrt(6.0) + h2 / std::sqrt(3.0) + 0.25,
      h1 / 2 + h2 / std::sqrt(2.0) + 0.25,
      h2 + 0.25,
  };
  at::Tensor logits = model->forward(batch, false);
  for (int v = 0; v < 3; ++v) EXPECT_NEAR(logits[v][0].item<float>(), expected[v], 1e-6) << v;
}

TEST(ModelNumericsTest, GatMatchesTheHandComputedAttention) {
  ModelConfig c;
  c.kind = "gat";
  c.in_dim = 1;
  c.out_dim = 1;
  c.num_layers = 1;
  c.heads = 2;  // the last layer averages its heads
  auto model = make_model(c, 0);
  set(parameter(*model, "conv0.weight"), {1, 2});  // head 0: h = x; head 1: h = 2x
  set(parameter(*model, "conv0.att_src"), {0.5f, -1});
  set(parameter(*model, "conv0.att_dst"), {-1, 0.5f});
  set(parameter(*model, "conv0.bias"), {0});
  GraphBatch batch = triangle({1, 2, 4}, 1);
  auto leaky = [](double z) { return z > 0 ? z : 0.2 * z; };
  // Node 0 attends to itself (h = x0) and to nodes 1 and 2.
  auto attend = [&](double a_src, double a_dst, std::vector<double> h_from, double h_self) {
    double num = 0, den = 0;
    h_from.insert(h_from.begin(), h_self);
    for (double h : h_from) {
      const double p = std::exp(leaky(a_src * h + a_dst * h_self));
      num += p * h;
      den += p;
    }
    return num / den;
  };
  const double node0 = (attend(0.5, -1, {2, 4}, 1) + attend(-1, 0.5, {4, 8}, 2)) / 2;
  const double node1 = (attend(0.5, -1, {4}, 2) + attend(-1, 0.5, {8}, 4)) / 2;
  const double node2 = (4 + 8) / 2.0;  // only its self loop
  at::Tensor logits = model->forward(batch, false);
  EXPECT_NEAR(logits[0][0].item<float>(), node0, 1e-6);
  EXPECT_NEAR(logits[1][0].item<float>(), node1, 1e-6);
  EXPECT_NEAR(logits[2][0].item<float>(), node2, 1e-6);
}

TEST(ModelNumericsTest, GraphSageAddsTheNeighbourMeanAndTheRoot) {
  ModelConfig c;
  c.kind = "graphsage";
  c.in_dim = 1;
  c.out_dim = 1;
  c.num_layers = 1;
  auto model = make_model(c, 0);
  set(parameter(*model, "conv0.lin_l_weight"), {2});
  set(parameter(*model, "conv0.lin_l_bias"), {0.5f});
  set(parameter(*model, "conv0.lin_r_weight"), {-1});
  at::Tensor logits = model->forward(triangle({1, 2, 4}, 1), false);
  EXPECT_FLOAT_EQ(logits[0][0].item<float>(), 2 * 3 + 0.5f - 1);  // mean(2, 4) = 3
  EXPECT_FLOAT_EQ(logits[1][0].item<float>(), 2 * 4 + 0.5f - 2);
  EXPECT_FLOAT_EQ(logits[2][0].item<float>(), 0.5f - 4);  // no neighbours: mean 0
}

TEST(ModelLearningTest, GraphSageLearnsASmallGraph) {
  // Full neighbourhoods over the whole graph: one batch with every node a seed, the loss on
  // the training nodes only.
  Dataset d = testing::small_sbm(2000, 16, 3);
  MiniBatch full = testing::sample_batch(d, testing::first_nodes(d.num_nodes), {-1, -1});
  GraphBatch batch = to_graph_batch(std::move(full));
  at::Tensor labels = batch.y.clone().fill_(-1);
  for (int64_t v : d.train_idx) labels[v] = d.y[v];
  at::Tensor test_labels = batch.y.clone().fill_(-1);
  for (int64_t v : d.test_idx) test_labels[v] = d.y[v];

  ModelConfig c;
  c.in_dim = 16;
  c.hidden_dim = 32;
  c.out_dim = 4;
  c.num_layers = 2;
  auto model = make_model(c, 1);
  auto optimizer = make_optimizer("adam", model->parameters(), 0.01, 5e-4);
  for (int epoch = 0; epoch < 60; ++epoch) {
    optimizer->zero_grad();
    at::Tensor loss = cross_entropy_sum(model->forward(batch, true, epoch), labels) /
                      static_cast<double>(d.train_idx.size());
    loss.backward();
    optimizer->step();
  }
  at::Tensor logits = model->forward(batch, false);
  const double accuracy = static_cast<double>(count_correct(logits, test_labels)) /
                          static_cast<double>(count_labelled(logits, test_labels));
  // Chance is 0.25, a node's own features give about 0.4 and the neighbourhood mean 0.8.
  EXPECT_GT(accuracy, 0.8);
}

void expect_usage_error(const ModelConfig& c, const std::string& field) {
  try {
    make_model(c, 0);
    ADD_FAILURE() << "no error; expected one naming " << field;
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(field + ":", 0), 0u) << e.what();
  }
}

TEST(ModelConfigTest, BadValuesNameTheField) {
  ModelConfig c = config_of("gat");
  make_model(c, 0);  // valid as it is
  ModelConfig bad = c;
  bad.kind = "gin";
  expect_usage_error(bad, "model.kind");
  bad = c;
  bad.in_dim = 0;
  expect_usage_error(bad, "model.in_dim");
  bad = c;
  bad.out_dim = -1;
  expect_usage_error(bad, "model.out_dim");
  bad = c;
  bad.hidden_dim = 0;
  expect_usage_error(bad, "model.hidden_dim");
  bad = c;
  bad.num_layers = 0;
  expect_usage_error(bad, "model.num_layers");
  bad = c;
  bad.heads = 3;  // 32 hidden features do not split into 3 heads
  expect_usage_error(bad, "model.heads");
  bad = c;
  bad.dropout = 1;
  expect_usage_error(bad, "model.dropout");
  bad = c;
  bad.input_dropout = -0.1;
  expect_usage_error(bad, "model.input_dropout");
}

TEST(ModelConfigTest, FeaturesOfTheWrongWidthAreAnError) {
  ModelConfig c = config_of("graphsage");
  c.in_dim = 3;
  auto model = make_model(c, 0);
  EXPECT_THROW(model->forward(sampled_batch(), false), Error);
}

TEST(KeyedDropoutTest, DropsTheRequestedFractionAndScalesTheRest) {
  at::Tensor x = at::ones({1000, 100});
  at::Tensor y = keyed_dropout(x, 0.3, 9);
  const double kept = y.ne(0).sum().item<double>() / x.numel();
  EXPECT_NEAR(kept, 0.7, 0.01);
  EXPECT_NEAR(y.sum().item<double>() / x.numel(), 1.0, 0.02);
  EXPECT_TRUE(at::equal(y, keyed_dropout(x, 0.3, 9)));
  EXPECT_FALSE(at::equal(y, keyed_dropout(x, 0.3, 10)));
  EXPECT_TRUE(at::equal(keyed_dropout(x, 0, 9), x));
  EXPECT_THROW(keyed_dropout(x, 1.0, 9), UsageError);
}

TEST(KeyedDropoutTest, GradientUsesTheSameMask) {
  at::Tensor x = at::randn({50, 20}).requires_grad_(true);
  at::Tensor y = keyed_dropout(x, 0.5, 3);
  y.sum().backward();
  const at::Tensor mask = keyed_dropout(at::ones({50, 20}), 0.5, 3);  // 2 kept, 0 dropped
  EXPECT_TRUE(at::equal(x.grad(), mask));
  EXPECT_TRUE(at::equal(y, x.detach() * mask));
}

TEST(KeyedDropoutTest, FusedReluGivesTheSameValuesAndGradients) {
  // Large enough for several parallel chunks and every vector width's tail.
  const at::Tensor x = at::randn({301, 257});
  const at::Tensor upstream = at::randn({301, 257});
  at::Tensor separate_x = x.clone().requires_grad_(true);
  at::Tensor separate = keyed_dropout(at::relu(separate_x), 0.4, 17);
  separate.backward(upstream);
  at::Tensor fused_x = x.clone().requires_grad_(true);
  at::Tensor fused = relu_keyed_dropout(fused_x, 0.4, 17);
  fused.backward(upstream);
  EXPECT_TRUE(at::equal(fused, separate));
  EXPECT_TRUE(at::equal(fused_x.grad(), separate_x.grad()));
  EXPECT_TRUE(at::equal(relu_keyed_dropout(x, 0, 17), at::relu(x)));
  EXPECT_THROW(relu_keyed_dropout(x, -0.1, 17), UsageError);
}

}  // namespace
}  // namespace partita
