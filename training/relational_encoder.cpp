#include "training/relational_encoder.h"

#include <algorithm>

#include "base/error.h"

namespace partita {

void require_relational_graph(const PartitionMeta& meta, const std::string& kind, const std::string& field,
                              const std::string& dir) {
  if (!meta.is_hetero || meta.node_types.empty() || meta.edge_types.empty()) {
    throw UsageError(field + ": " + kind + " needs a heterogeneous graph (node and edge types); " + dir +
                     " is homogeneous: use graphsage, gcn or gat");
  }
}

void set_relations(ModelConfig& config, const PartitionMeta& meta) {
  config.num_nodes = meta.num_nodes;
  config.num_node_types = static_cast<int>(meta.node_types.size());
  config.num_relations = static_cast<int>(meta.edge_types.size());
  config.relation_dst_type.clear();
  for (const EdgeType& t : meta.edge_types) {
    const auto it = std::find(meta.node_types.begin(), meta.node_types.end(), t.dst_type);
    config.relation_dst_type.push_back(static_cast<int32_t>(it - meta.node_types.begin()));
  }
}

std::vector<std::string> find_type_inputs(const std::vector<std::string>& node_types,
                                          const std::map<std::string, std::string>& inputs, int64_t feature_dim,
                                          const std::string& what) {
  if (inputs.empty()) return {};
  std::vector<std::string> types(node_types.size(), "learnt");
  for (const auto& [name, input] : inputs) {
    const auto it = std::find(node_types.begin(), node_types.end(), name);
    if (it == node_types.end()) {
      std::string known;
      for (const std::string& t : node_types) known += (known.empty() ? "" : ", ") + t;
      throw UsageError("model.input: '" + name + "' is not a node type of " + what + " (its types: " +
                       (known.empty() ? std::string("none") : known) + ")");
    }
    if (ModelConfig::input_reads_features(input) && feature_dim <= 0) {
      throw UsageError("model.input: " + name + ": " + input + " reads the node features, and " + what +
                       " has none (use learnt or shared)");
    }
    types[static_cast<size_t>(it - node_types.begin())] = input;
  }
  return types;
}

std::vector<int32_t> global_node_types(const PartitionFolder& folder) {
  std::vector<int32_t> types(static_cast<size_t>(folder.meta().num_nodes));
  for (int p = 0; p < folder.meta().num_parts; ++p) {
    const PartitionData part = folder.load_part(p);
    if (!part.node_type) throw Error(folder.dir() + ": part " + std::to_string(p) + " has no node types");
    const Span<const int32_t> t = part.node_type->as<int32_t>();
    std::copy(t.begin(), t.end(), types.begin() + part.node_begin);
  }
  return types;
}

int32_t find_target_edge(const std::vector<EdgeType>& types, const std::vector<std::string>& target,
                         const std::string& what) {
  if (target.empty()) return -1;
  const std::string named = "[" + target.at(0) + ", " + target.at(1) + ", " + target.at(2) + "]";
  std::string known;
  for (size_t t = 0; t < types.size(); ++t) {
    if (types[t].src_type == target[0] && types[t].relation == target[1] && types[t].dst_type == target[2]) {
      return static_cast<int32_t>(t);
    }
    known += (known.empty() ? "" : ", ") + ("[" + types[t].src_type + ", " + types[t].relation + ", " +
                                            types[t].dst_type + "]");
  }
  if (types.empty()) throw UsageError("model.target_edge: " + named + ", but " + what + " has no edge types");
  throw UsageError("model.target_edge: " + named + " is not an edge type of " + what + " (its types: " + known + ")");
}

}  // namespace partita
