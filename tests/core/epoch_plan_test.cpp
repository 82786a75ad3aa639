// Epoch plans: every seed once, batches of the right size, a shuffle that depends on the
// job seed and the epoch only.
#include "graph/epoch_plan.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "base/error.h"

namespace partita {
namespace {

std::vector<int64_t> range(int64_t n) {
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = i * 3;
  return v;
}

TEST(EpochPlanTest, EverySeedOnceInBatchesOfTheRightSize) {
  auto seeds = range(1000);
  EpochPlan plan = plan_epoch(seeds, 64, 7, 0);
  ASSERT_EQ(plan.num_batches(), 16);
  for (int64_t b = 0; b < 15; ++b) EXPECT_EQ(plan.batch(b).size(), 64u);
  EXPECT_EQ(plan.batch(15).size(), 1000u - 15 * 64);
  std::vector<int64_t> all(plan.order);
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, seeds);
  EXPECT_NE(plan.order, seeds) << "not shuffled";
  EXPECT_EQ(plan.key(3).batch, 3u);
  EXPECT_EQ(plan.key(3).epoch, 0u);
}

TEST(EpochPlanTest, ShuffleDependsOnJobSeedAndEpochOnly) {
  auto seeds = range(500);
  EXPECT_EQ(plan_epoch(seeds, 50, 7, 2).order, plan_epoch(seeds, 50, 7, 2).order);
  EXPECT_NE(plan_epoch(seeds, 50, 7, 2).order, plan_epoch(seeds, 50, 7, 3).order);
  EXPECT_NE(plan_epoch(seeds, 50, 7, 2).order, plan_epoch(seeds, 50, 8, 2).order);
  EXPECT_EQ(plan_epoch(seeds, 50, 7, 2, false).order, seeds);
}

TEST(EpochPlanTest, DropLastAndEdgeCases) {
  auto seeds = range(130);
  EpochPlan plan = plan_epoch(seeds, 64, 1, 0, true, true);
  EXPECT_EQ(plan.num_batches(), 2);
  EXPECT_EQ(plan.order.size(), 128u);
  EXPECT_EQ(plan_epoch({}, 64, 1, 0).num_batches(), 0);
  EXPECT_EQ(plan_epoch(range(10), 64, 1, 0, true, true).num_batches(), 0);
  EXPECT_THROW(plan_epoch(seeds, 0, 1, 0), UsageError);
}

}  // namespace
}  // namespace partita
