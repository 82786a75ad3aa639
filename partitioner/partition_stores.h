// Opening the graph/ stores of a partition: from a partition folder or from an in-memory
// dataset (as one partition). A folder's topology (the arrays the sampler reads at random)
// and its attributes (features, labels, times) go into huge-page memory when they fit
// (base/resident_array.h says why) and are mapped otherwise.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "graph/feature_store.h"
#include "graph/stores.h"
#include "graph/topology.h"
#include "partitioner/dataset.h"
#include "partitioner/partition_format.h"

namespace partita {

// The topology of one part of a partition folder. Its sampling arrays (columns, original
// node ids: Topology::sampling_bytes) are copied into huge-page memory when they take at
// most half of the memory the kernel reports available (MemAvailable), as attributes are:
// every sampled node reads random lines of them, and on 4 KB pages each is a TLB miss too.
// Otherwise, and always for the original edge ids (read only to report results), mapped:
// only the pages the sampler touches are read.
Topology load_topology(const PartitionFolder& folder, int part);

// Where a topology built in memory keeps its sampling arrays: huge-page memory, or the
// vectors it was built in (4 KB pages where transparent huge pages are `madvise`-only: what
// `partita bench sample` compares against).
enum class TopologyMemory { kHugePages, kPlain };

// The whole dataset as a single partition (global ids = original ids), for the reference
// sampler and for tests that compare against partitioned runs.
Topology topology_from_dataset(const Dataset& dataset, TopologyMemory memory = TopologyMemory::kHugePages);

// Where a part's attributes are kept once opened (the job file's `features.storage`):
//   kMemory: copied into anonymous memory with huge pages, the fastest for random rows;
//   kMapped: the files mapped, read through the page cache (attributes larger than memory);
//   kAuto:   kMemory when the part's attribute files together take at most half of the
//            memory the kernel reports available (MemAvailable) as they are opened, so
//            that a node keeps room for its batches, trainers and the other processes on
//            it; kMapped otherwise (never kDisk: reading rows from disk is a choice);
//   kDisk:   the feature matrices (node x, edge edge_attr) stay in their files and each
//            gather reads its rows with io_uring, O_DIRECT where the file system allows
//            (graph/disk_rows.h): features larger than memory take none of it; the other
//            attributes (labels, times, types: a few bytes a row) go into memory.
enum class FeatureStorage { kAuto, kMemory, kMapped, kDisk };
// "auto", "memory", "mapped", "disk".
const char* feature_storage_name(FeatureStorage storage);
// The storage named `text`; throws UsageError naming `what` and the choices otherwise.
FeatureStorage parse_feature_storage(const std::string& text, const std::string& what);
// kMemory or kMapped: `storage`, or for kAuto the rule above for attributes of
// `attribute_bytes` with `available_bytes` of memory available.
FeatureStorage resolve_feature_storage(FeatureStorage storage, uint64_t attribute_bytes, uint64_t available_bytes);

// The attributes of one part: group "node" holds x, y, node_time and node_type; group
// "edge" holds edge_attr and edge_time (rows by global edge id, CSC order), as present in
// the folder; kept as `storage` says.
FeatureStore load_features(const PartitionFolder& folder, int part, FeatureStorage storage = FeatureStorage::kAuto);

// Part `part` of the partition folder `dir`, opened once per process while anyone holds
// it: a partition actor and a sampler placed with it read the same stores (one copy of the
// features, whichever the storage). The first opener's `storage` decides while the stores
// are held. Throws Error naming the folder when it cannot be opened.
PartitionStores open_partition_stores(const std::string& dir, int part, FeatureStorage storage = FeatureStorage::kAuto);

// The dataset's attributes as a single partition, laid out as topology_from_dataset's
// ids (edge rows in CSC order).
FeatureStore features_from_dataset(const Dataset& dataset);

}  // namespace partita
