// The loader: batches in plan order whatever the workers, bounded prefetch, errors and
// deadlines reaching the trainer, clean stop mid-epoch.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "actors/loader.h"
#include "base/error.h"
#include "graph/subgraph_builder.h"
#include "partitioned_graph.h"
#include "partitioner/partition_stores.h"

namespace partita {
namespace {

using namespace std::chrono_literals;

class LoaderTest : public ::testing::Test {
 protected:
  LoaderTest() : dataset_(testing::sbm_graph()), topology_(topology_from_dataset(dataset_)) {
    config_.fanouts = {{5, 3}};
    std::vector<int64_t> seeds(600);
    for (int64_t i = 0; i < 600; ++i) seeds[i] = i * 3;
    plan_ = plan_epoch(seeds, 32, 7, 1);
  }

  std::function<BatchSampler()> neighbor_samplers() {
    return [this] {
      auto sampler = std::make_shared<NeighborSampler>(topology_, config_);
      return [sampler](Span<const int64_t> seeds, const SampleKey& key) { return sampler->sample(seeds, key); };
    };
  }

  Dataset dataset_;
  Topology topology_;
  SamplerConfig config_;
  EpochPlan plan_;
};

TEST_F(LoaderTest, BatchesComeInPlanOrderWhateverTheWorkers) {
  NeighborSampler reference(topology_, config_);
  for (int workers : {1, 3}) {
    for (int prefetch : {1, 4}) {
      Loader loader(plan_, neighbor_samplers(), {workers, prefetch, 30s});
      ASSERT_EQ(loader.num_batches(), 19);
      for (int64_t b = 0; b < loader.num_batches(); ++b) {
        ASSERT_TRUE(loader.has_next());
        MiniBatch got = loader.next();
        MiniBatch want = reference.sample(plan_.batch(b), plan_.key(b));
        ASSERT_EQ(got.node_ids, want.node_ids) << "batch " << b << ", " << workers << " workers";
        ASSERT_EQ(got.edge_ids, want.edge_ids);
      }
      EXPECT_FALSE(loader.has_next());
      EXPECT_THROW(loader.next(), Error);
    }
  }
}

TEST_F(LoaderTest, NeverSamplesMoreThanPrefetchAhead) {
  Loader loader(plan_, neighbor_samplers(), {3, 2, 30s});
  while (loader.has_next()) {
    loader.next();
    std::this_thread::sleep_for(2ms);  // a slow trainer: the workers would run far ahead
  }
  EXPECT_LE(loader.max_ahead(), 2);
  EXPECT_GE(loader.max_ahead(), 1);
}

TEST_F(LoaderTest, ASamplingErrorReachesTheTrainerNamingTheBatch) {
  auto failing = [this]() -> BatchSampler {
    auto sampler = std::make_shared<NeighborSampler>(topology_, config_);
    return [sampler](Span<const int64_t> seeds, const SampleKey& key) {
      if (key.batch == 3) throw Error("partition 1: hop request failed: no reply within 500 ms");
      return sampler->sample(seeds, key);
    };
  };
  Loader loader(plan_, failing, {2, 2, 30s});
  for (int b = 0; b < 3; ++b) EXPECT_NO_THROW(loader.next());
  try {
    loader.next();
    FAIL() << "batch 3 should fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("batch 3 of epoch 1: partition 1"), std::string::npos) << e.what();
  }
}

TEST_F(LoaderTest, ABatchLateBeyondTheDeadlineIsAnError) {
  std::atomic<bool> release{false};
  auto stuck = [&release]() -> BatchSampler {
    return [&release](Span<const int64_t>, const SampleKey&) {
      for (int i = 0; i < 1000 && !release; ++i) std::this_thread::sleep_for(1ms);
      return MiniBatch{};
    };
  };
  {
    Loader loader(plan_, stuck, {1, 1, 50ms});
    try {
      loader.next();
      FAIL() << "a stuck batch was returned";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("did not arrive within 50 ms"), std::string::npos) << e.what();
    }
    release = true;
  }  // the destructor joins the worker once its batch ends
}

TEST_F(LoaderTest, StoppingMidEpochJoinsTheWorkers) {
  auto start = std::chrono::steady_clock::now();
  {
    Loader loader(plan_, neighbor_samplers(), {3, 4, 30s});
    loader.next();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  EXPECT_THROW(Loader(plan_, neighbor_samplers(), {0, 1, 1s}), UsageError);
  EXPECT_THROW(Loader(plan_, neighbor_samplers(), {1, 0, 1s}), UsageError);
}

}  // namespace
}  // namespace partita
