// A column's draws (graph/draws.h): the sorted picks are the unsorted ones in order, on
// both sides of the size where the branch-free placement gives way to std::sort.
#include "graph/draws.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

namespace partita {
namespace {

TEST(DrawsTest, SortedPicksAreTheDrawsInOrderForEveryFanout) {
  for (int64_t n : {int64_t{1}, int64_t{2}, int64_t{40}, int64_t{1000}, (int64_t{1} << 32) + 5}) {
    for (int64_t k = 0; k <= std::min<int64_t>(n, 2 * kPlacedKeys); ++k) {
      for (uint64_t seed = 0; seed < 8; ++seed) {
        std::vector<int64_t> sorted, unsorted;
        Rng a(seed * 1000 + static_cast<uint64_t>(k)), b(seed * 1000 + static_cast<uint64_t>(k));
        choose_distinct(a, n, k, sorted);
        choose_distinct(b, n, k, unsorted, false);
        ASSERT_EQ(sorted.size(), static_cast<size_t>(k));
        EXPECT_EQ(std::set<int64_t>(unsorted.begin(), unsorted.end()).size(), static_cast<size_t>(k))
            << "draws repeat an entry (n " << n << ", k " << k << ")";
        for (int64_t p : unsorted) ASSERT_TRUE(p >= 0 && p < n) << p << " is not an entry of " << n;
        std::sort(unsorted.begin(), unsorted.end());
        EXPECT_EQ(sorted, unsorted) << "n " << n << ", k " << k << ", seed " << seed;
      }
    }
  }
}

// Picks at offsets across the whole 32-bit range, on both sides of kPlacedKeys.
TEST(DrawsTest, PositionOrderPermutesPicksAndNeighboursAlikeIntoIncreasingOffset) {
  for (size_t n : {size_t{2}, size_t{3}, kPlacedKeys - 1, kPlacedKeys, kPlacedKeys + 1, size_t{500}}) {
    std::vector<uint32_t> offsets(n);
    for (size_t i = 0; i < n; ++i) offsets[i] = i % 2 == 0 ? 0xFFFFFFFFu - static_cast<uint32_t>(i) : static_cast<uint32_t>(i * 7);
    Rng rng(n);
    shuffle(offsets, rng);
    std::vector<int64_t> at(n), neighbor(n);
    PositionOrder order;
    order.start(n);
    for (size_t i = 0; i < n; ++i) {
      order.key(i, offsets[i]);
      at[i] = 1000 + static_cast<int64_t>(offsets[i]);
      neighbor[i] = -static_cast<int64_t>(offsets[i]);
    }
    order.apply(at.data(), neighbor.data());
    std::sort(offsets.begin(), offsets.end());
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(at[i], 1000 + static_cast<int64_t>(offsets[i])) << "n " << n << ", place " << i;
      ASSERT_EQ(neighbor[i], -static_cast<int64_t>(offsets[i])) << "n " << n << ", place " << i;
    }
  }
}

}  // namespace
}  // namespace partita
