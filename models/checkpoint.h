// A model and its optimiser's state as one byte buffer, for checkpoints and for a replica
// that rejoins: the trainer writes it to a file or sends it in a message.
//
// The bytes are torch's archive (a zip) inside a small envelope (magic, format version,
// length, checksum): torch's reader does not verify its data, so a flipped bit would load
// as a silently wrong weight; the envelope turns any corruption into an Error.
#pragma once

#include <torch/optim/optimizer.h>

#include <vector>

#include "models/gnn_model.h"

namespace partita {

std::vector<char> save_training_state(const GnnModel& model,
                                      const torch::optim::Optimizer& optimizer);

// Restores what save_training_state saved into a model of the same structure and an
// optimiser of the same kind over its parameters. Throws Error naming the problem for
// corrupt or truncated bytes, another model structure or another optimiser. Those checks
// run before anything is modified; only a failure inside torch's reader after them (not
// expected for bytes that passed the checksum) could leave the state partly loaded.
void load_training_state(GnnModel& model, torch::optim::Optimizer& optimizer,
                         const std::vector<char>& bytes);

}  // namespace partita
