#include "models/model_config.h"

#include "base/error.h"

namespace partita {

namespace {

[[noreturn]] void bad(const std::string& field, const std::string& problem) {
  throw UsageError("model." + field + ": " + problem);
}

}  // namespace

void ModelConfig::validate() const {
  if (kind != "graphsage" && kind != "gcn" && kind != "gat") {
    bad("kind", "must be graphsage, gcn or gat (got \"" + kind + "\")");
  }
  if (in_dim <= 0) bad("in_dim", "must be positive (got " + std::to_string(in_dim) + ")");
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
  return s;
}

}  // namespace partita
