#include "training/trainer.h"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "actors/actor_types.h"
#include "actors/protocol.h"
#include "actors/sampler_client.h"
#include "base/error.h"
#include "base/random.h"
#include "models/batch_tensors.h"
#include "models/gnn_model.h"
#include "models/keyed_dropout.h"
#include "models/torch_runtime.h"
#include "models/training.h"
#include "partitioner/partition_format.h"
#include "runtime/collective/allreduce_client.h"
#include "runtime/settings.h"
#include "training/job_config.h"

namespace partita {

namespace {

using std::chrono::milliseconds;

// The slowest replica's step (sampling and compute) must end within this, and so must
// every batch the sampler hands over.
constexpr milliseconds kStepDeadline{120000};
// Evaluation batches are keyed by this epoch, the same every time: an accuracy moves only
// when the weights do.
constexpr uint64_t kEvalEpoch = ~uint64_t{0};

// Everything one replica owns. Lives on the trainer's own thread.
struct Replica {
  JobConfig job;
  int index = 0;
  int part = 0;
  uint64_t plan_seed = 0;  // of this trainer's epochs: batches differ between trainers
  std::unique_ptr<SamplerClient> sampler;  // after set-up
  std::unique_ptr<runtime::Allreduce> allreduce;
  std::shared_ptr<GnnModel> model;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::vector<float> gradients;  // the step's flat buffer, reused
};

std::unique_ptr<Replica> make_replica(const runtime::Settings& settings) {
  auto r = std::make_unique<Replica>();
  r->job = parse_job(runtime::required_setting(settings, "job"), "/", "the job sent by the driver");
  require_partition_folder(r->job.partition_dir(), "job");
  r->index = static_cast<int>(runtime::integer_setting(settings, "trainer", 0, r->job.num_trainers() - 1));
  r->part = r->job.part_of_trainer(r->index);
  r->plan_seed = mix64(r->job.seed, static_cast<uint64_t>(r->index));
  const PartitionFolder folder(r->job.partition_dir());
  const PartitionMeta& meta = folder.meta();
  if (meta.feature_dim <= 0 || !meta.has_labels) {
    throw UsageError(r->job.partition_dir() + " has no node features or labels to train a classifier on");
  }
  ModelConfig config;
  config.kind = r->job.model;
  config.in_dim = meta.feature_dim;
  config.hidden_dim = r->job.hidden;
  config.out_dim = meta.num_classes;
  config.num_layers = r->job.layers;
  config.heads = r->job.model == "gat" ? r->job.heads : 1;
  config.dropout = r->job.dropout;
  config.trim = r->job.trim;
  // Every replica draws the same initial weights from the job seed.
  r->model = make_model(config, r->job.seed);
  r->optimizer = make_optimizer(r->job.optimizer, r->model->parameters(), r->job.learning_rate, r->job.weight_decay,
                                r->job.momentum);
  return r;
}

// One optimiser step of every replica: this one's batch (if it has one left), gradients
// summed over all replicas with the step's seed count, loss and correct predictions.
// Returns {loss sum, seeds, correct} over all replicas.
std::array<double, 3> train_step(Replica& r, bool has_batch, uint64_t epoch, int64_t step) {
  r.optimizer->zero_grad();
  BatchResult result;
  if (has_batch) {
    MiniBatch sampled = r.sampler->next();  // first: it tells the client where buffers go back
    const GraphBatch batch = to_graph_batch(std::move(sampled), r.sampler->recycler());
    result = forward_backward(*r.model, batch, step_key(r.job.seed, epoch, step, r.index));
  }
  flatten_gradients(*r.model, r.gradients);
  const size_t n = r.gradients.size();
  r.gradients.push_back(static_cast<float>(result.loss_sum));
  r.gradients.push_back(static_cast<float>(result.seeds));
  r.gradients.push_back(static_cast<float>(result.correct));
  r.allreduce->sum(r.gradients.data(), r.gradients.size());
  // Every replica sees the same sums, so all stop here together (none is left waiting in
  // the next allreduce) and the weights never take a non-finite step. The gradients are
  // checked too: ReLU maps a NaN to 0, so NaN features can leave the loss finite while
  // their gradients poison the weights for every later step.
  if (!std::all_of(r.gradients.begin(), r.gradients.end(), [](float v) { return std::isfinite(v); })) {
    throw Error("step " + std::to_string(step) +
                ": the loss or its gradients are not finite (NaN or Inf): features with NaN or Inf values, or a "
                "learning rate too high for this model");
  }
  const double total_seeds = r.gradients[n + 1];
  if (total_seeds > 0) {
    // The mean over every seed of the step: the gradient of one big batch.
    const float scale = static_cast<float>(1.0 / total_seeds);
    for (size_t i = 0; i < n; ++i) r.gradients[i] *= scale;
    assign_gradients(*r.model, r.gradients.data(), n);
    r.optimizer->step();
  }
  std::array<double, 3> sums{r.gradients[n], r.gradients[n + 1], r.gradients[n + 2]};
  r.gradients.resize(n);
  return sums;
}

trainer_actor::behavior_type trainer(trainer_actor::pointer self, std::shared_ptr<Replica> r) {
  return {
      [self, r](train_setup_atom, caf::actor& sampler, caf::actor& member) -> caf::result<bool> {
        if (!sampler || !member) {
          return caf::make_error(caf::sec::invalid_argument, "set-up without a sampler or an allreduce member");
        }
        r->sampler = std::make_unique<SamplerClient>(self->system(), caf::actor_cast<sampler_actor>(std::move(sampler)),
                                                     kStepDeadline, "trainer " + std::to_string(r->index) + "'s sampler");
        r->allreduce = std::make_unique<runtime::Allreduce>(self->system(), std::move(member), kStepDeadline);
        return true;
      },
      [self, r](train_epoch_atom, uint64_t epoch, int64_t steps, caf::actor& driver) {
        try {
          if (!r->allreduce) throw Error("not set up");
          const int64_t batches = r->sampler->start_epoch("train", r->plan_seed, epoch, r->job.batch_size, true);
          for (int64_t step = 0; step < steps; ++step) {
            // Trainers whose share has run out join the step's allreduce with no seeds.
            const std::array<double, 3> sums = train_step(*r, step < batches, epoch, step);
            caf::anon_send(driver, train_step_atom::value, static_cast<int32_t>(r->index), epoch, step, steps, sums[0],
                       sums[1], sums[2], parameter_hash(*r->model));
          }
          caf::anon_send(driver, train_done_atom::value, static_cast<int32_t>(r->index), epoch);
        } catch (const std::exception& e) {
          spdlog::error("trainer {}: epoch {} failed: {}", r->index, epoch, e.what());
          caf::anon_send(driver, train_failed_atom::value, static_cast<int32_t>(r->index), std::string(e.what()));
        }
      },
      [self, r](evaluate_atom, const std::string& split) -> caf::result<double, int64_t, int64_t> {
        if (split != "val" && split != "test") {
          return caf::make_error(caf::sec::invalid_argument, "no split '" + split + "' (val or test)");
        }
        try {
          if (!r->sampler) throw Error("not set up");
          double loss = 0;
          int64_t correct = 0, count = 0;
          const int64_t batches = r->sampler->start_epoch(split, r->plan_seed, kEvalEpoch, r->job.eval_batch_size, false);
          if (batches > 0) {
            torch::NoGradGuard no_grad;
            r->model->eval();
            for (int64_t b = 0; b < batches; ++b) {
              MiniBatch sampled = r->sampler->next();
              GraphBatch batch = to_graph_batch(std::move(sampled), r->sampler->recycler());
              at::Tensor logits = r->model->forward(batch, false);
              at::Tensor y = batch.y.slice(0, 0, batch.batch_size);
              loss += cross_entropy_sum(logits, y).item<double>();
              correct += count_correct(logits, y);
              count += count_labelled(logits, y);
            }
          }
          return {loss, correct, count};
        } catch (const std::exception& e) {
          return caf::make_error(caf::sec::runtime_error, "trainer " + std::to_string(r->index) + ": " + e.what());
        }
      },
      [r](get_state_atom) { return save_training_state(*r->model, *r->optimizer); },
      [r](set_state_atom, const std::vector<char>& bytes) -> caf::result<bool> {
        try {
          load_training_state(*r->model, *r->optimizer, bytes);
          return true;
        } catch (const std::exception& e) {
          return caf::make_error(caf::sec::invalid_argument, "trainer " + std::to_string(r->index) + ": " + e.what());
        }
      },
  };
}

}  // namespace

void register_training_types(runtime::ActorTypeRegistry& registry) {
  registry.add("trainer", [](caf::actor_system& system, const runtime::Settings& settings) {
    std::shared_ptr<Replica> replica = make_replica(settings);
    set_torch_threads(replica->job.threads);
    tune_malloc_for_training();
    // Detached: an epoch blocks its thread in libtorch for a long time, which would starve
    // the scheduler threads that carry every other actor's messages.
    return caf::actor_cast<caf::actor>(system.spawn<caf::detached>(trainer, std::move(replica)));
  });
}

}  // namespace partita
