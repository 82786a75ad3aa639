// The feature buffer pool: buffers come back as they were given (size and contents kept,
// so refilling them neither zeroes nor faults), the largest first, and the pool stays
// within its capacity.
#include "graph/buffer_pool.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace partita {
namespace {

TEST(BufferPool, GivesBackTheLargestBufferAsItWasAndStaysBounded) {
  BufferPool pool(2);
  EXPECT_TRUE(pool.take().empty());
  std::vector<float> small(10, 1.0f), large(1000, 2.0f), third(500, 3.0f);
  const float* large_data = large.data();
  pool.give_back(std::move(small));
  pool.give_back(std::move(large));
  pool.give_back(std::move(third));  // over capacity: freed
  EXPECT_EQ(pool.size(), 2u);
  std::vector<float> got = pool.take();
  EXPECT_EQ(got.data(), large_data);
  EXPECT_EQ(got.size(), 1000u);
  EXPECT_EQ(got[999], 2.0f);
  EXPECT_EQ(pool.take().size(), 10u);
  EXPECT_TRUE(pool.take().empty());
  pool.give_back(std::vector<float>{});  // nothing to keep
  EXPECT_EQ(pool.size(), 0u);
}

TEST(BufferPool, ManyThreadsGiveAndTakeAtOnce) {
  BufferPool pool(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        std::vector<float> b = pool.take();
        b.resize(64, 1.0f);
        pool.give_back(std::move(b));
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_LE(pool.size(), 4u);
  EXPECT_GE(pool.size(), 1u);
}

}  // namespace
}  // namespace partita
