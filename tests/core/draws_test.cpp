// A column's draws (graph/draws.h): the sorted picks are the unsorted ones in order, on
// both sides of the size where the branch-free placement gives way to std::sort, and the
// placement ranks keys across their whole range.
#include "graph/draws.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

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

// Keys across the whole 32-bit range, every count up to kPlacedKeys.
TEST(DrawsTest, PlacesAreTheKeysRanksInIncreasingOrder) {
  for (size_t n = 1; n <= kPlacedKeys; ++n) {
    std::vector<uint32_t> keys(n);
    for (size_t i = 0; i < n; ++i) keys[i] = i % 2 == 0 ? 0xFFFFFFFFu - static_cast<uint32_t>(i) : static_cast<uint32_t>(i * 7);
    Rng rng(n);
    shuffle(keys, rng);
    uint32_t place[kPlacedKeys];
    place_distinct(keys.data(), n, place);
    std::vector<uint32_t> sorted = keys;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < n; ++i) {
      ASSERT_LT(place[i], n) << "n " << n;
      EXPECT_EQ(sorted[place[i]], keys[i]) << "n " << n << ", key " << i;
    }
  }
}

}  // namespace
}  // namespace partita
