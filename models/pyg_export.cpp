#include "models/pyg_export.h"

#include <ATen/ATen.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <map>

#include "base/error.h"
#include "base/file_util.h"

namespace partita {

namespace {

// Per kind: Partita's parameter name inside layer i (its module conv{i}) -> PyG's inside
// convs.{i}.
const std::map<std::string, std::map<std::string, std::string>>& pyg_names() {
  static const std::map<std::string, std::map<std::string, std::string>> names = {
      {"graphsage", {{"lin_l_weight", "lin_l.weight"}, {"lin_l_bias", "lin_l.bias"}, {"lin_r_weight", "lin_r.weight"}}},
      {"gcn", {{"weight", "lin.weight"}, {"bias", "bias"}}},
      {"gat", {{"weight", "lin.weight"}, {"att_src", "att_src"}, {"att_dst", "att_dst"}, {"bias", "bias"}}},
  };
  return names;
}

const std::map<std::string, std::string> kPygClass = {{"graphsage", "GraphSAGE"}, {"gcn", "GCN"}, {"gat", "GAT"}};

// "conv3.weight" -> {"3", "weight"}; empty when the path is not a layer's parameter.
std::pair<std::string, std::string> split_layer_path(const std::string& path) {
  const size_t dot = path.find('.');
  if (path.rfind("conv", 0) != 0 || dot == std::string::npos || dot == 4) return {};
  const std::string index = path.substr(4, dot - 4);
  if (index.find_first_not_of("0123456789") != std::string::npos) return {};
  return {index, path.substr(dot + 1)};
}

}  // namespace

ExportedParameters export_parameters(const GnnModel& model) {
  ExportedParameters out;
  const std::string& kind = model.config().kind;
  const auto names = pyg_names().find(kind);
  if (names != pyg_names().end()) out.pyg_class = kPygClass.at(kind);
  for (const auto& item : model.named_parameters(/*recurse=*/true)) {
    at::Tensor value = item.value().detach().contiguous();
    if (names == pyg_names().end()) {
      out.tensors.emplace_back(item.key(), value);
      continue;
    }
    const auto [index, name] = split_layer_path(item.key());
    const auto pyg = names->second.find(name);
    if (index.empty() || pyg == names->second.end()) {
      throw Error("export: the " + kind + " model's parameter '" + item.key() + "' has no PyG name");
    }
    out.tensors.emplace_back("convs." + index + "." + pyg->second, value);
  }
  return out;
}

ExportedParameters export_kg_tables(const std::string& decoder, const at::Tensor& entities,
                                    const at::Tensor& relations) {
  ExportedParameters out;
  if (decoder == "distmult") {
    out.pyg_class = "DistMult";
    out.tensors = {{"node_emb.weight", entities.contiguous()}, {"rel_emb.weight", relations.contiguous()}};
  } else if (decoder == "complex") {
    // [real | imaginary] halves (models/kg_decoder.h) -> PyG's two tables per side.
    const int64_t half = entities.size(1) / 2;
    out.pyg_class = "ComplEx";
    out.tensors = {{"node_emb.weight", entities.narrow(1, 0, half).contiguous()},
                   {"node_emb_im.weight", entities.narrow(1, half, half).contiguous()},
                   {"rel_emb.weight", relations.narrow(1, 0, half).contiguous()},
                   {"rel_emb_im.weight", relations.narrow(1, half, half).contiguous()}};
  } else {
    out.tensors = {{"entities", entities.contiguous()}, {"relations", relations.contiguous()}};
  }
  return out;
}

void save_state_dict(const std::string& path, const NamedTensors& tensors) {
  c10::Dict<std::string, at::Tensor> dict;
  for (const auto& [name, tensor] : tensors) {
    if (dict.contains(name)) throw Error("state dict for " + path + ": the name '" + name + "' appears twice");
    dict.insert(name, tensor.detach().contiguous());
  }
  const std::vector<char> bytes = torch::jit::pickle_save(c10::IValue(dict));
  write_file_atomically(path, bytes.data(), bytes.size());
}

}  // namespace partita
