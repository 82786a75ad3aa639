// The bytes a training step must move (models/step_cost.h), counted by hand on a batch small
// enough to list every tensor, and the rules each pass follows.
#include <gtest/gtest.h>

#include <vector>

#include "base/error.h"
#include "graph/mini_batch.h"
#include "models/batch_tensors.h"
#include "models/gnn_model.h"
#include "models/step_cost.h"
#include "sampled_batch.h"

namespace partita {
namespace {

// A 2-layer GraphSAGE 2 -> 4 -> 3.
ModelConfig small_graphsage() {
  ModelConfig c;
  c.kind = "graphsage";
  c.in_dim = 2;
  c.hidden_dim = 4;
  c.out_dim = 3;
  c.num_layers = 2;
  return c;
}

// testing::triangle_batch with every feature 1.
GraphBatch triangle(int64_t dim) {
  return to_graph_batch(testing::triangle_batch(std::vector<float>(3 * static_cast<size_t>(dim), 1.0f), dim));
}

TEST(StepBytesTest, EachPassReadsAndWritesItsTensorsOnce) {
  EXPECT_DOUBLE_EQ(DenseProduct({2, 3, 5}).bytes(), 4.0 * (6 + 15 + 10));
  EXPECT_DOUBLE_EQ(aggregation_bytes(7, 2, 8), 4.0 * (7 * 8 + 2 * 8));  // a row per edge, a row per target
  EXPECT_DOUBLE_EQ(activation_bytes(2, 8), 4.0 * 5 * 16);                // 2 passes forward, 3 backward
  EXPECT_DOUBLE_EQ(adam_bytes(10), 4.0 * 8 * 10);                        // 4 arrays, read and written
}

TEST(StepBytesTest, GraphSageOnATriangleMovesTheHandCountedBytes) {
  ModelConfig c = small_graphsage();
  const StepCost cost = make_model(c, 0)->step_cost(triangle(2));
  // Features: 3 rows of 2, read and written.
  EXPECT_DOUBLE_EQ(cost.bytes.features, 4.0 * 2 * 3 * 2);
  // Layer 0 (2 -> 4) aggregates its input, width 2, forward only (the features need no
  // gradient): 3 source rows read, 3 targets written. Layer 1 (4 -> 3) aggregates after
  // lin_l, width 3, forward and backward.
  EXPECT_DOUBLE_EQ(cost.bytes.aggregation, 4.0 * (6 * 2 + 2 * 6 * 3));
  // Layer 0: [3, 4] x [4, 4] and grad W [4, 3] x [3, 4]. Layer 1, lin_l and lin_r alike:
  // [3, 4] x [4, 3], grad W [3, 3] x [3, 4], grad x [3, 3] x [3, 4].
  EXPECT_DOUBLE_EQ(cost.bytes.dense, 4.0 * ((12 + 16 + 12) + (12 + 12 + 16) + 2 * 3 * (12 + 12 + 9)));
  // ReLU and dropout on layer 0's [3, 4] (2 + 3 passes); the loss reads the [3, 3] logits
  // and writes their gradient.
  EXPECT_DOUBLE_EQ(cost.bytes.activations, 4.0 * (5 * 12 + 2 * 9));
  // 47 parameters: 4x2 + 4 + 4x2, then 3x4 + 3 + 3x4.
  EXPECT_DOUBLE_EQ(cost.bytes.optimizer, 4.0 * 8 * 47);
  EXPECT_DOUBLE_EQ(cost.bytes.step(), 192 + 1112 + 312 + 1504);
}

TEST(StepBytesTest, InputDropoutReadsAndWritesTheFeaturesOnce) {
  ModelConfig c = small_graphsage();
  const double without = make_model(c, 0)->step_cost(triangle(2)).bytes.activations;
  c.input_dropout = 0.2;
  EXPECT_DOUBLE_EQ(make_model(c, 0)->step_cost(triangle(2)).bytes.activations, without + 4.0 * 2 * 3 * 2);
}

TEST(StepBytesTest, ACopyBufferBelowAMegabyteIsRefused) { EXPECT_THROW(MemcpyClock(1000), Error); }

}  // namespace
}  // namespace partita
