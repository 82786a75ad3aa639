// A partition's immutable stores, shared by whoever reads them in one process: its
// partition actor and the samplers placed with it read the same memory-mapped arrays
// (partitioner/partition_stores.h opens them once per process).
#pragma once

#include <memory>

#include "graph/feature_store.h"
#include "graph/topology.h"

namespace partita {

struct PartitionStores {
  std::shared_ptr<const Topology> topology;
  std::shared_ptr<const FeatureStore> features;
};

}  // namespace partita
