// The cache of remote rows (graph/row_cache.h): what each policy keeps and evicts, worked
// out by hand on toys; rows come back byte for byte into every column; the budget holds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "base/error.h"
#include "graph/row_cache.h"

namespace partita {
namespace {

// A batch of one int64 column whose row at position p holds `value`.
struct Batch {
  std::vector<int64_t> values;
  std::vector<int64_t> positions;
  std::vector<CacheColumn> columns() { return {CacheColumn{reinterpret_cast<char*>(values.data()), 8}}; }
};

Batch batch_of(const std::vector<int64_t>& ids) {
  Batch b;
  for (size_t k = 0; k < ids.size(); ++k) {
    b.values.push_back(ids[k] * 10);
    b.positions.push_back(static_cast<int64_t>(k));
  }
  return b;
}

void admit(RowCache& cache, const std::vector<int64_t>& ids) {
  Batch b = batch_of(ids);
  std::vector<size_t> all;
  for (size_t k = 0; k < ids.size(); ++k) all.push_back(k);
  cache.admit(ids, b.positions, b.columns(), all);
}

// Looks ids up; returns the misses' ids.
std::vector<int64_t> look(RowCache& cache, const std::vector<int64_t>& ids) {
  Batch b;
  b.values.assign(ids.size(), -1);
  for (size_t k = 0; k < ids.size(); ++k) b.positions.push_back(static_cast<int64_t>(k));
  std::vector<size_t> misses;
  cache.lookup(ids, b.positions, b.columns(), misses);
  std::vector<int64_t> missed;
  size_t m = 0;
  for (size_t k = 0; k < ids.size(); ++k) {
    if (m < misses.size() && misses[m] == k) {
      missed.push_back(ids[k]);
      ++m;
      EXPECT_EQ(b.values[k], -1) << "a miss wrote its row";
    } else {
      EXPECT_EQ(b.values[k], ids[k] * 10) << "hit " << ids[k];
    }
  }
  return missed;
}

TEST(RowCache, SieveEvictsTheFirstUnvisitedRowFromTheHandOnwards) {
  RowCache cache(CachePolicy::kSieve, RowCache::budget_for(3, 8), {8});
  ASSERT_EQ(cache.capacity(), 3u);
  admit(cache, {1, 2, 3});  // queue, oldest first: 1 2 3
  EXPECT_TRUE(look(cache, {1}).empty());  // 1 visited
  // Full: the hand starts at the oldest, clears 1's bit, evicts 2 and rests on 3.
  admit(cache, {4});  // 1 3 4
  EXPECT_FALSE(cache.contains(2));
  EXPECT_TRUE(cache.contains(1) && cache.contains(3) && cache.contains(4));
  admit(cache, {5});  // the hand at 3 (unvisited): evicts it, rests on 4. 1 4 5
  EXPECT_FALSE(cache.contains(3));
  EXPECT_TRUE(look(cache, {4}).empty());  // 4 visited
  // The hand at 4 (visited): clears it, goes on to 5 (unvisited), evicts 5; wraps to 1 next.
  admit(cache, {6});  // 1 4 6
  EXPECT_FALSE(cache.contains(5));
  admit(cache, {7});  // the hand wrapped to the oldest, 1 (cleared before): evicted. 4 6 7
  EXPECT_FALSE(cache.contains(1));
  EXPECT_TRUE(cache.contains(4) && cache.contains(6) && cache.contains(7));
  EXPECT_EQ(look(cache, {4, 6, 7, 1, 2}), (std::vector<int64_t>{1, 2}));
  const RowCacheCounts c = cache.counts();
  EXPECT_EQ(c.admitted, 7u);
  EXPECT_EQ(c.evicted, 4u);
  EXPECT_EQ(cache.size(), 3u);
}

TEST(RowCache, SieveAdmitsARowOnceAndKeepsItsBytes) {
  RowCache cache(CachePolicy::kSieve, RowCache::budget_for(4, 8), {8});
  admit(cache, {9, 9, 8});
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(look(cache, {8, 9, 10}), (std::vector<int64_t>{10}));
}

TEST(RowCache, DegreePolicyKeepsOnlyTheTopOfItsRankingAndNeverEvicts) {
  RowCache cache(CachePolicy::kDegree, RowCache::budget_for(2, 8), {8});
  cache.set_hot(std::vector<int64_t>{5, 3, 9, 1});  // only 5 and 3 fit
  admit(cache, {9, 1, 7});
  EXPECT_EQ(cache.size(), 0u) << "none of them is hot";
  admit(cache, {3});
  EXPECT_EQ(look(cache, {3, 5, 9}), (std::vector<int64_t>{5, 9}));
  admit(cache, {5, 3, 9});
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(look(cache, {9, 5, 3}), (std::vector<int64_t>{9}));
  EXPECT_EQ(cache.counts().evicted, 0u);
  EXPECT_THROW(RowCache(CachePolicy::kSieve, 1000, {8}).set_hot(std::vector<int64_t>{1}), Error);
}

// Rows of 256 bytes (the counting table takes the rows' room): the id times 10 in the first 8.
struct WideRows {
  std::vector<int64_t> values;  // 32 per row
  std::vector<int64_t> positions;
  explicit WideRows(const std::vector<int64_t>& ids) : values(ids.size() * 32, -1) {
    for (size_t k = 0; k < ids.size(); ++k) positions.push_back(static_cast<int64_t>(k));
  }
  std::vector<CacheColumn> columns() { return {CacheColumn{reinterpret_cast<char*>(values.data()), 256}}; }
};

TEST(RowCache, FrequencyPolicyCountsItsFirstLookupsThenKeepsTheMostAskedFor) {
  RowCache cache(CachePolicy::kFrequency, RowCache::budget_for(2, 256), {256});
  ASSERT_EQ(cache.capacity(), 2u);
  const auto look_wide = [&](const std::vector<int64_t>& ids) {
    WideRows rows(ids);
    std::vector<size_t> misses;
    cache.lookup(ids, rows.positions, rows.columns(), misses);
    std::vector<int64_t> missed;
    for (size_t k : misses) missed.push_back(ids[k]);
    for (size_t k = 0; k < ids.size(); ++k) {
      if (std::find(misses.begin(), misses.end(), k) == misses.end()) {
        EXPECT_EQ(rows.values[k * 32], ids[k] * 10);
      }
    }
    return missed;
  };
  const auto admit_wide = [&](const std::vector<int64_t>& ids) {
    WideRows rows(ids);
    std::vector<size_t> all;
    for (size_t k = 0; k < ids.size(); ++k) {
      rows.values[k * 32] = ids[k] * 10;
      all.push_back(k);
    }
    cache.admit(ids, rows.positions, rows.columns(), all);
  };
  for (int k = 0; k < RowCache::kCountedLookups; ++k) {
    // 9 thrice, 7 twice, 4 and 5 once per lookup; 11 only in the first three.
    std::vector<int64_t> ids{7, 7, 5, 9, 9, 9, 4};
    if (k < 3) ids.push_back(11);
    EXPECT_EQ(look_wide(ids).size(), ids.size()) << "counting: every row is a miss";
    admit_wide(ids);
    // The last counted lookup chose 9 and 7, admitted as they come from then on.
    EXPECT_EQ(cache.size(), k + 1 < RowCache::kCountedLookups ? 0u : 2u) << "lookup " << k;
    ASSERT_LE(cache.memory_bytes(), cache.budget_bytes());
  }
  admit_wide({5, 9, 4, 7, 11});
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(look_wide({9, 7, 5, 4, 11}), (std::vector<int64_t>{5, 4, 11}));
  EXPECT_EQ(cache.counts().evicted, 0u);
  EXPECT_LE(cache.memory_bytes(), cache.budget_bytes());
}

TEST(RowCache, RowsOfSeveralColumnsLandAtTheirPositions) {
  RowCache cache(CachePolicy::kSieve, 1 << 20, {12, 8});
  const std::vector<int64_t> ids{40, 41, 42};
  std::vector<char> x(3 * 12);
  std::vector<int64_t> y{400, 410, 420};
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<char>(i * 3 + 1);
  std::vector<int64_t> positions{0, 1, 2};
  std::vector<CacheColumn> columns{{x.data(), 12}, {reinterpret_cast<char*>(y.data()), 8}};
  cache.admit(ids, positions, columns, std::vector<size_t>{0, 1, 2});
  // Looked up in another order into other positions of a fresh batch.
  std::vector<char> x2(4 * 12, 'z');
  std::vector<int64_t> y2(4, -1);
  std::vector<CacheColumn> columns2{{x2.data(), 12}, {reinterpret_cast<char*>(y2.data()), 8}};
  std::vector<size_t> misses;
  cache.lookup(std::vector<int64_t>{42, 7, 40}, std::vector<int64_t>{3, 0, 1}, columns2, misses);
  EXPECT_EQ(misses, (std::vector<size_t>{1}));
  EXPECT_EQ(std::memcmp(x2.data() + 3 * 12, x.data() + 2 * 12, 12), 0);
  EXPECT_EQ(std::memcmp(x2.data() + 1 * 12, x.data(), 12), 0);
  EXPECT_EQ(y2, (std::vector<int64_t>{-1, 400, -1, 420}));
  EXPECT_EQ(x2[0], 'z');
  // Columns that are not the cache's are refused.
  std::vector<CacheColumn> wrong{{x2.data(), 12}};
  EXPECT_THROW(cache.lookup(std::vector<int64_t>{42}, std::vector<int64_t>{0}, wrong, misses), Error);
}

TEST(RowCache, NeverAllocatesMoreThanItsBudget) {
  std::mt19937_64 rng(3);
  for (uint64_t budget : {uint64_t{0}, uint64_t{100}, uint64_t{4096}, uint64_t{100000}, uint64_t{3} << 20}) {
    for (CachePolicy policy : {CachePolicy::kDegree, CachePolicy::kFrequency, CachePolicy::kSieve}) {
      RowCache cache(policy, budget, {512, 8});
      ASSERT_LE(cache.memory_bytes(), budget) << cache_policy_name(policy);
      if (policy == CachePolicy::kDegree) {
        std::vector<int64_t> hot(20000);
        for (size_t i = 0; i < hot.size(); ++i) hot[i] = static_cast<int64_t>(i * 3);
        cache.set_hot(hot);
      }
      std::vector<char> x(512 * 1000);
      std::vector<int64_t> y(1000);
      std::vector<CacheColumn> columns{{x.data(), 512}, {reinterpret_cast<char*>(y.data()), 8}};
      for (int round = 0; round < 30; ++round) {
        std::vector<int64_t> ids(1000), positions(1000);
        for (size_t k = 0; k < ids.size(); ++k) {
          ids[k] = static_cast<int64_t>(rng() % 30000);
          positions[k] = static_cast<int64_t>(k);
        }
        std::vector<size_t> misses;
        cache.lookup(ids, positions, columns, misses);
        cache.admit(ids, positions, columns, misses);
        ASSERT_LE(cache.size(), cache.capacity());
        ASSERT_LE(cache.memory_bytes(), budget);
      }
    }
  }
}

TEST(RowCache, BadPoliciesAndColumnsAreNamed) {
  EXPECT_EQ(parse_cache_policy("sieve", "x"), CachePolicy::kSieve);
  EXPECT_EQ(parse_cache_policy("degree", "x"), CachePolicy::kDegree);
  EXPECT_EQ(parse_cache_policy("frequency", "x"), CachePolicy::kFrequency);
  try {
    parse_cache_policy("lru", "sampling.feature_cache_policy");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("sampling.feature_cache_policy: 'lru' is not a cache policy"),
              std::string::npos);
  }
  EXPECT_THROW(RowCache(CachePolicy::kSieve, 1000, {}), UsageError);
  EXPECT_THROW(RowCache(CachePolicy::kSieve, 1000, {8, 0}), UsageError);
}

}  // namespace
}  // namespace partita
