#include "training/trained_run.h"

#include <ATen/ATen.h>
#include <torch/serialize/input-archive.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/checksum.h"
#include "base/error.h"
#include "base/file_util.h"
#include "embeddings/embedding_shard.h"
#include "embeddings/row_optimizer.h"
#include "graph/mini_batch.h"
#include "models/batch_tensors.h"
#include "models/checkpoint.h"
#include "models/optimizer.h"
#include "partitioner/partition_format.h"
#include "training/job_driver.h"
#include "training/relational_encoder.h"
#include "training/trainer.h"

namespace partita {

namespace {

namespace fs = std::filesystem;

// A checkpoint in a folder is whole (the driver moves its pointer last), so reading it never
// waits; the deadline only bounds a call whose contract asks for one.
constexpr std::chrono::milliseconds kReadDeadline{1000};

std::string read_state_file(const fs::path& file) {
  const std::string bytes = read_file_if_exists(file.string());
  if (bytes.empty()) throw Error("the checkpoint file " + file.string() + " is missing or empty");
  return bytes;
}

void load_node_model(TrainedRun& run, const CheckpointPointer& pointer) {
  const PartitionFolder folder(run.job.partition_dir());
  const ModelConfig config = node_model_config(run.job, folder.meta());
  run.model = make_model(config, run.job.seed);
  // The checkpoint holds the optimiser's state too; restoring it through the trainers'
  // reader checks the whole file (structure, names, shapes) before the weights are used.
  std::unique_ptr<torch::optim::Optimizer> optimizer = make_optimizer(
      name_of(run.job.optimizer), run.model->parameters(), run.job.learning_rate, run.job.weight_decay, run.job.momentum);
  std::string name;
  try {
    name = pointer.meta.at("file").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    throw Error("the checkpoint pointer " + pointer.path + " names no state file: " + e.what());
  }
  const fs::path file = fs::path(run.checkpoint_dir) / name;
  const std::string bytes = read_state_file(file);
  try {
    load_training_state(*run.model, *optimizer, std::vector<char>(bytes.begin(), bytes.end()));
  } catch (const std::exception& e) {
    throw Error("the checkpoint " + file.string() + " cannot be loaded: " + e.what());
  }
  run.model->eval();
}

// The files of a link-prediction checkpoint (training/link_driver.h): the replica's state
// (the relations), then one per embedding shard, each checked against its checksum.
std::vector<std::pair<fs::path, std::string>> kg_state_files(const TrainedRun& run, const CheckpointPointer& pointer) {
  std::vector<std::pair<fs::path, std::string>> files;
  try {
    for (const auto& entry : pointer.meta.at("files")) {
      const fs::path file = fs::path(run.checkpoint_dir) / entry.at("file").get<std::string>();
      std::string bytes = read_state_file(file);
      if (checksum(bytes.data(), bytes.size()) != entry.at("checksum").get<uint64_t>()) {
        throw Error("the checkpoint file " + file.string() + " is damaged (checksum mismatch)");
      }
      files.emplace_back(file, std::move(bytes));
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error("the checkpoint pointer " + pointer.path + " is damaged: " + e.what());
  }
  return files;
}

void load_kg_tables(TrainedRun& run, const CheckpointPointer& pointer) {
  const PartitionFolder folder(run.job.partition_dir());
  const PartitionMeta& meta = folder.meta();
  const auto files = kg_state_files(run, pointer);
  if (files.size() != static_cast<size_t>(meta.num_parts) + 1) {
    throw Error("the checkpoint " + pointer.path + " holds " + std::to_string(files.size()) + " file(s); a job of " +
                std::to_string(meta.num_parts) + " partition(s) writes " + std::to_string(meta.num_parts + 1));
  }
  const LinkPredictionSpec& link = run.job.link;
  const int64_t num_relations =
      (meta.edge_types.empty() ? 1 : static_cast<int64_t>(meta.edge_types.size())) * (link.reciprocal ? 2 : 1);
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(files[0].second.data(), files[0].second.size());
    archive.read("relations", run.relations);
  } catch (const c10::Error& e) {
    throw Error("the checkpoint file " + files[0].first.string() + " holds no relation table: " + e.what_without_backtrace());
  } catch (const std::exception& e) {
    throw Error("the checkpoint file " + files[0].first.string() + " holds no relation table: " + e.what());
  }
  if (run.relations.dim() != 2 || run.relations.size(0) != num_relations || run.relations.size(1) != link.dim ||
      run.relations.scalar_type() != at::kFloat) {
    throw Error("the checkpoint file " + files[0].first.string() + " holds a relation table of shape " +
                c10::str(run.relations.sizes()) + ", the job has " + std::to_string(num_relations) + " x " +
                std::to_string(link.dim) + " float32");
  }
  run.relations = run.relations.contiguous();
  run.entities = at::empty({meta.num_nodes, link.dim}, at::kFloat);
  std::vector<uint8_t> written(static_cast<size_t>(meta.num_nodes), 0);  // each row exactly once
  for (int p = 0; p < meta.num_parts; ++p) {
    EmbeddingShardConfig config;
    config.part = p;
    config.begin = folder.book().begin(p);
    config.end = folder.book().end(p);
    config.dim = link.dim;
    config.seed = run.job.seed;
    config.init_std = link.init_std;
    config.optimizer = RowOptimizer::parse(name_of(run.job.optimizer), run.job.learning_rate, "train.optimizer");
    const PartitionData data = folder.load_part(p);
    const Span<const int64_t> original = data.orig_ids.as<int64_t>();
    EmbeddingShard shard(config, original);
    const auto& [file, bytes] = files[p + 1];
    try {
      shard.load(std::vector<char>(bytes.begin(), bytes.end()));
    } catch (const Error& e) {
      throw Error("the checkpoint file " + file.string() + " cannot be loaded: " + e.what());
    }
    std::vector<float> rows(static_cast<size_t>((config.end - config.begin) * link.dim));
    shard.read_range(config.begin, config.end, rows.data(), kReadDeadline);
    float* table = run.entities.data_ptr<float>();
    for (size_t i = 0; i < original.size(); ++i) {
      const int64_t id = original[i];
      if (id < 0 || id >= meta.num_nodes) {
        throw Error("part " + std::to_string(p) + " of " + folder.dir() + " names original id " + std::to_string(id) +
                    " of " + std::to_string(meta.num_nodes));
      }
      if (written[id]++ != 0) {
        throw Error("original id " + std::to_string(id) + " is in two parts of " + folder.dir() + " (part " +
                    std::to_string(p) + " is the second)");
      }
      std::copy_n(rows.data() + i * link.dim, link.dim, table + id * link.dim);
    }
  }
  const auto missing = std::find(written.begin(), written.end(), uint8_t{0});
  if (missing != written.end()) {
    throw Error("original id " + std::to_string(missing - written.begin()) + " is in no part of " + folder.dir() +
                ": its entity row would be undefined");
  }
}

}  // namespace

TrainedRun load_trained_run(const std::string& dir) {
  TrainedRun run;
  const fs::path path = fs::absolute(dir).lexically_normal();
  run.dir = path.string();
  if (!fs::exists(path)) throw UsageError("RUN " + run.dir + " does not exist");
  if (!fs::is_directory(path)) throw UsageError("RUN " + run.dir + " is not a folder (the output folder of partita run)");
  const fs::path job_file = path / "job.yaml";
  if (!fs::exists(job_file)) {
    throw UsageError("RUN " + run.dir + " is not a run's folder: it holds no job.yaml (partita run writes one)");
  }
  run.job = parse_job(read_file(job_file.string()), run.dir, job_file.string());
  run.job.output = run.dir;  // the folder as it is now, wherever the run wrote it
  if (run.job.model.registered() && (run.job.link_gnn() || !run.job.link_prediction())) {
    throw UsageError("RUN " + run.dir + " trained the " + run.job.model.description() +
                     ", a host application's own module, which export and predict do not read: it has no PyG "
                     "equivalent and only the application that registered it can build it (its checkpoint holds "
                     "the module's tensors; models/model_registry.h)");
  }
  if (run.job.link_gnn()) {
    throw UsageError("RUN " + run.dir + " is a link-prediction job with a GNN encoder (model.encoder: " +
                     name_of(run.job.model.kind) + "), which export and predict do not read; they read node "
                     "classification and knowledge-graph embedding (model.encoder: none) runs");
  }
  if (run.job.link_prediction() && run.job.link.on_disk()) {
    throw UsageError("RUN " + run.dir + " keeps its entity table on disk (embeddings: {storage: disk}), which export "
                     "and predict do not read; they read tables kept in memory");
  }
  // The selected epoch's checkpoint (train.select) when the run kept one, else its last.
  const fs::path selected = path / kSelectedDirName;
  run.selected = fs::exists(selected / kCheckpointFileName);
  run.checkpoint_dir = run.selected ? selected.string() : run.dir;
  const std::optional<CheckpointPointer> pointer = read_checkpoint_pointer(run.checkpoint_dir);
  if (!pointer) {
    throw UsageError("RUN " + run.dir + " holds no checkpoint yet (" + kCheckpointFileName +
                     "): the run ended before its first epoch");
  }
  run.epoch = pointer->epoch;
  run.step = pointer->step;
  if (run.job.link_prediction()) {
    load_kg_tables(run, *pointer);
  } else {
    load_node_model(run, *pointer);
  }
  return run;
}

int64_t num_graph_nodes(const TrainedRun& run) { return read_partition_meta(run.job.partition_dir()).num_nodes; }

NodeOutputs predict_nodes(const TrainedRun& run) {
  if (!run.is_node_model()) throw Error("predict_nodes: " + run.dir + " is not a node-classification run");
  const PartitionFolder folder(run.job.partition_dir());
  const PartitionMeta& meta = folder.meta();
  // The whole graph as one batch whose seeds are every node, in global id order: every
  // in-edge of every node, the features of every node.
  MiniBatch batch;
  const int64_t n = meta.num_nodes;
  batch.node_ids.resize(static_cast<size_t>(n));
  for (int64_t v = 0; v < n; ++v) batch.node_ids[v] = v;
  batch.batch_size = n;
  batch.feature_dim = meta.feature_dim;
  batch.x.reserve(static_cast<size_t>(n * meta.feature_dim));
  batch.row.reserve(static_cast<size_t>(meta.num_edges));
  batch.col.reserve(static_cast<size_t>(meta.num_edges));
  std::vector<int64_t> original_of(static_cast<size_t>(n));
  const bool hetero = run.model->config().is_relational();
  for (int p = 0; p < meta.num_parts; ++p) {
    const PartitionData data = folder.load_part(p);
    const Span<const int64_t> indptr = data.indptr.as<int64_t>();
    const Span<const int64_t> indices = data.indices.as<int64_t>();
    const Span<const int64_t> original = data.orig_ids.as<int64_t>();
    for (int64_t v = 0; v < data.num_nodes(); ++v) {
      for (int64_t e = indptr[v]; e < indptr[v + 1]; ++e) {
        batch.row.push_back(indices[e]);
        batch.col.push_back(data.node_begin + v);
      }
      original_of[data.node_begin + v] = original[v];
    }
    if (hetero) {
      if (!data.edge_type) throw Error("part " + std::to_string(p) + " of " + folder.dir() + " has no edge types");
      const Span<const int32_t> types = data.edge_type->as<int32_t>();
      batch.edge_types.insert(batch.edge_types.end(), types.begin(), types.end());
    }
    if (meta.feature_dim > 0) {
      if (!data.x) throw Error("part " + std::to_string(p) + " of " + folder.dir() + " has no features");
      const Span<const float> x = data.x->as<float>();
      batch.x.insert(batch.x.end(), x.begin(), x.end());
    }
  }
  std::vector<int32_t> node_type;
  HeteroLayout layout;
  if (hetero) {
    node_type = global_node_types(folder);
    layout = HeteroLayout{run.model->config().num_relations, &node_type};
  }
  const GraphBatch graph = to_graph_batch(std::move(batch), {}, layout);
  at::NoGradGuard no_grad;
  const GnnModel::Outputs outputs = run.model->forward_with_embeddings(graph);
  // Rows by original id: row g of the outputs is global id g.
  const at::Tensor index = at::from_blob(original_of.data(), {n}, at::kLong);
  NodeOutputs result;
  result.logits = at::empty_like(outputs.logits).index_copy_(0, index, outputs.logits);
  result.embeddings = at::empty_like(outputs.embeddings).index_copy_(0, index, outputs.embeddings);
  return result;
}

}  // namespace partita
