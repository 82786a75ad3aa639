// A model and its optimiser's state as one byte buffer, for checkpoints and for a replica
// that rejoins: the trainer writes it to a file or sends it in a message.
//
// The bytes (models/checkpoint_format.h) are the model's tensors and the optimiser's state
// and settings, each under its name, in an envelope (magic, format version, length,
// checksum) that turns any corruption into an Error. Saving costs a few copies of the
// tensors: AIFB's R-GCN (49 MB with Adam's state) saves in 0.03 s, where torch's archive
// (format version 1, still read) took 0.22-0.6 s, more than its epoch's training
// (`partita bench checkpoint`).
#pragma once

#include <torch/optim/optimizer.h>

#include <vector>

#include "models/gnn_model.h"

namespace partita {

std::vector<char> save_training_state(const GnnModel& model,
                                      const torch::optim::Optimizer& optimizer);

// Restores what save_training_state saved into a model of the same structure and an
// optimiser of the same kind over its parameters: weights, buffers, the optimiser's state
// and settings. Throws Error naming the problem for corrupt or truncated bytes, another
// model structure or optimiser, or a tensor of another shape. Those checks run before
// anything is modified (for version 1, torch's archive, only a failure inside torch's
// reader after them could leave the state partly loaded).
void load_training_state(GnnModel& model, torch::optim::Optimizer& optimizer,
                         const std::vector<char>& bytes);

}  // namespace partita
