// Batch assembly as pure steps: driven by hand, with some partitions co-located and the
// others "remote" (their answers computed here and handed in, as a sampler's messages would
// bring them), it gives the single-partition reference batch, features and labels
// included; an answer that does not fit the question is an error naming the partition.
#include "graph/batch_assembly.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "graph/neighbor_sampler.h"
#include "partitioned_graph.h"
#include "partitioner/partition.h"
#include "partitioner/partition_stores.h"
#include "test_util.h"

namespace partita {
namespace {

class BatchAssemblyTest : public ::testing::Test {
 protected:
  BatchAssemblyTest() : dataset_(testing::sbm_graph(3000)) {
    config_.fanouts = {{8, 4, 2}};
    PartitionOptions options;
    options.num_parts = 3;
    partition_dataset(dataset_, options, tmp_ / "p");
    graph_ = std::make_unique<testing::PartitionedGraph>(tmp_ / "p");
    for (int p = 0; p < 3; ++p) stores_.push_back(open_partition_stores(tmp_ / "p", p));
  }

  // Drives one batch: parts with local[p] through the assembly's direct calls, the others
  // by handing in what their partition would answer.
  MiniBatch assemble(const std::vector<bool>& local, const std::vector<int64_t>& seeds, const SampleKey& key) {
    std::vector<PartitionStores> co_located(3);
    for (int p = 0; p < 3; ++p) {
      if (local[p]) co_located[p] = stores_[p];
    }
    BatchAssembly a(graph_->book(), config_, {}, co_located);
    a.start(seeds, key, MiniBatch{});
    while (a.sampling()) {
      for (int p = 0; p < a.num_parts(); ++p) {
        if (!a.hop_needs(p)) continue;
        if (a.is_local(p)) {
          a.sample_local(p);
        } else {
          sample_hop(*stores_[p].topology, config_, key, a.hop(), a.hop_input(p), a.hop_output(p));
        }
      }
      a.finish_hop();
    }
    a.start_rows();
    for (int p = 0; p < a.num_parts(); ++p) {
      if (a.rows_of(p).empty()) continue;
      if (a.is_local(p)) {
        a.gather_local(p);
        continue;
      }
      std::vector<float> x;
      std::vector<int64_t> y;
      stores_[p].features->gather_as("node", "x", a.rows_of(p), x);
      stores_[p].features->gather_as("node", "y", a.rows_of(p), y);
      a.set_width(p, Rows::kX, static_cast<int64_t>(x.size() / a.rows_of(p).size()));
      a.set_width(p, Rows::kY, 1);
      // Rows may arrive in pieces, as over a channel.
      const RowsTarget tx = a.rows_target(p, Rows::kX);
      const size_t half = a.rows_of(p).size() / 2;
      place_rows(tx, reinterpret_cast<const char*>(x.data()), 0, half);
      place_rows(tx, reinterpret_cast<const char*>(x.data()) + half * tx.row_bytes, half, a.rows_of(p).size() - half);
      place_rows(a.rows_target(p, Rows::kY), reinterpret_cast<const char*>(y.data()), 0, y.size());
    }
    return a.finish();
  }

  testing::OriginalBatch reference(const std::vector<int64_t>& seeds, const SampleKey& key) {
    Topology whole = topology_from_dataset(dataset_);
    FeatureStore features = features_from_dataset(dataset_);
    NeighborSampler sampler(whole, config_);
    std::vector<int64_t> original;
    for (int64_t g : seeds) original.push_back(graph_->original_of_global()[g]);
    MiniBatch want = sampler.sample(original, key);
    attach_features(want, whole.book(), {&features});
    return testing::to_original(want, [](int64_t v) { return v; }, [&](int64_t e) { return whole.original_edge_id(e); });
  }

  testing::OriginalBatch original(const MiniBatch& got) {
    return testing::to_original(got, [&](int64_t v) { return graph_->original_of_global()[v]; },
                                [&](int64_t e) { return graph_->original_edge(e); });
  }

  testing::TempDir tmp_;
  Dataset dataset_;
  SamplerConfig config_;
  std::unique_ptr<testing::PartitionedGraph> graph_;
  std::vector<PartitionStores> stores_;
};

TEST_F(BatchAssemblyTest, AnyMixOfCoLocatedAndRemotePartsGivesTheReferenceBatch) {
  std::vector<int64_t> seeds;
  for (int64_t v = 0; v < 200; ++v) seeds.push_back(graph_->global_of_original()[v * 13]);
  const SampleKey key{9, 2, 5};
  const testing::OriginalBatch want = reference(seeds, key);
  ASSERT_GT(want.feature_dim, 0);
  for (const std::vector<bool>& local : {std::vector<bool>{true, true, true}, std::vector<bool>{true, false, false},
                                         std::vector<bool>{false, true, false}}) {
    SCOPED_TRACE(std::string("co-located: ") + (local[0] ? "0 " : "") + (local[1] ? "1 " : "") + (local[2] ? "2" : ""));
    EXPECT_TRUE(original(assemble(local, seeds, key)) == want);
  }
}

TEST_F(BatchAssemblyTest, AnAnswerThatDoesNotFitTheQuestionNamesThePartition) {
  std::vector<int64_t> seeds;
  for (int64_t v = 0; v < 50; ++v) seeds.push_back(graph_->global_of_original()[v * 7]);
  BatchAssembly a(graph_->book(), config_, {}, {stores_[0], {}, {}});
  a.start(seeds, {1, 0, 0}, MiniBatch{});
  int remote = -1;
  for (int p = 1; p < 3 && remote < 0; ++p) {
    if (a.hop_needs(p)) remote = p;
  }
  ASSERT_GE(remote, 0);
  for (int p = 0; p < 3; ++p) {
    if (!a.hop_needs(p)) continue;
    if (a.is_local(p)) a.sample_local(p);
    else sample_hop(*stores_[p].topology, config_, {1, 0, 0}, 0, a.hop_input(p), a.hop_output(p));
  }
  a.hop_output(remote).offsets.pop_back();  // one neighbour list short
  try {
    a.finish_hop();
    FAIL() << "a short answer was merged";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("partition " + std::to_string(remote)), std::string::npos) << e.what();
  }
}

TEST_F(BatchAssemblyTest, PartsThatDoNotFitTheBookAreRejected) {
  EXPECT_THROW(BatchAssembly(graph_->book(), config_, {}, {stores_[1], {}, {}}), UsageError);
  EXPECT_THROW(BatchAssembly(graph_->book(), config_, {}, {stores_[0], {}}), UsageError);
}

}  // namespace
}  // namespace partita
