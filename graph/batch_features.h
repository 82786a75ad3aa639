// Attaching the sampled nodes' features and labels to a mini-batch, from the feature stores
// of the partitions that own them.
#pragma once

#include <string>
#include <vector>

#include "graph/feature_store.h"
#include "graph/mini_batch.h"
#include "graph/partition_book.h"

namespace partita {

struct FeatureNames {
  std::string x = "x";  // float32 [rows, F] in group "node"; empty name = none
  std::string y = "y";  // int64 [rows] in group "node"; empty name = none
};

// Fills batch.x / batch.y for batch.node_ids. stores[p] is partition p's store (a single
// store with the whole graph is one partition). Each partition's rows are gathered in one
// call, then placed at their nodes' positions. Throws Error if a store lacks an attribute
// or an id is out of range.
void attach_features(MiniBatch& batch, const PartitionBook& book,
                     const std::vector<const FeatureStore*>& stores,
                     const FeatureNames& names = {}, int threads = 1);

}  // namespace partita
