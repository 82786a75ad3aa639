// What a relational model (R-GCN, heterogeneous GraphSAGE: models/relational.h) takes from
// a heterogeneous partition folder, whichever task trains it (node classification,
// training/trainer.cpp; link prediction, training/gnn_link_trainer.cpp): a relation per edge
// type with the node type it ends in, every node's type by global id for the batch layout,
// and the edge type a link job trains on. One place, so that both tasks read a folder's
// types the same way and refuse a graph that does not fit with the same words.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/model_config.h"
#include "partitioner/dataset.h"
#include "partitioner/partition_format.h"

namespace partita {

// Throws UsageError naming `field` (model.kind or model.encoder) unless `meta` is a
// heterogeneous graph, with node and edge types, that the relational `kind` can run on.
void require_relational_graph(const PartitionMeta& meta, const std::string& kind, const std::string& field,
                              const std::string& dir);

// Fills config's relational fields (num_nodes for a one-hot input, node types, a relation
// per edge type of `meta` and the type it ends in); the caller sets kind and the sizes.
void set_relations(ModelConfig& config, const PartitionMeta& meta);

// ModelConfig::type_inputs from model.input's map (JobConfig's link.type_inputs: node type
// name -> what its nodes read; a type not named reads a learnt row), one entry per type of
// `node_types`; empty when the map is. Throws UsageError naming model.input when a name is
// not one of `node_types` (of `what`; listing them), or a type reads features and the
// graph has none (`feature_dim` 0).
std::vector<std::string> find_type_inputs(const std::vector<std::string>& node_types,
                                          const std::map<std::string, std::string>& inputs, int64_t feature_dim,
                                          const std::string& what);

// Every node's type by global id, from each part's node_type.bin. Throws Error naming the
// folder when a part has none.
std::vector<int32_t> global_node_types(const PartitionFolder& folder);

// The index in `types` of the edge type `target` = {src type, relation, dst type}; -1 when
// `target` is empty (no target: every edge). Throws UsageError naming model.target_edge
// and listing `types` (of `what`) when it is not one of them, or `types` is empty.
int32_t find_target_edge(const std::vector<EdgeType>& types, const std::vector<std::string>& target,
                         const std::string& what);

}  // namespace partita
