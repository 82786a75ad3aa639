// A trained model's tensors as a PyTorch state dict: what `partita export` writes, so that a
// model trained here runs in PyTorch. The file is what torch.save writes for a dict of
// str -> Tensor: `torch.load(path)` returns it, and a PyTorch Geometric module built with
// the same sizes takes it with `load_state_dict(strict=True)`.
//
// Names follow PyG's modules where a model kind computes exactly what one of them does
// (models/graphsage.cpp, gcn.cpp, gat.cpp state the equivalence layer by layer):
//   graphsage -> torch_geometric.nn.models.GraphSAGE (mean aggregation, root weight):
//                convs.{i}.lin_l.weight, convs.{i}.lin_l.bias, convs.{i}.lin_r.weight
//   gcn       -> torch_geometric.nn.models.GCN: convs.{i}.lin.weight, convs.{i}.bias
//   gat       -> torch_geometric.nn.models.GAT (GATConv v1, heads concatenated in hidden
//                layers, averaged in the last): convs.{i}.lin.weight, convs.{i}.att_src,
//                convs.{i}.att_dst, convs.{i}.bias
// All three as BasicGNN runs them: ReLU between layers, none after the last, dropout only
// in training, no normalisation layer. The relational kinds (rgcn, hetero_sage) have no PyG
// model their weights fill one to one (PyG has no R-GCN model class, and a featureless or
// typed first layer lays R-GCN's weights out otherwise than RGCNConv; heterogeneous
// GraphSAGE keeps one root matrix per node type, the sum of to_hetero's per-relation
// lin_r): their tensors keep Partita's own module paths.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <utility>
#include <vector>

#include "models/gnn_model.h"

namespace partita {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

struct ExportedParameters {
  // The PyG class whose state dict `tensors` is ("GraphSAGE", "GCN", "GAT"); empty when the
  // kind has none and the names are Partita's own.
  std::string pyg_class;
  NamedTensors tensors;  // detached, contiguous, in the model's parameter order
};

// The model's parameters under PyG's names where the kind has an equivalent (above), else
// under its own. Throws Error if the model holds a parameter the mapping does not know (a
// mapping that no longer fits the model must not write a partial state dict).
ExportedParameters export_parameters(const GnnModel& model);

// A knowledge-graph run's tables (entities [N, dim], relations [R, dim]) under the names of
// PyG's KGE models where the decoder scores as one of them does:
//   distmult -> torch_geometric.nn.kge.DistMult(N, R, dim): node_emb.weight, rel_emb.weight
//   complex  -> torch_geometric.nn.kge.ComplEx(N, R, dim / 2): node_emb.weight and
//               node_emb_im.weight (the real and imaginary halves), rel_emb.weight and
//               rel_emb_im.weight
// TransE has no exact equivalent (PyG's TransE normalises the entity embeddings before
// scoring; Partita's does not): its tables are `entities` and `relations`.
ExportedParameters export_kg_tables(const std::string& decoder, const at::Tensor& entities,
                                    const at::Tensor& relations);

// Writes `tensors` as a dict of str -> Tensor in torch.save's format (torch::pickle_save),
// atomically (a temporary file renamed into place). Throws Error naming the file.
void save_state_dict(const std::string& path, const NamedTensors& tensors);

}  // namespace partita
