// The row optimisers an embedding table's owner applies (embeddings/row_optimizer.h,
// sparse_adagrad.h, sparse_adam.h): what they refuse before changing anything, and the
// names a job chooses them by. Their values against torch's optimisers are checked in
// tests/torch/kg_ops_test.cpp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "embeddings/row_optimizer.h"

namespace partita {
namespace {

TEST(SparseAdagradTest, DuplicateOrOutOfRangeRowsAreRefusedBeforeAnyChange) {
  std::vector<float> table(8, 1.0f), state(8, 0.0f);
  const std::vector<float> grads(8, 0.5f);
  SparseAdagrad sparse;
  EXPECT_THROW(sparse.step(Span<float>(table), Span<float>(state), 4, std::vector<int64_t>{1, 1}, grads), Error);
  EXPECT_THROW(sparse.step(Span<float>(table), Span<float>(state), 4, std::vector<int64_t>{0, 2}, grads), Error);
  EXPECT_EQ(table, std::vector<float>(8, 1.0f));
  EXPECT_EQ(state, std::vector<float>(8, 0.0f));
}

TEST(SparseAdamTest, BadRowsOrStepAreRefusedBeforeAnyChange) {
  std::vector<float> table(8, 1.0f), moments(16, 0.0f);
  const std::vector<float> grads(8, 0.5f);
  SparseAdam sparse;
  EXPECT_THROW(sparse.step(Span<float>(table), Span<float>(moments), 4, std::vector<int64_t>{1, 1}, grads, 1), Error);
  EXPECT_THROW(sparse.step(Span<float>(table), Span<float>(moments), 4, std::vector<int64_t>{0, 2}, grads, 1), Error);
  EXPECT_THROW(sparse.step(Span<float>(table), Span<float>(moments), 4, std::vector<int64_t>{0, 1}, grads, 0), Error);
  std::vector<float> short_moments(8, 0.0f);
  EXPECT_THROW(sparse.step(Span<float>(table), Span<float>(short_moments), 4, std::vector<int64_t>{0, 1}, grads, 1),
               Error);
  EXPECT_EQ(table, std::vector<float>(8, 1.0f));
  EXPECT_EQ(moments, std::vector<float>(16, 0.0f));
  sparse.beta2 = 1.0;
  EXPECT_THROW(sparse.validate(), UsageError);
}

TEST(RowOptimizerTest, NamesChooseTheOptimiserAndBadOnesAreNamed) {
  const RowOptimizer adagrad = RowOptimizer::parse("adagrad", 0.1, "train.optimizer");
  EXPECT_EQ(adagrad.kind, RowOptimizerKind::kAdagrad);
  EXPECT_EQ(adagrad.state_slots(), 1);
  const RowOptimizer adam = RowOptimizer::parse("sparse_adam", 0.01, "train.optimizer");
  EXPECT_EQ(adam.kind, RowOptimizerKind::kSparseAdam);
  EXPECT_EQ(adam.state_slots(), 2);
  EXPECT_STREQ(adam.name(), "sparse_adam");
  try {
    RowOptimizer::parse("sgd", 0.1, "train.optimizer");
    ADD_FAILURE() << "sgd accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("train.optimizer"), std::string::npos) << e.what();
  }
  EXPECT_THROW(RowOptimizer::parse("adagrad", -1.0, "train.optimizer"), UsageError);
}

}  // namespace
}  // namespace partita
