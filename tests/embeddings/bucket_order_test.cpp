// BETA's order of edge buckets (embeddings/bucket_order.h): every bucket once per walk, one
// swap between consecutive states, never fewer swaps than the lower bound, the hand-worked
// counts for small buffers, and the named errors for impossible shapes.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "base/error.h"
#include "embeddings/bucket_order.h"

namespace partita {
namespace {

TEST(BucketOrderTest, LowerBoundsAreTheHandComputedOnes) {
  // ceil((p(p-1)/2 - c(c-1)/2) / (c-1))
  EXPECT_EQ(swap_lower_bound(4, 2), 5);  // (6 - 1) / 1
  EXPECT_EQ(swap_lower_bound(8, 4), 8);  // ceil(22 / 3)
  EXPECT_EQ(swap_lower_bound(6, 3), 6);  // 12 / 2
  EXPECT_EQ(swap_lower_bound(5, 5), 0);
}

TEST(BucketOrderTest, SmallBuffersTakeTheHandWorkedSwaps) {
  // p = 4, c = 2: {0,1} {0,2} {0,3} | {1,3} {2,3} | {2,1}: 5 swaps, the bound.
  const BucketOrder four = beta_order(4, 2);
  EXPECT_EQ(four.swaps(), 5);
  const std::vector<std::vector<int>> expected{{0, 1}, {0, 2}, {0, 3}, {1, 3}, {2, 3}, {2, 1}};
  EXPECT_EQ(four.states, expected);
  // p = 8, c = 4: {0,1,2} fixed while 4..7 cycle (4 swaps); 7 stays, 3 and 4 join it (2),
  // 5 and 6 cycle (2); 5 joins 6 (1): 9 swaps against a bound of 8.
  EXPECT_EQ(beta_order(8, 4).swaps(), 9);
  EXPECT_EQ(beta_order(5, 5).swaps(), 0);
}

TEST(BucketOrderTest, EveryBucketOnceOneSwapAtATimeNeverBelowTheBound) {
  for (int p = 2; p <= 12; ++p) {
    for (int c = 2; c <= p; ++c) {
      SCOPED_TRACE("p = " + std::to_string(p) + ", c = " + std::to_string(c));
      const BucketOrder order = beta_order(p, c);
      ASSERT_EQ(order.states.size(), order.buckets.size());
      std::set<std::pair<int, int>> seen;
      for (size_t k = 0; k < order.states.size(); ++k) {
        const std::vector<int>& s = order.states[k];
        ASSERT_EQ(static_cast<int>(s.size()), c);
        ASSERT_EQ(std::set<int>(s.begin(), s.end()).size(), s.size()) << "a partition twice in state " << k;
        if (k > 0) {
          int changed = 0;
          for (size_t slot = 0; slot < s.size(); ++slot) changed += s[slot] != order.states[k - 1][slot];
          ASSERT_EQ(changed, 1) << "state " << k;
        }
        for (const auto& [a, b] : order.buckets[k]) {
          ASSERT_NE(std::find(s.begin(), s.end(), a), s.end());
          ASSERT_NE(std::find(s.begin(), s.end(), b), s.end());
          ASSERT_TRUE(seen.insert({a, b}).second) << "bucket (" << a << ", " << b << ") twice";
        }
      }
      EXPECT_EQ(static_cast<int>(seen.size()), p * p);
      EXPECT_GE(order.swaps(), swap_lower_bound(p, c));
      if (c == 2) {
        EXPECT_EQ(order.swaps(), swap_lower_bound(p, c));
      }
      EXPECT_LE(order.swaps(), swap_lower_bound(p, c) + p);
    }
  }
}

TEST(BucketOrderTest, ImpossibleShapesAreNamed) {
  auto message = [](int p, int c) {
    try {
      beta_order(p, c);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(0, 2).find("embeddings.partitions: must be at least 1"), std::string::npos) << message(0, 2);
  EXPECT_NE(message(4, 1).find("embeddings.buffer: must hold at least 2"), std::string::npos) << message(4, 1);
  EXPECT_NE(message(4, 5).find("embeddings.buffer: 5 is more than the 4 partitions"), std::string::npos) << message(4, 5);
}

}  // namespace
}  // namespace partita
