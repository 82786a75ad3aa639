#include "models/model_config.h"

#include "base/error.h"

namespace partita {

namespace {

[[noreturn]] void bad(const std::string& field, const std::string& problem) {
  throw UsageError("model." + field + ": " + problem);
}

}  // namespace

void ModelConfig::validate() const {
  if (kind != "graphsage" && kind != "gcn" && kind != "gat" && kind != "rgcn" && kind != "hetero_sage" &&
      kind != "mf" && kind != "registered") {
    bad("kind", "must be graphsage, gcn, gat, rgcn, hetero_sage, mf or registered (got \"" + kind + "\")");
  }
  if (is_registered() && name.empty()) bad("name", "kind registered needs the name its model was registered under");
  if (!is_registered() && !name.empty()) bad("name", "applies to kind registered only, not " + kind);
  if (is_matrix_factorisation()) {
    // A row per node and nothing else: the layer fields do not apply.
    if (num_nodes <= 0) bad("num_nodes", "mf learns a row per node and needs the node count");
    if (out_dim <= 0) bad("out_dim", "must be positive (got " + std::to_string(out_dim) + ")");
    if (in_dim != 0) bad("in_dim", "mf reads no features, so in_dim must be 0 (got " + std::to_string(in_dim) + ")");
    if (!type_inputs.empty()) bad("type_inputs", "applies to the relational kinds (rgcn, hetero_sage) only");
    if (!(init_std >= 0)) bad("init_std", "must be at least 0 (got " + std::to_string(init_std) + ")");
    return;
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
    if (!type_inputs.empty() && static_cast<int>(type_inputs.size()) != num_node_types) {
      bad("type_inputs", "has " + std::to_string(type_inputs.size()) + " entries for " +
                             std::to_string(num_node_types) + " node types");
    }
    bool reads_features = type_inputs.empty() && in_dim > 0;
    for (size_t t = 0; t < type_inputs.size(); ++t) {
      const std::string& input = type_inputs[t];
      if (input != "features" && input != "learnt" && input != "shared" && input != "features+learnt") {
        bad("type_inputs", "node type " + std::to_string(t) + ": must be features, learnt, shared or features+learnt (got \"" +
                               input + "\")");
      }
      if (input_reads_features(input)) {
        if (in_dim == 0) {
          bad("type_inputs", "node type " + std::to_string(t) + " reads " + input +
                                 " and the graph has no node features (in_dim 0)");
        }
        reads_features = true;
      }
    }
    if (in_dim > 0 && !reads_features) {
      bad("in_dim", "no node type reads features (type_inputs), so in_dim must be 0 (got " + std::to_string(in_dim) + ")");
    }
    if (reads_learnt_rows() && num_nodes <= 0) bad("num_nodes", "a learnt input row per node needs the node count");
  } else if (!type_inputs.empty()) {
    bad("type_inputs", "applies to the relational kinds (rgcn, hetero_sage) only");
  }
  if (decomposition != "none" && decomposition != "basis" && decomposition != "block") {
    bad("decomposition", "must be none, basis or block (got \"" + decomposition + "\")");
  }
  if (decomposition != "none" && kind != "rgcn") bad("decomposition", "applies to rgcn only");
  if (decomposition == "basis" && num_bases <= 0) bad("bases", "basis decomposition needs bases > 0");
  if (decomposition == "block") {
    if (num_blocks <= 0) bad("blocks", "block decomposition needs blocks > 0");
    if (reads_learnt_rows()) {
      bad("decomposition", "block needs node features: a learnt input row (one-hot input) has no blocks; use basis");
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
  if (!(input_dropout >= 0 && input_dropout < 1)) {
    bad("input_dropout", "must be in [0, 1) (got " + std::to_string(input_dropout) + ")");
  }
}

std::string ModelConfig::input_of(int32_t type) const {
  if (!type_inputs.empty()) return type_inputs.at(static_cast<size_t>(type));
  return in_dim > 0 ? "features" : "learnt";
}

bool ModelConfig::reads_learnt_rows() const {
  if (type_inputs.empty()) return in_dim == 0;
  for (const std::string& input : type_inputs) {
    if (input_reads_row(input)) return true;
  }
  return false;
}

bool ModelConfig::has_shared_input() const {
  for (const std::string& input : type_inputs) {
    if (input_is_shared(input)) return true;
  }
  return false;
}

std::string ModelConfig::structure() const {
  if (is_matrix_factorisation()) return "mf rows=" + std::to_string(num_nodes) + " dim=" + std::to_string(out_dim);
  std::string s = (is_registered() ? kind + ":" + name : kind) + " in=" + std::to_string(in_dim);
  if (num_layers > 1) s += " hidden=" + std::to_string(hidden_dim);
  s += " out=" + std::to_string(out_dim) + " layers=" + std::to_string(num_layers);
  if (kind == "gat") s += " heads=" + std::to_string(heads);
  if (is_relational()) {
    s += " relations=" + std::to_string(num_relations) + " node_types=" + std::to_string(num_node_types);
    if (reads_learnt_rows()) s += " one_hot_nodes=" + std::to_string(num_nodes);
    for (size_t t = 0; t < type_inputs.size(); ++t) s += (t == 0 ? " inputs=" : ",") + type_inputs[t];
    if (decomposition == "basis") s += " bases=" + std::to_string(num_bases);
    if (decomposition == "block") s += " blocks=" + std::to_string(num_blocks);
  }
  return s;
}

}  // namespace partita
