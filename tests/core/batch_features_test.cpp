// Rows split by owner and placed back, and features attached to a batch from partitioned
// stores: the same rows as the dataset's.
#include "graph/batch_features.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "graph/row_split.h"
#include "graph/subgraph_builder.h"
#include "partitioned_graph.h"
#include "partitioner/partition.h"
#include "partitioner/partition_stores.h"
#include "test_util.h"

namespace partita {
namespace {

TEST(RowSplitTest, RowsLandWhereTheirIdsWere) {
  PartitionBook book({0, 10, 20, 30});
  std::vector<int64_t> ids{25, 3, 14, 3, 29, 0};
  RowSplit split;
  split.split(book, ids);
  EXPECT_EQ(std::vector<int64_t>(split.ids(0).begin(), split.ids(0).end()), (std::vector<int64_t>{3, 3, 0}));
  std::vector<int64_t> out(ids.size(), -1);
  for (int p = 0; p < 3; ++p) {
    std::vector<int64_t> rows;
    for (int64_t id : split.ids(p)) rows.push_back(id * 100);  // "the row of id"
    split.place(p, rows.data(), sizeof(int64_t), out.data());
  }
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(out[i], ids[i] * 100);
  std::vector<int64_t> outside{30};
  EXPECT_THROW(split.split(book, outside), Error);
}

TEST(BatchFeaturesTest, PartitionedFeaturesEqualTheDatasets) {
  Dataset d = testing::sbm_graph(3000);
  testing::TempDir tmp;
  PartitionOptions options;
  options.num_parts = 3;
  partition_dataset(d, options, tmp / "p");
  testing::PartitionedGraph graph(tmp / "p");
  PartitionFolder folder(tmp / "p");
  std::vector<FeatureStore> stores;
  for (int p = 0; p < 3; ++p) stores.push_back(load_features(folder, p));
  std::vector<const FeatureStore*> store_ptrs;
  for (const auto& s : stores) store_ptrs.push_back(&s);

  SamplerConfig config;
  config.fanouts = {{5, 5}};
  std::vector<int64_t> seeds;
  for (int64_t v = 0; v < 100; ++v) seeds.push_back(graph.global_of_original()[v * 29]);
  SubgraphBuilder builder(false);
  builder.start(seeds);
  graph.sample_hops(builder, std::vector<SamplerConfig>(3, config), {1, 0, 0});
  MiniBatch batch = builder.finish();
  attach_features(batch, graph.book(), store_ptrs, {}, 2);
  ASSERT_EQ(batch.feature_dim, d.feature_dim);
  ASSERT_EQ(batch.x.size(), batch.node_ids.size() * d.feature_dim);
  ASSERT_EQ(batch.y.size(), batch.node_ids.size());
  for (size_t i = 0; i < batch.node_ids.size(); ++i) {
    int64_t v = graph.original_of_global()[batch.node_ids[i]];
    EXPECT_EQ(batch.y[i], d.y[v]);
    for (int64_t f = 0; f < d.feature_dim; ++f) ASSERT_EQ(batch.x[i * d.feature_dim + f], d.x[v * d.feature_dim + f]);
  }
  FeatureNames missing;
  missing.x = "embedding";
  EXPECT_THROW(attach_features(batch, graph.book(), store_ptrs, missing), Error);
}

}  // namespace
}  // namespace partita
