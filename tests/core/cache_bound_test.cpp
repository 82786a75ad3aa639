// The bound of any cache (graph/cache_bound.h): batches asking per row, the static top-k
// ranking and the share of asked rows it covers, worked out by hand on a toy.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "base/error.h"
#include "expect_error.h"
#include "graph/cache_bound.h"

namespace partita {
namespace {

// Four batches over ids 0..5: id 0 in all four (twice in the last, counted once), id 1 in
// two, ids 2, 3 and 4 in one each, id 5 in none: 9 rows asked.
RowDemand toy() {
  RowDemand d(6);
  d.add_batch(std::vector<int64_t>{0, 1, 2});
  d.add_batch(std::vector<int64_t>{1, 0});
  d.add_batch(std::vector<int64_t>{3, 0});
  d.add_batch(std::vector<int64_t>{0, 4, 0});
  return d;
}

TEST(CacheBound, CountsTheBatchesAskingForEachRowOncePerBatch) {
  const RowDemand d = toy();
  EXPECT_EQ(d.batches(), 4);
  EXPECT_EQ(d.asked(), 9u);
  EXPECT_EQ(d.batches_asking(0), 4u);
  EXPECT_EQ(d.batches_asking(1), 2u);
  EXPECT_EQ(d.batches_asking(4), 1u);
  EXPECT_EQ(d.batches_asking(5), 0u);
  EXPECT_EQ(d.batches_asking(99), 0u);
}

TEST(CacheBound, RanksByBatchesAskingThenSmallerIdAndLeavesOutRowsNeverAsked) {
  const RowDemand d = toy();
  EXPECT_EQ(d.ranked(100), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(d.ranked(2), (std::vector<int64_t>{0, 1}));
  EXPECT_TRUE(d.ranked(0).empty());
}

TEST(CacheBound, InSampleCoverageOfTheTopKIsTheirShareOfTheAskedRows) {
  const RowDemand d = toy();
  const std::vector<int64_t> ranking = d.ranked(100);
  const std::vector<size_t> sizes{0, 1, 2, 3, 5, 100};
  const std::vector<double> shares = cache_coverage(ranking, d, sizes);
  const std::vector<double> expected{0.0, 4.0 / 9, 6.0 / 9, 7.0 / 9, 1.0, 1.0};
  ASSERT_EQ(shares.size(), expected.size());
  for (size_t k = 0; k < expected.size(); ++k) EXPECT_DOUBLE_EQ(shares[k], expected[k]) << "k = " << sizes[k];
}

TEST(CacheBound, HeldOutCoverageScoresAnotherSamplesRanking) {
  // Ranked on batches where id 2 is hottest, scored on the toy: the cache of {2} serves 1 of
  // 9, of {2, 5} still 1 (5 never asked), of {2, 5, 0} 5.
  RowDemand ranked_on(6);
  ranked_on.add_batch(std::vector<int64_t>{2, 5});
  ranked_on.add_batch(std::vector<int64_t>{2, 5});
  ranked_on.add_batch(std::vector<int64_t>{2, 0});
  EXPECT_EQ(ranked_on.ranked(3), (std::vector<int64_t>{2, 5, 0}));
  const std::vector<double> shares = cache_coverage(ranked_on.ranked(3), toy(), std::vector<size_t>{1, 2, 3});
  EXPECT_DOUBLE_EQ(shares[0], 1.0 / 9);
  EXPECT_DOUBLE_EQ(shares[1], 1.0 / 9);
  EXPECT_DOUBLE_EQ(shares[2], 5.0 / 9);
}

TEST(CacheBound, ARankingThatRepeatsAnIdHoldsItOnce) {
  const std::vector<double> shares = cache_coverage(std::vector<int64_t>{1, 1, 0}, toy(), std::vector<size_t>{2, 3});
  EXPECT_DOUBLE_EQ(shares[0], 6.0 / 9);  // {1, 0}: the repeat takes no room
  EXPECT_DOUBLE_EQ(shares[1], 6.0 / 9);
}

TEST(CacheBound, NothingAskedCoversNothing) {
  const RowDemand empty(3);
  EXPECT_EQ(cache_coverage(std::vector<int64_t>{0, 1}, empty, std::vector<size_t>{2})[0], 0.0);
}

// Batches {0}, {0}, {1}, {1} with a cache of one row: the static top 1 serves 2 of 4; one that
// knows the batches to come keeps 0 while it is asked for, then 1 once fetched: 3 of 4.
TEST(CacheBound, AClairvoyantCacheKeepsTheRowsAskedForSoonest) {
  const std::vector<std::vector<int64_t>> batches{{0}, {0}, {1}, {1}};
  RowDemand d(2);
  for (const auto& b : batches) d.add_batch(b);
  EXPECT_DOUBLE_EQ(cache_coverage(d.ranked(1), d, std::vector<size_t>{1})[0], 2.0 / 4);
  const std::vector<double> shares = lookahead_coverage(batches, 2, 4, {}, std::vector<size_t>{0, 1, 2});
  EXPECT_DOUBLE_EQ(shares[0], 0.0);
  EXPECT_DOUBLE_EQ(shares[1], 3.0 / 4);
  EXPECT_DOUBLE_EQ(shares[2], 1.0);
}

// The toy's batches {0,1,2}, {1,0}, {3,0}, {0,4,0}, worked out by hand: with one row, 0 is
// held throughout (4 of 9); with two, 0 and 1 until 1's last batch, then 0 alone (no other
// row is asked for twice: holding one gains nothing): 6 of 9; five hold everything asked.
TEST(CacheBound, ClairvoyantCoverageOfTheToy) {
  const std::vector<std::vector<int64_t>> batches{{0, 1, 2}, {1, 0}, {3, 0}, {0, 4, 0}};
  const std::vector<double> shares = lookahead_coverage(batches, 6, 4, {}, std::vector<size_t>{1, 2, 5});
  EXPECT_DOUBLE_EQ(shares[0], 4.0 / 9);
  EXPECT_DOUBLE_EQ(shares[1], 6.0 / 9);
  EXPECT_DOUBLE_EQ(shares[2], 1.0);
  EXPECT_CONTAINS(testing::error_of([&] { lookahead_coverage({{1}, {7}}, 6, 2, {}, std::vector<size_t>{1}); }),
                  "id 7 outside [0, 6) in batch 1");
  EXPECT_CONTAINS(testing::error_of([&] { lookahead_coverage(batches, 6, -1, {}, std::vector<size_t>{1}); }),
                  "a window of -1 batches");
}

// Batches {0}, {1}, {1}, {0} with one row and no ranking: seeing one batch ahead, the cache
// keeps 0 for batch 0 (warm) and 1, fetched by batch 1, for batch 2: 2 of 4; seeing none, it
// keeps nothing; with the ranking {1}, the static {1} serves batches 1 and 2.
TEST(CacheBound, AWindowOfOneBatchKeepsWhatTheNextBatchAsksFor) {
  const std::vector<std::vector<int64_t>> batches{{0}, {1}, {1}, {0}};
  const std::vector<size_t> one{1};
  EXPECT_DOUBLE_EQ(lookahead_coverage(batches, 2, 1, {}, one)[0], 2.0 / 4);
  EXPECT_DOUBLE_EQ(lookahead_coverage(batches, 2, 0, {}, one)[0], 0.0);
  EXPECT_DOUBLE_EQ(lookahead_coverage(batches, 2, 0, std::vector<int64_t>{1}, one)[0], 2.0 / 4);
}

// Holding the static top k throughout is one policy a clairvoyant cache may follow: on any
// batches it serves at least as much as that, and as any shorter window; a window of 0 is
// that static cache (skewed random batches, several sizes).
TEST(CacheBound, ClairvoyantServesAtLeastTheStaticTopKAndAnyWindow) {
  std::mt19937_64 random(7);
  std::vector<std::vector<int64_t>> batches(40);
  RowDemand d(500);
  for (auto& b : batches) {
    for (int j = 0; j < 60; ++j) {
      const double u = std::uniform_real_distribution<double>(0, 1)(random);
      b.push_back(static_cast<int64_t>(500 * u * u * u));  // small ids far more often
    }
    d.add_batch(b);
  }
  const std::vector<size_t> sizes{1, 5, 20, 60, 200, 500};
  const std::vector<double> static_top = cache_coverage(d.ranked(500), d, sizes);
  const std::vector<int64_t> ranking = d.ranked(500);
  const std::vector<double> clairvoyant = lookahead_coverage(batches, 500, 40, ranking, sizes);
  EXPECT_EQ(lookahead_coverage(batches, 500, 0, ranking, sizes), static_top);
  for (int64_t window : {1, 2, 5}) {
    const std::vector<double> ahead = lookahead_coverage(batches, 500, window, ranking, sizes);
    for (size_t k = 0; k < sizes.size(); ++k) EXPECT_LE(ahead[k], clairvoyant[k] + 1e-12) << window << " " << sizes[k];
  }
  for (size_t k = 0; k < sizes.size(); ++k) {
    EXPECT_GE(clairvoyant[k], static_top[k] - 1e-12) << "k = " << sizes[k];
    EXPECT_LE(clairvoyant[k], 1.0);
  }
  EXPECT_GT(clairvoyant[2], static_top[2]) << "foresight gains nothing at 20 rows";
  EXPECT_DOUBLE_EQ(clairvoyant.back(), 1.0);
}

TEST(CacheBound, AnIdOutsideTheRowsIsAnErrorNamingIt) {
  RowDemand d(4);
  EXPECT_CONTAINS(testing::error_of([&] { d.add_batch(std::vector<int64_t>{1, 4}); }), "id 4 outside [0, 4)");
  EXPECT_EQ(d.batches(), 0) << "a rejected batch is not counted";
  EXPECT_THROW(RowDemand(-1), Error);
}

}  // namespace
}  // namespace partita
