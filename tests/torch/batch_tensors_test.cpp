// Laying a mini-batch out as tensors: the CSC and its transpose, the self-loop variant
// with GCN's normalisation, hop bookkeeping for trimming, and validation.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "base/error.h"
#include "models/batch_tensors.h"
#include "sampled_batch.h"

namespace partita {
namespace {

std::vector<int64_t> values(const at::Tensor& t) {
  return std::vector<int64_t>(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel());
}

std::vector<float> floats(const at::Tensor& t) {
  return std::vector<float>(t.data_ptr<float>(), t.data_ptr<float>() + t.numel());
}

// Six nodes: seeds 0 and 1, hop 1 = {2, 3, 4}, hop 2 = {5}. Hop 1 samples 2, 3, 1 for node
// 0 and 4 for node 1; hop 2 samples 5 and (a self loop) 2 for node 2.
MiniBatch hand_batch() {
  MiniBatch b;
  b.node_ids = {10, 11, 12, 13, 14, 15};
  b.row = {2, 3, 1, 4, 5, 2};
  b.col = {0, 0, 0, 1, 2, 2};
  b.num_sampled_nodes = {2, 3, 1};
  b.num_sampled_edges = {0, 4, 2};
  b.batch_size = 2;
  b.feature_dim = 2;
  b.x = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  b.y = {1, 0};
  return b;
}

TEST(BatchTensorsTest, SampledEdgesBecomeACscWithItsTranspose) {
  GraphBatch g = to_graph_batch(hand_batch());
  EXPECT_EQ(g.num_nodes, 6);
  EXPECT_EQ(g.batch_size, 2);
  EXPECT_EQ(g.x.sizes(), (at::IntArrayRef{6, 2}));
  EXPECT_FLOAT_EQ(g.x[5][1].item<float>(), 11);
  EXPECT_EQ(values(g.y), (std::vector<int64_t>{1, 0}));

  EXPECT_EQ(values(g.edges.colptr), (std::vector<int64_t>{0, 3, 4, 6, 6, 6, 6}));
  EXPECT_EQ(values(g.edges.src), (std::vector<int64_t>{2, 3, 1, 4, 5, 2}));
  EXPECT_EQ(values(g.edges.dst), (std::vector<int64_t>{0, 0, 0, 1, 2, 2}));
  // By source: node 1 feeds edge 2, node 2 edges 0 and 5, node 3 edge 1, ...
  EXPECT_EQ(values(g.edges.rowptr), (std::vector<int64_t>{0, 0, 1, 3, 4, 5, 6}));
  EXPECT_EQ(values(g.edges.out_edges), (std::vector<int64_t>{2, 0, 5, 1, 3, 4}));
  EXPECT_EQ(g.edges.edges_before(1), 3);
  EXPECT_EQ(g.edges.edges_before(2), 4);
  const float third = 1.0f / 3;
  EXPECT_EQ(floats(g.mean_weight), (std::vector<float>{third, third, third, 1, 0.5f, 0.5f}));
}

TEST(BatchTensorsTest, SelfLoopVariantReplacesSampledSelfLoopsAndNormalisesAsGcn) {
  GraphBatch g = to_graph_batch(hand_batch());
  const CscEdges& e = g.edges_with_self_loops;
  // Each node's own loop comes first; node 2's sampled self loop is gone.
  EXPECT_EQ(values(e.colptr), (std::vector<int64_t>{0, 4, 6, 8, 9, 10, 11}));
  EXPECT_EQ(values(e.src), (std::vector<int64_t>{0, 2, 3, 1, 1, 4, 2, 5, 3, 4, 5}));
  EXPECT_EQ(values(e.dst), (std::vector<int64_t>{0, 0, 0, 0, 1, 1, 2, 2, 3, 4, 5}));
  // Degrees with the self loop: 4, 2, 2, 1, 1, 1.
  const std::vector<float> degree{4, 2, 2, 1, 1, 1};
  const std::vector<float> weight = floats(g.gcn_weight);
  const std::vector<int64_t> src = values(e.src), dst = values(e.dst);
  ASSERT_EQ(weight.size(), src.size());
  for (size_t i = 0; i < weight.size(); ++i) {
    EXPECT_FLOAT_EQ(weight[i], 1.0f / std::sqrt(degree[src[i]] * degree[dst[i]])) << "edge " << i;
  }
}

TEST(BatchTensorsTest, UnsortedEdgesAreSortedStablyByDestination) {
  MiniBatch b = hand_batch();
  b.row = {2, 5, 4, 1, 3, 2};
  b.col = {2, 2, 1, 0, 0, 0};
  b.num_sampled_nodes.clear();
  b.num_sampled_edges.clear();
  GraphBatch g = to_graph_batch(b);
  EXPECT_EQ(values(g.edges.colptr), (std::vector<int64_t>{0, 3, 4, 6, 6, 6, 6}));
  EXPECT_EQ(values(g.edges.src), (std::vector<int64_t>{1, 3, 2, 4, 2, 5}));
  EXPECT_EQ(values(g.edges.dst), (std::vector<int64_t>{0, 0, 0, 1, 2, 2}));
  EXPECT_EQ(values(g.edges.rowptr), (std::vector<int64_t>{0, 0, 1, 3, 4, 5, 6}));
  EXPECT_EQ(values(g.edges.out_edges), (std::vector<int64_t>{0, 2, 4, 1, 3, 5}));
}

TEST(BatchTensorsTest, LayerRowsFollowTheHops) {
  GraphBatch g = to_graph_batch(hand_batch());
  EXPECT_TRUE(g.hop_ordered);
  // Two layers: the first computes hops 0-1 (5 nodes), the second the seeds.
  EXPECT_EQ(g.layer_rows(0, 2, true), 5);
  EXPECT_EQ(g.layer_rows(1, 2, true), 2);
  // Three layers over two hops: the first must compute every node.
  EXPECT_EQ(g.layer_rows(0, 3, true), 6);
  EXPECT_EQ(g.layer_rows(1, 3, true), 5);
  EXPECT_EQ(g.layer_rows(2, 3, true), 2);
  EXPECT_EQ(g.layer_rows(1, 2, false), 6);
}

TEST(BatchTensorsTest, EdgesSkippingAHopDisableTrimming) {
  MiniBatch b = hand_batch();
  b.row[0] = 5;  // a hop-2 node feeding a seed: trimmed layers would have dropped it
  GraphBatch g = to_graph_batch(b);
  EXPECT_FALSE(g.hop_ordered);
  EXPECT_EQ(g.layer_rows(1, 2, true), 6);
}

TEST(BatchTensorsTest, TheRvalueOverloadTakesOverTheFeatures) {
  MiniBatch b = hand_batch();
  const float* features = b.x.data();
  GraphBatch g = to_graph_batch(std::move(b));
  EXPECT_EQ(g.x.data_ptr<float>(), features);
}

TEST(BatchTensorsTest, TheFeatureBufferGoesToTheRecyclerOnlyOnceTheTensorsAreGone) {
  MiniBatch b = hand_batch();
  const float* data = b.x.data();
  const size_t size = b.x.size();
  std::vector<float> recycled;
  int calls = 0;
  {
    GraphBatch g = to_graph_batch(std::move(b), [&](std::vector<float>&& x) {
      ++calls;
      recycled = std::move(x);
    });
    at::Tensor view = g.x.slice(0, 0, 1);  // a view keeps the buffer too
    g = GraphBatch{};
    EXPECT_EQ(calls, 0) << "given back while a tensor still reads it";
  }
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(recycled.data(), data);
  EXPECT_EQ(recycled.size(), size);
}

TEST(BatchTensorsTest, SampledBatchesAreSortedAndHopOrdered) {
  Dataset d = testing::small_sbm();
  MiniBatch b = testing::sample_batch(d, testing::first_nodes(64), {5, 4, 3});
  ASSERT_TRUE(std::is_sorted(b.col.begin(), b.col.end()));
  GraphBatch g = to_graph_batch(b);
  EXPECT_TRUE(g.hop_ordered);
  EXPECT_EQ(g.layer_rows(2, 3, true), 64);
  EXPECT_EQ(g.layer_rows(1, 3, true), b.num_sampled_nodes[0] + b.num_sampled_nodes[1]);
  EXPECT_EQ(g.edges.src.numel(), static_cast<int64_t>(b.row.size()));
}

void expect_error(const MiniBatch& b, const std::string& fragment) {
  try {
    to_graph_batch(b);
    ADD_FAILURE() << "no error; expected one mentioning " << fragment;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(BatchTensorsTest, InconsistentBatchesAreRejectedNamingTheProblem) {
  MiniBatch b = hand_batch();
  b.row[3] = 6;
  expect_error(b, "row[3] = 6");
  b = hand_batch();
  b.col.pop_back();
  expect_error(b, "6 edge sources but 5 destinations");
  b = hand_batch();
  b.x.pop_back();
  expect_error(b, "x holds 11 values");
  b = hand_batch();
  b.num_sampled_edges = {0, 4, 1};
  expect_error(b, "per-hop counts");
  b = hand_batch();
  b.batch_size = 7;
  expect_error(b, "batch_size 7");
  b = hand_batch();
  b.y = {1, 2, 3};
  expect_error(b, "y holds 3 labels");
}

}  // namespace
}  // namespace partita
