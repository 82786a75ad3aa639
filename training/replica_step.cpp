#include "training/replica_step.h"

#include <algorithm>
#include <cmath>
#include <string>

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/actor_types.h"
#include "actors/protocol.h"
#include "base/error.h"
#include "runtime/collective/allreduce_stopped.h"
#include "models/checkpoint.h"
#include "models/torch_runtime.h"

namespace partita {

caf::result<bool> set_up_replica(caf::actor_system& system, int index, std::chrono::milliseconds deadline,
                                 caf::actor& sampler, caf::actor& member, std::unique_ptr<SamplerClient>& client,
                                 std::unique_ptr<runtime::Allreduce>& allreduce) {
  if (!sampler || !member) {
    return caf::make_error(caf::sec::invalid_argument, "set-up without a sampler or an allreduce member");
  }
  client = std::make_unique<SamplerClient>(system, caf::actor_cast<sampler_actor>(std::move(sampler)), deadline,
                                           "trainer " + std::to_string(index) + "'s sampler");
  allreduce = std::make_unique<runtime::Allreduce>(system, std::move(member), deadline);
  return true;
}

void run_epoch(const caf::actor& driver, int32_t trainer, uint64_t epoch, const std::function<void()>& steps) {
  try {
    release_heap_between_epochs(epoch);
    steps();
    caf::anon_send(driver, train_done_atom::value, trainer, epoch);
  } catch (const std::exception& e) {
    // A group stopped by the driver (a cancel, another trainer's failure) is no failure of this one.
    if (dynamic_cast<const runtime::AllreduceStopped*>(&e) != nullptr) {
      spdlog::info("trainer {}: epoch {} stopped: {}", trainer, epoch, e.what());
    } else {
      spdlog::error("trainer {}: epoch {} failed: {}", trainer, epoch, e.what());
    }
    caf::anon_send(driver, train_failed_atom::value, trainer, std::string(e.what()));
  }
}

caf::result<bool> load_replica_state(GnnModel& model, torch::optim::Optimizer& optimizer, const std::vector<char>& bytes,
                                     int trainer) {
  try {
    load_training_state(model, optimizer, bytes);
    return true;
  } catch (const std::exception& e) {
    return caf::make_error(caf::sec::invalid_argument, "trainer " + std::to_string(trainer) + ": " + e.what());
  }
}

std::array<double, 3> allreduce_and_step(torch::nn::Module& model, torch::optim::Optimizer& optimizer,
                                         runtime::Allreduce& allreduce, std::vector<float>& gradients,
                                         const BatchResult& result, int64_t step) {
  flatten_gradients(model, gradients);
  const size_t n = gradients.size();
  gradients.push_back(static_cast<float>(result.loss_sum));
  gradients.push_back(static_cast<float>(result.seeds));
  gradients.push_back(static_cast<float>(result.correct));
  allreduce.sum(gradients.data(), gradients.size());
  // The gradients are checked too: ReLU maps a NaN to 0, so NaN features can leave the
  // loss finite while their gradients poison the weights for every later step.
  if (!std::all_of(gradients.begin(), gradients.end(), [](float v) { return std::isfinite(v); })) {
    throw Error("step " + std::to_string(step) +
                ": the loss or its gradients are not finite (NaN or Inf): features with NaN or Inf values, or a "
                "learning rate too high for this model");
  }
  const double total_seeds = gradients[n + 1];
  if (total_seeds > 0) {
    // The mean over every seed of the step: the gradient of one big batch.
    const float scale = static_cast<float>(1.0 / total_seeds);
    for (size_t i = 0; i < n; ++i) gradients[i] *= scale;
    assign_gradients(model, gradients.data(), n);
    optimizer.step();
  }
  std::array<double, 3> sums{gradients[n], gradients[n + 1], gradients[n + 2]};
  gradients.resize(n);
  return sums;
}

void check_step_range(uint64_t epoch, int64_t first_step, int64_t steps, int64_t checkpoint_every) {
  if (first_step < 0 || first_step > steps || checkpoint_every < 0) {
    throw Error("epoch " + std::to_string(epoch) + ": steps [" + std::to_string(first_step) + ", " +
                std::to_string(steps) + ") with a checkpoint every " + std::to_string(checkpoint_every) +
                " step(s) is not a range of steps");
  }
}

void report_step(const caf::actor& driver, int32_t trainer, uint64_t epoch, int64_t step, int64_t steps,
                 const std::array<double, 3>& sums, const GnnModel& model, const torch::optim::Optimizer& optimizer,
                 int64_t checkpoint_every) {
  caf::anon_send(driver, train_step_atom::value, trainer, epoch, step, steps, sums[0], sums[1], sums[2],
                 parameter_hash(model));
  if (trainer == 0 && checkpoint_every > 0 && (step + 1) % checkpoint_every == 0) {
    caf::anon_send(driver, train_checkpoint_atom::value, trainer, epoch, step, save_training_state(model, optimizer));
  }
}

}  // namespace partita
