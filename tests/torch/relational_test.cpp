// The relational models (R-GCN, to_hetero GraphSAGE): each layer equals its dense formula
// on a toy graph (features and one-hot inputs), the decompositions have the shapes and
// parameter counts of the paper, trimming and the aggregation path leave sampled batches'
// logits unchanged, and misuse is a named error.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "models/batch_tensors.h"
#include "models/gnn_model.h"
#include "sampled_batch.h"

namespace partita {
namespace {

#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << "'" << (part) << "' not in: " << (text)

int64_t parameter_count(GnnModel& m) {
  int64_t n = 0;
  for (const at::Tensor& p : m.parameters()) n += p.numel();
  return n;
}

// Five nodes, types A (0, 1, 2) and B (3, 4); relations r0: A -> A, r1: B -> A, r2: A -> B.
const std::vector<int32_t> kRelationDst = {0, 0, 1};
const std::vector<int64_t> kSrc = {1, 2, 3, 4, 4, 0, 1, 2, 2};
const std::vector<int64_t> kDst = {0, 0, 0, 0, 1, 3, 3, 4, 1};
const std::vector<int32_t> kType = {0, 0, 1, 1, 1, 2, 2, 2, 0};

struct Toy {
  std::vector<int32_t> node_type_by_id;
  GraphBatch batch;
};

// node_ids: the batch's global ids (a permutation of a graph of `graph_nodes`, for the
// one-hot input); every node is a seed; x [5, dim] (dim 0: featureless).
Toy toy(const at::Tensor& x, std::vector<int64_t> node_ids, int64_t graph_nodes) {
  Toy t;
  t.node_type_by_id.assign(static_cast<size_t>(graph_nodes), 0);
  for (int i = 3; i < 5; ++i) t.node_type_by_id[node_ids[i]] = 1;
  MiniBatch b;
  b.node_ids = std::move(node_ids);
  b.row = kSrc;
  b.col = kDst;
  b.edge_types = kType;
  b.batch_size = 5;
  b.feature_dim = x.size(1);
  b.x.assign(x.data_ptr<float>(), x.data_ptr<float>() + x.numel());
  t.batch = to_graph_batch(b, HeteroLayout{3, &t.node_type_by_id});
  return t;
}

// mean_r [5, C] of every relation, densely: A_r x / max(in-degree_r, 1).
std::vector<at::Tensor> dense_means(const at::Tensor& x) {
  std::vector<at::Tensor> means;
  for (int r = 0; r < 3; ++r) {
    at::Tensor a = at::zeros({5, 5});
    for (size_t e = 0; e < kSrc.size(); ++e) {
      if (kType[e] == r) a[kDst[e]][kSrc[e]] += 1;
    }
    means.push_back(at::mm(a, x) / a.sum(1, true).clamp_min(1));
  }
  return means;
}

ModelConfig relational(const std::string& kind, int64_t in_dim, int64_t num_nodes = 0) {
  ModelConfig c;
  c.kind = kind;
  c.in_dim = in_dim;
  c.num_nodes = num_nodes;
  c.out_dim = 4;
  c.hidden_dim = 4;
  c.num_layers = 1;
  c.num_relations = 3;
  c.num_node_types = 2;
  c.relation_dst_type = kRelationDst;
  return c;
}

at::Tensor param(GnnModel& m, const std::string& name) { return m.named_parameters()[name].detach(); }

// W_r of every relation, from the parameters, built independently of the model's code.
at::Tensor relation_weights(GnnModel& m, const std::string& decomposition, int64_t in, int64_t out,
                            const std::string& module = "conv0") {
  if (decomposition == "basis") {
    const at::Tensor bases = param(m, module + ".bases"), comp = param(m, module + ".comp");
    std::vector<at::Tensor> w;
    for (int r = 0; r < 3; ++r) {
      at::Tensor sum = at::zeros({in, out});
      for (int64_t b = 0; b < bases.size(0); ++b) sum += comp[r][b] * bases[b];
      w.push_back(sum);
    }
    return at::stack(w);
  }
  if (decomposition == "block") {
    const at::Tensor q = param(m, "conv0.blocks");  // [R, B, in/B, out/B]
    const int64_t nb = q.size(1), ki = q.size(2), ko = q.size(3);
    at::Tensor w = at::zeros({3, in, out});
    for (int r = 0; r < 3; ++r) {
      for (int64_t b = 0; b < nb; ++b) w[r].narrow(0, b * ki, ki).narrow(1, b * ko, ko).copy_(q[r][b]);
    }
    return w;
  }
  return param(m, module + ".weight");
}

class RgcnDecompositionTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RgcnDecompositionTest, LayerEqualsTheDenseFormula) {
  ModelConfig c = relational("rgcn", 6);
  c.decomposition = GetParam();
  c.num_bases = 2;
  c.num_blocks = 2;
  auto model = make_model(c, 3);
  {  // a non-zero bias, so that it is checked too
    at::NoGradGuard no_grad;
    model->named_parameters()["conv0.bias"].uniform_(-1, 1);
  }
  const at::Tensor x = at::randn({5, 6});
  Toy t = toy(x, {0, 1, 2, 3, 4}, 5);
  const at::Tensor w = relation_weights(*model, GetParam(), 6, 4);
  at::Tensor expected = at::mm(x, param(*model, "conv0.root")) + param(*model, "conv0.bias");
  const std::vector<at::Tensor> means = dense_means(x);
  for (int r = 0; r < 3; ++r) expected += at::mm(means[r], w[r]);
  EXPECT_TRUE(at::allclose(model->forward(t.batch, false), expected, 1e-4, 1e-5));
}

TEST_P(RgcnDecompositionTest, ShapesAndParameterCountsAreThePapers) {
  ModelConfig c = relational("rgcn", 8);
  c.decomposition = GetParam();
  c.num_bases = 2;
  c.num_blocks = 2;
  auto model = make_model(c, 1);
  auto params = model->named_parameters();
  // R = 3 relations, 8 -> 4: root 8 x 4 and bias 4 in every case.
  const int64_t shared = 8 * 4 + 4;
  if (GetParam() == "basis") {
    EXPECT_EQ(params["conv0.bases"].sizes(), (std::vector<int64_t>{2, 8, 4}));
    EXPECT_EQ(params["conv0.comp"].sizes(), (std::vector<int64_t>{3, 2}));
    EXPECT_EQ(parameter_count(*model), 2 * 8 * 4 + 3 * 2 + shared);
  } else if (GetParam() == "block") {
    EXPECT_EQ(params["conv0.blocks"].sizes(), (std::vector<int64_t>{3, 2, 4, 2}));
    EXPECT_EQ(parameter_count(*model), 3 * 2 * (4 * 2) + shared);
  } else {
    EXPECT_EQ(params["conv0.weight"].sizes(), (std::vector<int64_t>{3, 8, 4}));
    EXPECT_EQ(parameter_count(*model), 3 * 8 * 4 + shared);
  }
}

INSTANTIATE_TEST_SUITE_P(Decompositions, RgcnDecompositionTest, ::testing::Values("none", "basis", "block"));

TEST(RgcnTest, FeaturelessInputIsOneHotByNodeId) {
  // Global ids of a 7-node graph: the input of node i is one-hot(ids[i]) of width 7.
  const std::vector<int64_t> ids = {5, 0, 6, 2, 3};
  ModelConfig c = relational("rgcn", 0, 7);
  c.decomposition = "basis";
  c.num_bases = 2;
  auto model = make_model(c, 4);
  Toy t = toy(at::zeros({5, 0}), ids, 7);
  const at::Tensor x = at::zeros({5, 7});
  for (int i = 0; i < 5; ++i) x[i][ids[i]] = 1;
  const at::Tensor w = relation_weights(*model, "basis", 7, 4);
  at::Tensor expected = at::mm(x, param(*model, "conv0.root")) + param(*model, "conv0.bias");
  const std::vector<at::Tensor> means = dense_means(x);
  for (int r = 0; r < 3; ++r) expected += at::mm(means[r], w[r]);
  EXPECT_TRUE(at::allclose(model->forward(t.batch, false), expected, 1e-4, 1e-5));
}

// PyG's to_hetero(GraphSAGE): sum over the relations r into type(i) of
// lin_l_r(mean_r(i)) + b_r + lin_r_r(x_i).
at::Tensor dense_hetero_sage(const at::Tensor& lin_l, const at::Tensor& bias, const at::Tensor& lin_r, const at::Tensor& x) {
  const std::vector<at::Tensor> means = dense_means(x);
  at::Tensor out = at::zeros({5, 4});
  for (int i = 0; i < 5; ++i) {
    const int type = i < 3 ? 0 : 1;
    for (int r = 0; r < 3; ++r) {
      if (kRelationDst[r] != type) continue;
      out[i] += at::mv(lin_l[r].t(), means[r][i]) + bias[r] + at::mv(lin_r[r].t(), x[i]);
    }
  }
  return out;
}

at::Tensor dense_hetero_sage(GnnModel& m, const at::Tensor& x) {
  return dense_hetero_sage(param(m, "conv0.lin_l"), param(m, "conv0.lin_l_bias"), param(m, "conv0.lin_r"), x);
}

TEST(HeteroSageTest, LayerEqualsToHeteroSummedPerDestinationType) {
  auto model = make_model(relational("hetero_sage", 6), 5);
  const at::Tensor x = at::randn({5, 6});
  Toy t = toy(x, {0, 1, 2, 3, 4}, 5);
  EXPECT_TRUE(at::allclose(model->forward(t.batch, false), dense_hetero_sage(*model, x), 1e-4, 1e-5));
  // Three relations, 6 -> 4 each: lin_l and lin_r 6 x 4, a bias of 4.
  EXPECT_EQ(parameter_count(*model), 3 * (6 * 4 + 4 + 6 * 4));
}

TEST(HeteroSageTest, FeaturelessInputIsOneHotByNodeId) {
  const std::vector<int64_t> ids = {5, 0, 6, 2, 3};
  auto model = make_model(relational("hetero_sage", 0, 7), 6);
  Toy t = toy(at::zeros({5, 0}), ids, 7);
  at::Tensor x = at::zeros({5, 7});
  for (int i = 0; i < 5; ++i) x[i][ids[i]] = 1;
  EXPECT_TRUE(at::allclose(model->forward(t.batch, false), dense_hetero_sage(*model, x), 1e-4, 1e-5));
}

// model.input {B: shared}: the nodes of type B (batch nodes 3 and 4) read one row of the
// type (row 7 + 1 of a 9-row weight: 7 nodes, then one per type) whatever their ids, so
// each is known by its neighbours only; type A's nodes keep their own rows.
at::Tensor one_hot_with_shared_type_b(const std::vector<int64_t>& ids) {
  at::Tensor x = at::zeros({5, 9});
  for (int i = 0; i < 3; ++i) x[i][ids[i]] = 1;
  for (int i = 3; i < 5; ++i) x[i][7 + 1] = 1;
  return x;
}

TEST(HeteroSageTest, ASharedInputTypeReadsOneRowForAllItsNodes) {
  const std::vector<int64_t> ids = {5, 0, 6, 2, 3};
  ModelConfig c = relational("hetero_sage", 0, 7);
  c.type_inputs = {"learnt", "shared"};
  auto model = make_model(c, 6);
  EXPECT_EQ(param(*model, "conv0.lin_r").size(1), 9);
  Toy t = toy(at::zeros({5, 0}), ids, 7);
  const at::Tensor out = model->forward(t.batch, false);
  EXPECT_TRUE(at::allclose(out, dense_hetero_sage(*model, one_hot_with_shared_type_b(ids)), 1e-4, 1e-5));
  // Without the shared type, B's nodes read their own rows: another output.
  c.type_inputs.clear();
  EXPECT_FALSE(at::allclose(make_model(c, 6)->forward(t.batch, false), out, 1e-4, 1e-5));
}

TEST(RgcnTest, ASharedInputTypeReadsOneRowForAllItsNodes) {
  const std::vector<int64_t> ids = {5, 0, 6, 2, 3};
  ModelConfig c = relational("rgcn", 0, 7);
  c.decomposition = "basis";
  c.num_bases = 2;
  c.type_inputs = {"learnt", "shared"};
  auto model = make_model(c, 4);
  Toy t = toy(at::zeros({5, 0}), ids, 7);
  const at::Tensor x = one_hot_with_shared_type_b(ids);
  const at::Tensor w = relation_weights(*model, "basis", 9, 4);
  at::Tensor expected = at::mm(x, param(*model, "conv0.root")) + param(*model, "conv0.bias");
  const std::vector<at::Tensor> means = dense_means(x);
  for (int r = 0; r < 3; ++r) expected += at::mm(means[r], w[r]);
  EXPECT_TRUE(at::allclose(model->forward(t.batch, false), expected, 1e-4, 1e-5));
}

// model.input {A: features+learnt, B: shared | features}: the first layer is the layer of
// the input [features | one-hot row], where type A's nodes read both their 6 features and
// a row of their own, and type B's nodes either one row of the type and no features
// (shared: rows 7 nodes + 2 types) or their features and no row. Returns that input.
at::Tensor features_and_rows(const at::Tensor& x, const std::vector<int64_t>& ids, const std::string& type_b) {
  const bool shared = type_b == "shared";
  at::Tensor rows = at::zeros({5, shared ? 9 : 7});
  for (int i = 0; i < 3; ++i) rows[i][ids[i]] = 1;
  if (shared) {
    for (int i = 3; i < 5; ++i) rows[i][7 + 1] = 1;
  }
  at::Tensor features = x.clone();
  if (shared) features.narrow(0, 3, 2).zero_();
  return at::cat({features, rows}, 1);
}

class FeaturesAndLearntTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FeaturesAndLearntTest, HeteroSageSumsTheFeaturesProjectionAndALearntRow) {
  const std::vector<int64_t> ids = {5, 0, 6, 2, 3};
  ModelConfig c = relational("hetero_sage", 6, 7);
  c.type_inputs = {"features+learnt", GetParam()};
  auto model = make_model(c, 6);
  const at::Tensor x = at::randn({5, 6});
  Toy t = toy(x, ids, 7);
  // The rows' weights have no bias of their own: one bias per relation, as for one input.
  EXPECT_FALSE(model->named_parameters().contains("rows.lin_l_bias"));
  const at::Tensor lin_l = at::cat({param(*model, "conv0.lin_l"), param(*model, "rows.lin_l")}, 1);
  const at::Tensor lin_r = at::cat({param(*model, "conv0.lin_r"), param(*model, "rows.lin_r")}, 1);
  const at::Tensor expected =
      dense_hetero_sage(lin_l, param(*model, "conv0.lin_l_bias"), lin_r, features_and_rows(x, ids, GetParam()));
  EXPECT_TRUE(at::allclose(model->forward(t.batch, false), expected, 1e-4, 1e-5));
}

TEST_P(FeaturesAndLearntTest, RgcnSumsTheFeaturesProjectionAndALearntRow) {
  const std::vector<int64_t> ids = {5, 0, 6, 2, 3};
  for (const std::string decomposition : {"none", "basis"}) {
    ModelConfig c = relational("rgcn", 6, 7);
    c.decomposition = decomposition;
    c.num_bases = 2;
    c.type_inputs = {"features+learnt", GetParam()};
    auto model = make_model(c, 4);
    const at::Tensor x = at::randn({5, 6});
    Toy t = toy(x, ids, 7);
    EXPECT_FALSE(model->named_parameters().contains("rows.bias"));
    const int64_t rows = GetParam() == "shared" ? 9 : 7;
    const at::Tensor w = at::cat({relation_weights(*model, decomposition, 6, 4),
                                  relation_weights(*model, decomposition, rows, 4, "rows")}, 1);
    const at::Tensor root = at::cat({param(*model, "conv0.root"), param(*model, "rows.root")}, 0);
    const at::Tensor input = features_and_rows(x, ids, GetParam());
    at::Tensor expected = at::mm(input, root) + param(*model, "conv0.bias");
    const std::vector<at::Tensor> means = dense_means(input);
    for (int r = 0; r < 3; ++r) expected += at::mm(means[r], w[r]);
    EXPECT_TRUE(at::allclose(model->forward(t.batch, false), expected, 1e-4, 1e-5)) << decomposition;
  }
}

INSTANTIATE_TEST_SUITE_P(TypeB, FeaturesAndLearntTest, ::testing::Values("shared", "features"));

// A sampled batch of the heterogeneous generator's graph, with hop counts.
struct SampledHetero {
  Dataset d;
  std::vector<int32_t> types;
  MiniBatch batch;
};

SampledHetero sampled_hetero() {
  HeteroOptions o;
  o.num_papers = 600;
  o.num_authors = 300;
  o.num_venues = 10;
  o.feature_dim = 8;
  o.threads = 1;
  SampledHetero s{generate_hetero(o), {}, {}};
  s.types = s.d.node_type;
  Topology topology = topology_from_dataset(s.d);
  SamplerConfig config;
  config.fanouts.assign(s.d.edge_types.size(), {4, 3});
  NeighborSampler sampler(topology, config);
  const std::vector<int64_t> seeds = {0, 5, 17, 40, 99, 123};
  s.batch = sampler.sample(Span<const int64_t>(seeds.data(), seeds.size()), {1, 0, 0});
  testing::attach(s.d, s.batch);
  return s;
}

class RelationalKindTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RelationalKindTest, TrimmingAndTheAggregationPathLeaveLogitsAndGradientsUnchanged) {
  SampledHetero s = sampled_hetero();
  ModelConfig c = relational(GetParam(), 8);
  c.num_relations = static_cast<int>(s.d.edge_types.size());
  c.num_node_types = 3;
  c.relation_dst_type.clear();
  for (const EdgeType& t : s.d.edge_types) {
    c.relation_dst_type.push_back(t.dst_type == "paper" ? 0 : t.dst_type == "author" ? 1 : 2);
  }
  c.num_layers = 2;
  c.hidden_dim = 16;
  c.out_dim = 5;
  c.dropout = 0;
  ModelConfig full = c, index_add = c;
  full.trim = false;
  index_add.csc_aggregation = false;
  auto a = make_model(c, 2), b = make_model(full, 2), e = make_model(index_add, 2);
  const GraphBatch batch = to_graph_batch(s.batch, HeteroLayout{c.num_relations, &s.types});
  ASSERT_TRUE(batch.hop_ordered);
  ASSERT_LT(batch.layer_rows(1, 2, true), batch.num_nodes) << "trimming must drop rows for this test to mean anything";
  std::vector<at::Tensor> logits;
  std::vector<at::Tensor> grads;
  for (auto* m : {&a, &b, &e}) {
    at::Tensor l = (*m)->forward(batch, true, 1);
    l.sum().backward();
    logits.push_back(l.detach());
    grads.push_back((*m)->parameters()[0].grad().clone());
  }
  EXPECT_TRUE(at::allclose(logits[0], logits[1], 1e-4, 1e-5));
  EXPECT_TRUE(at::allclose(logits[0], logits[2], 1e-4, 1e-5));
  EXPECT_TRUE(at::allclose(grads[0], grads[1], 1e-4, 1e-5));
  EXPECT_TRUE(at::allclose(grads[0], grads[2], 1e-4, 1e-5));
}

TEST_P(RelationalKindTest, AHomogeneousBatchOrGraphIsANamedError) {
  ModelConfig c = relational(GetParam(), 1);
  auto model = make_model(c, 0);
  MiniBatch b;
  b.node_ids = {0, 1};
  b.row = {1};
  b.col = {0};
  b.batch_size = 2;
  b.feature_dim = 1;
  b.x = {1, 2};
  try {
    model->forward(to_graph_batch(b), false);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), GetParam() + " needs a heterogeneous batch");
  }
  c.num_relations = 0;
  c.relation_dst_type.clear();
  try {
    make_model(c, 0);
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    EXPECT_CONTAINS(e.what(), "model.kind: " + GetParam() + " needs a heterogeneous graph");
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, RelationalKindTest, ::testing::Values("rgcn", "hetero_sage"));

TEST(RelationalConfigTest, BadDecompositionsNameTheField) {
  auto error_of = [](const ModelConfig& c) -> std::string {
    try {
      make_model(c, 0);
    } catch (const UsageError& e) {
      return e.what();
    }
    return "(no error)";
  };
  ModelConfig c = relational("rgcn", 6);
  c.decomposition = "block";
  c.num_blocks = 4;
  EXPECT_CONTAINS(error_of(c), "model.blocks: 4 blocks do not divide layer 0's 6 x 4 weights");
  c = relational("rgcn", 0, 10);
  c.decomposition = "block";
  c.num_blocks = 2;
  EXPECT_CONTAINS(error_of(c), "model.decomposition: block needs node features");
  c = relational("rgcn", 6);
  c.decomposition = "basis";
  EXPECT_CONTAINS(error_of(c), "model.bases: basis decomposition needs bases > 0");
  c = relational("hetero_sage", 6);
  c.decomposition = "basis";
  c.num_bases = 2;
  EXPECT_CONTAINS(error_of(c), "model.decomposition: applies to rgcn only");
  c = relational("rgcn", 0);
  EXPECT_CONTAINS(error_of(c), "model.num_nodes: a learnt input row per node needs the node count");
  c = relational("hetero_sage", 0, 10);
  c.type_inputs = {"shared"};
  EXPECT_CONTAINS(error_of(c), "model.type_inputs: has 1 entries for 2 node types");
  c.type_inputs = {"learnt", "random"};
  EXPECT_CONTAINS(error_of(c), "model.type_inputs: node type 1: must be features, learnt, shared or features+learnt");
  // A type that reads features on a featureless graph; features that no type reads.
  c.type_inputs = {"features+learnt", "shared"};
  EXPECT_CONTAINS(error_of(c), "model.type_inputs: node type 0 reads features+learnt and the graph has no node features");
  c = relational("hetero_sage", 6, 10);
  c.type_inputs = {"learnt", "shared"};
  EXPECT_CONTAINS(error_of(c), "model.in_dim: no node type reads features (type_inputs), so in_dim must be 0");
  c = relational("hetero_sage", 6);
  c.type_inputs = {"features+learnt", "features"};
  EXPECT_CONTAINS(error_of(c), "model.num_nodes: a learnt input row per node needs the node count");
  c = relational("rgcn", 6, 10);
  c.type_inputs = {"features+learnt", "features"};
  c.decomposition = "block";
  c.num_blocks = 2;
  EXPECT_CONTAINS(error_of(c), "model.decomposition: block needs node features: a learnt input row");
}

}  // namespace
}  // namespace partita
