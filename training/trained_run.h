// A run's trained model, loaded from the folder `partita run` wrote (its job.yaml, the
// checkpoint of its selected epoch, RUN/selected/, or, for a run from before model
// selection, the one RUN/checkpoint.json points to; the partition folder it trained on): what
// `partita export` and `partita predict` read, so that a model leaves Partita without its
// runtime. Loading builds the model exactly as the job's trainers did and restores the
// checkpoint through the same readers as --resume (models/checkpoint.h,
// embeddings/embedding_shard.h), so every check they make applies.
//
// Node ids here are original ids: the node's index in the dataset the job read (its row of
// x.npy, its number in edge_index.npy), not the partitioned global id.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/gnn_model.h"
#include "training/job_config.h"

namespace partita {

struct TrainedRun {
  std::string dir;   // the run folder, absolute
  JobConfig job;     // its job.yaml, with output = dir
  // The folder whose checkpoint.json was read: RUN/selected (selected = true) or RUN.
  std::string checkpoint_dir;
  bool selected = false;
  int epoch = 0;     // the whole epochs the checkpoint holds
  int64_t step = 0;  // and the steps of the next one (a checkpoint inside an epoch)
  // Node classification: the model with the checkpoint's weights, in evaluation mode.
  std::shared_ptr<GnnModel> model;
  // Knowledge-graph embeddings (task link_prediction, model.encoder none): the entity
  // table, row i = the entity of original id i, and the relation table (with
  // model.reciprocal, rows R..2R-1 are the inverse relations of head prediction).
  at::Tensor entities;   // float32 [entities, dim]
  at::Tensor relations;  // float32 [relations, dim]

  bool is_node_model() const { return model != nullptr; }
};

// Loads RUN. Throws UsageError when `dir` is missing or is not a run's folder (no
// job.yaml), names a kind of job the export does not read (link prediction with a GNN
// encoder, an entity table on disk), or holds no checkpoint yet; Error when the
// checkpoint or a file it names is corrupt or does not fit the job (another structure,
// shape or optimiser), naming the file.
TrainedRun load_trained_run(const std::string& dir);

// Full-neighbourhood inference of a node-classification run over its whole graph, as PyG's
// full-graph forward (`model(x, edge_index)`) computes it: every layer aggregates over
// every in-edge of every node, no sampling, no dropout, so the result is deterministic and
// independent of the job's fanouts. One batch of the whole graph: memory grows with the
// graph (its edges and one activation per node and layer). Rows by original node id.
struct NodeOutputs {
  at::Tensor logits;      // float32 [nodes, classes]
  at::Tensor embeddings;  // float32 [nodes, width]: what the last layer reads (GnnModel::Outputs)
};
NodeOutputs predict_nodes(const TrainedRun& run);

// The number of nodes (entities) of the run's graph.
int64_t num_graph_nodes(const TrainedRun& run);

}  // namespace partita
