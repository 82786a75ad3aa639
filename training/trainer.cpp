#include "training/trainer.h"

#include <caf/all.hpp>
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
#include "training/relational_encoder.h"
#include "training/replica_step.h"

namespace partita {

ModelConfig node_model_config(const JobConfig& job, const PartitionMeta& meta) {
  ModelConfig config;
  config.kind = name_of(job.model.kind);
  config.name = job.model.name;
  config.in_dim = meta.feature_dim;
  config.hidden_dim = job.model.hidden;
  config.out_dim = meta.num_classes;
  config.num_layers = job.model.layers;
  config.heads = job.model.model_heads();
  config.dropout = job.model.dropout;
  config.input_dropout = job.model.input_dropout;
  config.trim = job.model.trim;
  if (config.is_relational()) {
    set_relations(config, meta);
    config.decomposition = job.model.decomposition;
    config.num_bases = job.model.bases;
    config.num_blocks = job.model.blocks;
  }
  return config;
}

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
  // Heterogeneous graphs (relational models): every node's type by global id, and the
  // layout that gives batches their relations and node types.
  std::vector<int32_t> node_type;
  HeteroLayout hetero;
};

// Node classification on one node type: every seed of the trainer's part must have it.
void check_target_type(const JobConfig& job, const PartitionFolder& folder, int part,
                       const std::vector<int32_t>& node_type) {
  const auto& names = folder.meta().node_types;
  const int32_t target = static_cast<int32_t>(std::find(names.begin(), names.end(), job.model.target_type) - names.begin());
  const PartitionData data = folder.load_part(part);
  const std::pair<const char*, const MappedArray*> splits[] = {
      {"train", &data.train_idx}, {"val", &data.val_idx}, {"test", &data.test_idx}};
  for (const auto& [split, ids] : splits) {
    int64_t others = 0, first = -1;
    for (int64_t v : ids->as<int64_t>()) {
      if (node_type[v] != target && others++ == 0) first = v;
    }
    if (others > 0) {
      throw UsageError("model.target_type: " + std::to_string(others) + " " + split + " node(s) of part " +
                       std::to_string(part) + " are not of type '" + job.model.target_type + "' (node " +
                       std::to_string(first) + " is '" + names[node_type[first]] + "')");
    }
  }
}

// A model kind that needs what the graph lacks, or a target type it does not have, is the
// job's mistake: UsageError naming the field.
void check_model_fits(const JobConfig& job, const PartitionMeta& meta) {
  const bool relational = job.model.relational();
  if (!meta.has_labels) throw UsageError(job.partition_dir() + " has no labels to train a classifier on");
  if (relational) require_relational_graph(meta, name_of(job.model.kind), "model.kind", job.partition_dir());
  if (!relational && meta.feature_dim <= 0) {
    throw UsageError(job.partition_dir() + " has no node features: " + job.model.description() +
                     " needs them (the relational kinds rgcn and hetero_sage take a one-hot input instead)");
  }
  if (!job.model.target_type.empty() &&
      std::find(meta.node_types.begin(), meta.node_types.end(), job.model.target_type) == meta.node_types.end()) {
    std::string known;
    for (const auto& t : meta.node_types) known += (known.empty() ? "" : ", ") + t;
    throw UsageError("model.target_type: '" + job.model.target_type + "' is not a node type of " + job.partition_dir() +
                     " (its types: " + known + ")");
  }
}

std::unique_ptr<Replica> make_replica(const runtime::Settings& settings) {
  auto r = std::make_unique<Replica>();
  r->job = *job_from_setting(runtime::required_setting(settings, "job"), "the job sent by the driver");
  require_partition_folder(r->job.partition_dir(), "job");
  r->index = static_cast<int>(runtime::integer_setting(settings, "trainer", 0, r->job.num_trainers() - 1));
  r->part = r->job.part_of_trainer(r->index);
  r->plan_seed = mix64(r->job.seed, static_cast<uint64_t>(r->index));
  const PartitionFolder folder(r->job.partition_dir());
  const PartitionMeta& meta = folder.meta();
  check_model_fits(r->job, meta);
  const ModelConfig config = node_model_config(r->job, meta);
  if (config.is_relational()) {
    r->node_type = global_node_types(folder);
    r->hetero = HeteroLayout{config.num_relations, &r->node_type};
    if (!r->job.model.target_type.empty()) check_target_type(r->job, folder, r->part, r->node_type);
  }
  // Every replica draws the same initial weights from the job seed.
  r->model = make_model(config, r->job.seed);
  r->optimizer = make_optimizer(name_of(r->job.optimizer), r->model->parameters(), r->job.learning_rate, r->job.weight_decay,
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
    const GraphBatch batch = to_graph_batch(std::move(sampled), r.sampler->recycler(), r.hetero);
    result = forward_backward(*r.model, batch, step_key(r.job.seed, epoch, step, r.index));
  }
  return allreduce_and_step(*r.model, *r.optimizer, *r.allreduce, r.gradients, result, step);
}

trainer_actor::behavior_type trainer(trainer_actor::pointer self, std::shared_ptr<Replica> r) {
  return {
      [self, r](train_setup_atom, caf::actor& sampler, caf::actor& member) {
        return set_up_replica(self->system(), r->index, kStepDeadline, sampler, member, r->sampler, r->allreduce);
      },
      [r](train_epoch_atom, uint64_t epoch, int64_t first_step, int64_t steps, int64_t checkpoint_every,
          const caf::actor& driver) {
        run_epoch(driver, static_cast<int32_t>(r->index), epoch, [&] {
          if (!r->allreduce) throw Error("not set up");
          check_step_range(epoch, first_step, steps, checkpoint_every);
          // Shuffled, or cut in time order (the sampler holds its seeds by time then).
          const bool shuffle = !r->job.time_ordered;
          const int64_t batches = r->sampler->start_epoch("train", r->plan_seed, epoch, r->job.batch_size, shuffle);
          // A resumed epoch: the batches before its checkpoint were trained on already.
          for (int64_t b = 0; b < std::min(first_step, batches); ++b) r->sampler->next();
          for (int64_t step = first_step; step < steps; ++step) {
            // Trainers whose share has run out join the step's allreduce with no seeds.
            const std::array<double, 3> sums = train_step(*r, step < batches, epoch, step);
            report_step(driver, static_cast<int32_t>(r->index), epoch, step, steps, sums, *r->model, *r->optimizer,
                        checkpoint_every);
          }
        });
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
              GraphBatch batch = to_graph_batch(std::move(sampled), r->sampler->recycler(), r->hetero);
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
      [r](set_state_atom, const std::vector<char>& bytes) {
        return load_replica_state(*r->model, *r->optimizer, bytes, r->index);
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
