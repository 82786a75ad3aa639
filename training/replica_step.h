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
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <caf/fwd.hpp>

#include "actors/sampler_client.h"
#include "models/gnn_model.h"
#include "models/training.h"
#include "runtime/collective/allreduce_client.h"

namespace partita {

// The trainer's end of actors/protocol.h's set-up message: `client`, a client of `sampler`,
// and `allreduce`, its group's `member`, each waiting at most `deadline` for a reply.
// Returns true; an error (invalid_argument) when either actor is missing.
caf::result<bool> set_up_replica(caf::actor_system& system, int index, std::chrono::milliseconds deadline,
                                 caf::actor& sampler, caf::actor& member, std::unique_ptr<SamplerClient>& client,
                                 std::unique_ptr<runtime::Allreduce>& allreduce);

// Runs an epoch's `steps` and tells `driver` how it ended: train_done, or, when `steps`
// threw, train_failed with the error (logged), so that the driver stops every replica
// instead of waiting for this one.
void run_epoch(const caf::actor& driver, int32_t trainer, uint64_t epoch, const std::function<void()>& steps);

// The trainer's end of set_state: the model's and the optimiser's state from `bytes`
// (models/checkpoint.h). Returns true; an error (invalid_argument) naming the trainer when
// the bytes are not such a state.
caf::result<bool> load_replica_state(GnnModel& model, torch::optim::Optimizer& optimizer, const std::vector<char>& bytes,
                                     int trainer);

// After this replica's backward (its gradients in the parameters' .grad; none when it had
// no batch, with `result` empty): sums over all replicas, checks that the loss and every
// gradient are finite (Error naming `step` otherwise: every replica sees the same sums, so
// all stop together and no weight takes a non-finite step), and steps the optimiser when
// any replica had seeds. `gradients` is the reused flat buffer. Returns {loss sum, seeds,
// correct} over all replicas.
std::array<double, 3> allreduce_and_step(torch::nn::Module& model, torch::optim::Optimizer& optimizer,
                                         runtime::Allreduce& allreduce, std::vector<float>& gradients,
                                         const BatchResult& result, int64_t step);

// The trainer's end of actors/protocol.h's epoch message: Error naming the epoch unless
// 0 <= first_step <= steps and checkpoint_every >= 0.
void check_step_range(uint64_t epoch, int64_t first_step, int64_t steps, int64_t checkpoint_every);

// Reports a finished step to the driver (train_step with `sums` and the parameter hash)
// and, from trainer 0 after every `checkpoint_every`-th step (the epoch's last too), the
// state after it (train_checkpoint); checkpoint_every 0 sends none.
void report_step(const caf::actor& driver, int32_t trainer, uint64_t epoch, int64_t step, int64_t steps,
                 const std::array<double, 3>& sums, const GnnModel& model, const torch::optim::Optimizer& optimizer,
                 int64_t checkpoint_every);

}  // namespace partita
