// `partita export` and `partita predict` behind the command line, without torch in their
// callers' headers: a run folder in (training/trained_run.h), files out.
//
// export_run writes the state dict (models/pyg_export.h) and beside it, with the extension
// .json, its description: format "partita-export", version 1, run, epoch (and step),
// task, model (the kind or decoder), pyg_class (null when the names are Partita's),
// names ("pyg" or "partita"), tensors (name and shape of each), node_ids "original";
// node classification: in_channels, hidden_channels, num_layers, out_channels, dropout and
// kwargs (the PyG class's other arguments: aggr, heads); knowledge graphs: num_nodes,
// num_relations, hidden_channels (PyG's: dim, or dim / 2 for ComplEx), dim, reciprocal.
//
// predict_run writes into a folder: nodes.npy (int64 [n], the original ids of the rows),
// and for node classification predictions.npy (int64 [n], argmax of the logits),
// logits.npy (float32 [n, classes]) and embeddings.npy (float32 [n, width]), computed by
// full-neighbourhood inference (predict_nodes); for knowledge graphs entities.npy (float32
// [n, dim]) and relations.npy (float32 [relations, dim]).
#pragma once

#include <string>

namespace partita {

// Writes RUN's model to `output` (empty: RUN/model.pt) and its description beside it.
// Returns the line to tell the user. Throws as load_trained_run does; UsageError for an
// output ending in .json.
std::string export_run(const std::string& run_dir, std::string output);

// Writes RUN's predictions into the folder `output` (empty: RUN/predictions) for the nodes
// of `nodes_file` (empty: every node): a 1-D int64 or int32 .npy of original ids, checked
// before any work (UsageError naming the file and the first bad entry or the dtype).
// Returns the line to tell the user.
std::string predict_run(const std::string& run_dir, const std::string& nodes_file, std::string output);

}  // namespace partita
