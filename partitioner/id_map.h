// The id map of an edge list whose ids were remapped (ReadOptions::remap_ids: PubMed's
// PMIDs, names, numbered 0..N-1 by first appearance), kept beside its partitions: results
// are in original node ids, and the map reads them back as the file's tokens.
#pragma once

#include <string>

#include "partitioner/partition_format.h"

namespace partita {

// DIR/node_names.tsv: a `#` header line, then `id<TAB>token` for each original node id in
// order.
constexpr const char* kNodeNamesFile = "node_names.tsv";

// partition_dataset (partition_format.h), also writing DIR/kNodeNamesFile from
// Dataset::node_names (none when they are empty) inside the same atomic folder write.
PartitionMeta partition_dataset_keeping_ids(const Dataset& dataset, const PartitionOptions& partition_options,
                                            const std::string& dir, const WriteOptions& options = {});

}  // namespace partita
