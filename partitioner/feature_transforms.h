// Feature transforms applied once, when a dataset is prepared for partitioning (`data.transforms`
// in a job, `partita partition --transform`), and recorded in META.json: the partitions then
// hold the transformed features, so no sampler or trainer repeats the work per batch, and a
// folder says how its features were made. What PyG users apply as `transform=` at load time:
// sparse bag-of-words features (the LINQS format) reach published accuracies only after row
// normalisation (Kipf & Welling's preprocessing).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "partitioner/dataset.h"

namespace partita {

struct FeatureTransform {
  enum class Kind {
    // PyG's NormalizeFeatures: x -= min(x) over the whole matrix (a no-op for non-negative
    // features), then each row divided by max(its sum, 1).
    kNormalizeFeatures,
    // Each column to mean 0 and standard deviation 1 over all nodes (population std); a
    // constant column becomes 0.
    kStandardize,
    // The columns `columns` of x hold category codes (integers >= 0; -1 = none); they are
    // replaced, at the position of the first, by one multi-hot block of width max code + 1
    // with a 1 at each of a row's codes. One column gives a one-hot encoding.
    kMultiHot,
  };
  Kind kind = Kind::kNormalizeFeatures;
  std::vector<int64_t> columns;  // kMultiHot only

  // "normalize_features", "standardize", "multi_hot:3,4": how jobs, the CLI and META.json
  // spell it.
  std::string text() const;
};

// Parses one transform's text. Throws UsageError naming `what` (the field or flag) and the
// known names, e.g. "data.transforms[1]: unknown transform 'foo' (known: normalize_features,
// standardize, multi_hot:COLUMNS)".
FeatureTransform parse_feature_transform(const std::string& text, const std::string& what);

// Applies `transforms` in order to d.x and appends each one's text to d.transforms. Throws
// Error naming the transform and the problem (no features to transform, a column out of
// range, a code that is not a non-negative integer or -1, node types with features of their
// own widths: Dataset::node_type_feature_dim); a transform that fails leaves
// x as the ones before it made it (the dataset in memory: nothing is written).
void apply_feature_transforms(Dataset& d, const std::vector<FeatureTransform>& transforms);

}  // namespace partita
