// The feature transforms of `data.transforms` / `partita partition --transform`: their
// values, their record in META.json, and their errors.
#include "partitioner/feature_transforms.h"

#include <gtest/gtest.h>

#include <cmath>

#include "base/error.h"
#include "partitioner/partition_format.h"
#include "test_util.h"

namespace partita {
namespace {

Dataset three_nodes(std::vector<float> x, int64_t f) {
  Dataset d;
  d.name = "t";
  d.num_nodes = 3;
  d.edges.push_back(0, 1);
  d.edges.push_back(1, 2);
  d.feature_dim = f;
  d.x = std::move(x);
  return d;
}

template <typename F>
std::string error_message(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

std::vector<FeatureTransform> parse(const std::vector<std::string>& texts) {
  std::vector<FeatureTransform> out;
  for (const auto& t : texts) out.push_back(parse_feature_transform(t, "test"));
  return out;
}

TEST(FeatureTransformsTest, NormalizeFeaturesIsPygsRowNormalisation) {
  // Non-negative bag of words: each row divided by its sum; a row summing below 1 by 1.
  Dataset d = three_nodes({1, 3, 0, 0, 0, 0, 0.25f, 0.25f, 0}, 3);
  apply_feature_transforms(d, parse({"normalize_features"}));
  EXPECT_EQ(d.x, (std::vector<float>{0.25f, 0.75f, 0, 0, 0, 0, 0.25f, 0.25f, 0}));
  // Negative values: shifted by the matrix's minimum first (PyG's x - x.min()).
  Dataset n = three_nodes({-1, 1, 0, 0, 1, 1}, 2);
  apply_feature_transforms(n, parse({"normalize_features"}));
  EXPECT_EQ(n.x, (std::vector<float>{0, 1, 0.5f, 0.5f, 0.5f, 0.5f}));
  EXPECT_EQ(n.transforms, std::vector<std::string>{"normalize_features"});
}

TEST(FeatureTransformsTest, StandardizeGivesZeroMeanUnitVariancePerColumn) {
  Dataset d = three_nodes({1, 5, 2, 5, 3, 5}, 2);
  apply_feature_transforms(d, parse({"standardize"}));
  const float s = std::sqrt(1.5f);  // (1, 2, 3): mean 2, population std sqrt(2/3)
  EXPECT_NEAR(d.x[0], -s, 1e-6);
  EXPECT_NEAR(d.x[2], 0, 1e-6);
  EXPECT_NEAR(d.x[4], s, 1e-6);
  // A constant column becomes 0, not NaN.
  EXPECT_EQ(d.x[1], 0);
  EXPECT_EQ(d.x[3], 0);
  EXPECT_EQ(d.x[5], 0);
}

TEST(FeatureTransformsTest, MultiHotReplacesCodeColumnsByOneBlockAtTheFirst) {
  // Columns: a real feature, then two category codes (-1 = none), then another feature.
  Dataset d = three_nodes({0.5f, 2, 0, 9, 0.1f, 1, -1, 8, 0.2f, -1, -1, 7}, 4);
  apply_feature_transforms(d, parse({"multi_hot:1,2"}));
  ASSERT_EQ(d.feature_dim, 5);  // 4 - 2 codes + width 3
  EXPECT_EQ(d.x, (std::vector<float>{0.5f, 1, 0, 1, 9,  //
                                     0.1f, 0, 1, 0, 8,  //
                                     0.2f, 0, 0, 0, 7}));
  EXPECT_EQ(d.transforms, std::vector<std::string>{"multi_hot:1,2"});
}

TEST(FeatureTransformsTest, TransformsAreRecordedInMetaJson) {
  Dataset d = three_nodes({1, 3, 0, 2, 2, 2}, 2);
  apply_feature_transforms(d, parse({"normalize_features", "standardize"}));
  testing::TempDir dir;
  PartitionOptions options;
  options.num_parts = 1;
  partition_dataset(d, options, dir / "p");
  const PartitionMeta meta = read_partition_meta(dir / "p");
  EXPECT_EQ(meta.transforms, (std::vector<std::string>{"normalize_features", "standardize"}));
  // The partitions hold the transformed rows.
  const PartitionData part = PartitionFolder(dir / "p").load_part(0);
  const Span<const float> x = part.x->as<float>();
  EXPECT_NEAR(x[0] + x[2] + x[4], 0, 1e-6);
}

TEST(FeatureTransformsTest, BadTransformsAreNamedErrors) {
  EXPECT_CONTAINS(error_message([] { parse_feature_transform("normalise", "data.transforms[0]"); }),
                  "data.transforms[0]: unknown transform 'normalise' (known: normalize_features, standardize, multi_hot");
  EXPECT_THROW(parse_feature_transform("normalise", "x"), UsageError);
  EXPECT_CONTAINS(error_message([] { parse_feature_transform("multi_hot:1,x", "--transform"); }),
                  "--transform: 'x' in 'multi_hot:1,x' is not a feature column");
  EXPECT_CONTAINS(error_message([] { parse_feature_transform("multi_hot:", "--transform"); }),
                  "--transform: '' in 'multi_hot:' is not a feature column");
  Dataset d = three_nodes({0, 1.5f, 0, 1, 0, 2}, 2);
  EXPECT_CONTAINS(error_message([&] { apply_feature_transforms(d, parse({"multi_hot:1"})); }),
                  "feature transform multi_hot:1: node 0, column 1 holds 1.5");
  EXPECT_CONTAINS(error_message([&] { apply_feature_transforms(d, parse({"multi_hot:2"})); }),
                  "feature transform multi_hot:2: column 2 is not one of the 2 feature columns");
  Dataset bare = three_nodes({}, 0);
  EXPECT_CONTAINS(error_message([&] { apply_feature_transforms(bare, parse({"standardize"})); }),
                  "feature transform standardize: dataset 't' has no node features to transform");
  // Node types whose features have widths of their own: columns past a width are padding.
  Dataset typed = three_nodes({1, 2, 3, 0, 5, 0}, 2);
  typed.node_type = {0, 1, 1};
  typed.node_type_names = {"a", "b"};
  typed.node_type_feature_dim = {2, 1};
  EXPECT_CONTAINS(error_message([&] { apply_feature_transforms(typed, parse({"standardize"})); }),
                  "feature transform standardize: dataset 't' gives its node types features of their own widths");
  EXPECT_EQ(typed.x, (std::vector<float>{1, 2, 3, 0, 5, 0}));
}

}  // namespace
}  // namespace partita
