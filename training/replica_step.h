// The data-parallel end of a training step, shared by every trainer whose model is a torch
// module with dense gradients (node classification, link prediction with a GNN encoder):
// like DDP, each replica's gradients are summed with every other's in one allreduce, with
// its batch's sums (loss, seeds, correct) riding along in the same buffer, and divided by
// the step's seed count over all replicas. So the step's gradient is the mean over every
// seed of every trainer, whatever the split of seeds between them, and every replica takes
// the same optimiser step and stays identical to the others.
#pragma once

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <array>
#include <cstdint>
#include <vector>

#include "models/training.h"
#include "runtime/collective/allreduce_client.h"

namespace partita {

// After this replica's backward (its gradients in the parameters' .grad; none when it had
// no batch, with `result` empty): sums over all replicas, checks that the loss and every
// gradient are finite (Error naming `step` otherwise: every replica sees the same sums, so
// all stop together and no weight takes a non-finite step), and steps the optimiser when
// any replica had seeds. `gradients` is the reused flat buffer. Returns {loss sum, seeds,
// correct} over all replicas.
std::array<double, 3> allreduce_and_step(torch::nn::Module& model, torch::optim::Optimizer& optimizer,
                                         runtime::Allreduce& allreduce, std::vector<float>& gradients,
                                         const BatchResult& result, int64_t step);

}  // namespace partita
