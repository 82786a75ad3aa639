#include "models/model_config.h"

#include "base/error.h"

namespace partita {

namespace {

[[noreturn]] void bad(const std::string& field, const std::string& problem) {
  throw UsageError("model." + field + ": " + problem);
}

}  // namespace

void ModelConfig::validate() const {
  if (kind != "graphsage" && kind != "gcn" && kind != "gat" && kind != "rgcn" && kind != "hetero_sage") {
    bad("kind", "must be graphsage, gcn, gat, rgcn or hetero_sage (got \"" + kind + "\")");
  }
  const bool relational = is_relational();
  if (in_dim < 0 || (in_dim == 0 && !relational)) {
    bad("in_dim", "must be positive (got " + std::to_string(in_dim) + ")");
  }
  if (relational) {
    if (num_relations <= 0 || num_node_types <= 0) {
      bad("kind", kind + " needs a heterogeneous graph (node and edge types); this one has " +
                      std::to_string(num_relations) + " edge types");
    }
    if (static_cast<int>(relation_dst_type.size()) != num_relations) {
      bad("relation_dst_type", "has " + std::to_string(relation_dst_type.size()) + " entries for " +
                                   std::to_string(num_relations) + " relations");
    }
    for (int32_t t : relation_dst_type) {
      if (t < 0 || t >= num_node_types) bad("relation_dst_type", "node type " + std::to_string(t) + " out of range");
    }
    if (in_dim == 0 && num_nodes <= 0) bad("num_nodes", "a featureless graph's one-hot input needs the node count");
    for (size_t i = 0; i < shared_input_types.size(); ++i) {
      const int32_t t = shared_input_types[i];
      if (t < 0 || t >= num_node_types) bad("shared_input_types", "node type " + std::to_string(t) + " out of range");
      if (i > 0 && t <= shared_input_types[i - 1]) bad("shared_input_types", "must be sorted without repeats");
    }
    if (!shared_input_types.empty() && in_dim != 0) {
      bad("shared_input_types", "a shared input row per node type needs the one-hot input (in_dim 0)");
    }
  } else if (!shared_input_types.empty()) {
    bad("shared_input_types", "applies to the relational kinds (rgcn, hetero_sage) only");
  }
  if (decomposition != "none" && decomposition != "basis" && decomposition != "block") {
    bad("decomposition", "must be none, basis or block (got \"" + decomposition + "\")");
  }
  if (decomposition != "none" && kind != "rgcn") bad("decomposition", "applies to rgcn only");
  if (decomposition == "basis" && num_bases <= 0) bad("bases", "basis decomposition needs bases > 0");
  if (decomposition == "block") {
    if (num_blocks <= 0) bad("blocks", "block decomposition needs blocks > 0");
    if (in_dim == 0) {
      bad("decomposition", "block needs node features: a one-hot input (featureless graph) has no blocks; use basis");
    }
    for (int i = 0; i < num_layers; ++i) {
      const int64_t in = i == 0 ? in_dim : hidden_dim, out = i + 1 == num_layers ? out_dim : hidden_dim;
      if (in % num_blocks != 0 || out % num_blocks != 0) {
        bad("blocks", std::to_string(num_blocks) + " blocks do not divide layer " + std::to_string(i) + "'s " +
                          std::to_string(in) + " x " + std::to_string(out) + " weights");
      }
    }
  }
  if (out_dim <= 0) bad("out_dim", "must be positive (got " + std::to_string(out_dim) + ")");
  if (num_layers <= 0) bad("num_layers", "must be positive (got " + std::to_string(num_layers) + ")");
  if (num_layers > 1 && hidden_dim <= 0) {
    bad("hidden_dim", "must be positive (got " + std::to_string(hidden_dim) + ")");
  }
  if (heads <= 0) bad("heads", "must be positive (got " + std::to_string(heads) + ")");
  if (kind == "gat" && num_layers > 1 && hidden_dim % heads != 0) {
    bad("heads", "hidden_dim " + std::to_string(hidden_dim) + " is not a multiple of " +
                     std::to_string(heads) + " heads");
  }
  if (!(dropout >= 0 && dropout < 1)) {
    bad("dropout", "must be in [0, 1) (got " + std::to_string(dropout) + ")");
  }
}

std::string ModelConfig::structure() const {
  std::string s = kind + " in=" + std::to_string(in_dim);
  if (num_layers > 1) s += " hidden=" + std::to_string(hidden_dim);
  s += " out=" + std::to_string(out_dim) + " layers=" + std::to_string(num_layers);
  if (kind == "gat") s += " heads=" + std::to_string(heads);
  if (is_relational()) {
    s += " relations=" + std::to_string(num_relations) + " node_types=" + std::to_string(num_node_types);
    if (in_dim == 0) s += " one_hot_nodes=" + std::to_string(num_nodes);
    for (size_t i = 0; i < shared_input_types.size(); ++i) {
      s += (i == 0 ? " shared_input_types=" : ",") + std::to_string(shared_input_types[i]);
    }
    if (decomposition == "basis") s += " bases=" + std::to_string(num_bases);
    if (decomposition == "block") s += " blocks=" + std::to_string(num_blocks);
  }
  return s;
}

}  // namespace partita
