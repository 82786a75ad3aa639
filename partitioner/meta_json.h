// META.json: the partition folder's table of contents, read before any array is mapped.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "partitioner/partition_format.h"

namespace partita {

// The dataset-level fields of META.json (no parts or partition book yet).
PartitionMeta describe_dataset(const Dataset& dataset);

void write_meta_json(const PartitionMeta& meta, const std::string& path);

// The "node_features" and "edge_features" objects (dtype and shape of x and edge_attr) as
// META.json and `inspect --json` write them.
void add_feature_shapes(const PartitionMeta& meta, nlohmann::json& j);

// One part's statistics as META.json and `inspect --json` write them.
nlohmann::json part_stats_json(const PartStats& stats);

// Parses and validates; every error names the file and the field
// ("META.json: field 'num_parts': expected a positive integer").
PartitionMeta parse_meta_json(const std::string& path);

}  // namespace partita
