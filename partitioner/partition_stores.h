// Opening the graph/ stores of a partition: from a partition folder (memory-mapped) or from
// an in-memory dataset (as one partition).
#pragma once

#include <memory>
#include <string>

#include "graph/feature_store.h"
#include "graph/stores.h"
#include "graph/topology.h"
#include "partitioner/dataset.h"
#include "partitioner/partition_format.h"

namespace partita {

// The topology of one part of a partition folder, mapped: opening is instant and only the
// pages the sampler touches are read.
Topology load_topology(const PartitionFolder& folder, int part);

// The whole dataset as a single partition (global ids = original ids), for the reference
// sampler and for tests that compare against partitioned runs.
Topology topology_from_dataset(const Dataset& dataset);

// The attributes of one part, mapped: group "node" holds x, y, node_time and node_type;
// group "edge" holds edge_attr and edge_time (rows by global edge id, CSC order), as
// present in the folder.
FeatureStore load_features(const PartitionFolder& folder, int part);

// Part `part` of the partition folder `dir`, opened (memory-mapped) once per process while
// anyone holds it: a partition actor and a sampler placed with it read the same stores.
// Throws Error naming the folder when it cannot be opened.
PartitionStores open_partition_stores(const std::string& dir, int part);

// The dataset's attributes as a single partition, laid out as topology_from_dataset's
// ids (edge rows in CSC order).
FeatureStore features_from_dataset(const Dataset& dataset);

}  // namespace partita
