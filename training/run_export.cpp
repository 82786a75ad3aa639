#include "training/run_export.h"

#include <ATen/ATen.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/file_util.h"
#include "models/pyg_export.h"
#include "partitioner/npy.h"
#include "training/trained_run.h"

namespace partita {

namespace {

namespace fs = std::filesystem;


// What builds the module a state dict fits, and where the model came from.
nlohmann::json export_description(const TrainedRun& run, const ExportedParameters& exported) {
  nlohmann::json j;
  j["format"] = "partita-export";
  j["version"] = 1;
  j["run"] = run.dir;
  j["epoch"] = run.epoch;
  if (run.step > 0) j["step"] = run.step;
  j["pyg_class"] = exported.pyg_class.empty() ? nlohmann::json() : nlohmann::json(exported.pyg_class);
  j["names"] = exported.pyg_class.empty() ? "partita" : "pyg";
  j["tensors"] = nlohmann::json::array();
  for (const auto& [name, tensor] : exported.tensors) j["tensors"].push_back({{"name", name}, {"shape", tensor.sizes().vec()}});
  if (run.is_node_model()) {
    const ModelConfig& c = run.model->config();
    j["task"] = "node_classification";
    j["model"] = c.kind;
    j["in_channels"] = c.in_dim;
    j["hidden_channels"] = c.hidden_dim;
    j["num_layers"] = c.num_layers;
    j["out_channels"] = c.out_dim;
    j["dropout"] = c.dropout;
    nlohmann::json kwargs = nlohmann::json::object();
    if (c.kind == "graphsage") kwargs["aggr"] = "mean";
    if (c.kind == "gat") kwargs["heads"] = c.heads;
    j["kwargs"] = kwargs;  // for the PyG class, beside the four sizes
  } else {
    const LinkPredictionSpec& link = run.job.link;
    j["task"] = "link_prediction";
    j["model"] = name_of(link.decoder);
    j["num_nodes"] = run.entities.size(0);
    j["num_relations"] = run.relations.size(0);
    j["hidden_channels"] = link.decoder == LinkDecoder::kComplEx ? link.dim / 2 : link.dim;
    j["dim"] = link.dim;
    j["reciprocal"] = link.reciprocal;
    if (link.decoder == LinkDecoder::kTransE) j["transe_norm"] = link.transe_norm;
  }
  j["node_ids"] = "original";  // rows and node numbers as in the dataset the job read
  return j;
}

}  // namespace

std::string export_run(const std::string& run_dir, std::string output) {
  if (fs::path(output).extension() == ".json") {
    throw UsageError("--output " + output + ": the state dict cannot end in .json (its description goes there)");
  }
  const TrainedRun run = load_trained_run(run_dir);
  if (output.empty()) output = (fs::path(run.dir) / "model.pt").string();
  const fs::path sidecar = fs::path(output).replace_extension(".json");
  const ExportedParameters exported = run.is_node_model()
                                          ? export_parameters(*run.model)
                                          : export_kg_tables(name_of(run.job.link.decoder), run.entities, run.relations);
  if (!fs::path(output).parent_path().empty()) fs::create_directories(fs::path(output).parent_path());
  save_state_dict(output, exported.tensors);
  write_file_atomically(sidecar.string(), export_description(run, exported).dump(2) + "\n");
  return "wrote " + output + " (" + std::to_string(exported.tensors.size()) + " tensors, " +
         (exported.pyg_class.empty() ? "Partita's names" : "PyG " + exported.pyg_class + "'s names") + ") and " +
         sidecar.string();
}

namespace {

// The ids of --nodes: a 1-D int64 or int32 .npy, each in [0, count).
std::vector<int64_t> read_node_ids(const std::string& path, int64_t count) {
  const NpyHeader header = read_npy_header(path);
  if (header.dtype != DType::kInt64 && header.dtype != DType::kInt32) {
    throw UsageError("--nodes " + path + ": holds " + std::string(header.is_bool ? "bool" : dtype_name(header.dtype)) +
                     " values; node ids must be int64 or int32");
  }
  if (header.shape.size() != 1) {
    throw UsageError("--nodes " + path + ": has " + std::to_string(header.shape.size()) +
                     " dimensions; node ids must be a 1-D array");
  }
  std::vector<int64_t> ids = read_npy_as<int64_t>(path, header, 0, header.shape[0]);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= count) {
      throw UsageError("--nodes " + path + ": entry " + std::to_string(i) + " is node " + std::to_string(ids[i]) +
                       ", outside the graph's " + std::to_string(count) + " nodes [0, " + std::to_string(count) + ")");
    }
  }
  return ids;
}

void write_tensor(const fs::path& path, const at::Tensor& t) {
  const at::Tensor c = t.contiguous();
  const DType dtype = c.scalar_type() == at::kLong ? DType::kInt64 : DType::kFloat32;
  write_npy(path.string(), dtype, c.sizes().vec(), c.data_ptr());
}

}  // namespace

std::string predict_run(const std::string& run_dir, const std::string& nodes_file, std::string output) {
  const TrainedRun run = load_trained_run(run_dir);
  const int64_t count = run.is_node_model() ? num_graph_nodes(run) : run.entities.size(0);
  std::vector<int64_t> ids;
  if (!nodes_file.empty()) ids = read_node_ids(nodes_file, count);  // before the work, so a bad file fails fast
  if (output.empty()) output = (fs::path(run.dir) / "predictions").string();
  fs::create_directories(output);
  const fs::path out(output);
  at::Tensor select;
  if (!nodes_file.empty()) {
    select = at::from_blob(ids.data(), {static_cast<int64_t>(ids.size())}, at::kLong).clone();
  } else {
    select = at::arange(count, at::kLong);
  }
  write_tensor(out / "nodes.npy", select);
  if (run.is_node_model()) {
    const NodeOutputs all = predict_nodes(run);
    const at::Tensor logits = all.logits.index_select(0, select);
    write_tensor(out / "logits.npy", logits);
    write_tensor(out / "predictions.npy", logits.argmax(1));
    write_tensor(out / "embeddings.npy", all.embeddings.index_select(0, select));
    return "wrote the predictions of " + std::to_string(select.size(0)) + " node(s) (full-neighbourhood inference) to " +
           output + ": nodes.npy, predictions.npy, logits.npy, embeddings.npy";
  }
  write_tensor(out / "entities.npy", run.entities.index_select(0, select));
  write_tensor(out / "relations.npy", run.relations);
  return "wrote the embeddings of " + std::to_string(select.size(0)) + " entit" + (select.size(0) == 1 ? "y" : "ies") +
         " and " + std::to_string(run.relations.size(0)) + " relation(s) to " + output +
         ": nodes.npy, entities.npy, relations.npy";
}

}  // namespace partita
