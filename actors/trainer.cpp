#include "actors/trainer.h"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/collective/allreduce_client.h"
#include "actors/distributed_sampler.h"
#include "actors/loader.h"
#include "actors/partition_actor.h"
#include "actors/job_config.h"
#include "actors/protocol.h"
#include "base/error.h"
#include "base/random.h"
#include "graph/epoch_plan.h"
#include "models/batch_tensors.h"
#include "models/gnn_model.h"
#include "models/keyed_dropout.h"
#include "models/torch_runtime.h"
#include "models/training.h"
#include "partitioner/partition_format.h"

namespace partita {

namespace {

using std::chrono::milliseconds;

// A remote partition must answer one hop or feature request within this.
constexpr milliseconds kSampleDeadline{30000};
// The slowest replica's step (sampling and compute) must end within this.
constexpr milliseconds kStepDeadline{120000};
// Evaluation batches are keyed by this epoch, the same every time: an accuracy moves only
// when the weights do.
constexpr uint64_t kEvalEpoch = ~uint64_t{0};

// Everything one replica owns. Lives on the trainer's own thread.
struct Replica {
  JobConfig job;
  int index = 0;
  int part = 0;
  std::unique_ptr<PartitionFolder> folder;
  std::shared_ptr<const Topology> topology;
  std::shared_ptr<const FeatureStore> features;
  std::vector<int64_t> train_seeds, val_seeds, test_seeds;  // this trainer's shares
  std::vector<caf::actor> partitions;                       // by part, after set-up
  std::unique_ptr<runtime::Allreduce> allreduce;
  std::shared_ptr<GnnModel> model;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::vector<float> gradients;  // the step's flat buffer, reused
};

std::vector<int64_t> share(const JobConfig& job, int trainer, const MappedArray& ids) {
  const Span<const int64_t> all = ids.as<int64_t>();
  const auto [begin, end] = job.share_of_trainer(trainer, static_cast<int64_t>(all.size()));
  return std::vector<int64_t>(all.begin() + begin, all.begin() + end);
}

std::unique_ptr<Replica> make_replica(const runtime::Settings& settings) {
  auto it = settings.find("job");
  if (it == settings.end()) throw UsageError("setting 'job' is missing");
  auto r = std::make_unique<Replica>();
  r->job = parse_job(it->second, "/", "the job sent by the driver");
  auto t = settings.find("trainer");
  if (t == settings.end()) throw UsageError("setting 'trainer' is missing");
  try {
    r->index = std::stoi(t->second);
  } catch (const std::exception&) {
    throw UsageError("setting 'trainer': '" + t->second + "' is not a trainer index");
  }
  if (r->index < 0 || r->index >= r->job.num_trainers()) {
    throw UsageError("setting 'trainer': " + t->second + " is not in [0, " + std::to_string(r->job.num_trainers()) + ")");
  }
  r->part = r->job.part_of_trainer(r->index);
  r->folder = std::make_unique<PartitionFolder>(r->job.partition_dir());
  // The same stores the partition actor placed here reads: opened once per process.
  PartitionStores stores = open_partition_stores(r->job.partition_dir(), r->part);
  r->topology = std::move(stores.topology);
  r->features = std::move(stores.features);
  PartitionData data = r->folder->load_part(r->part);
  r->train_seeds = share(r->job, r->index, data.train_idx);
  r->val_seeds = share(r->job, r->index, data.val_idx);
  r->test_seeds = share(r->job, r->index, data.test_idx);

  const PartitionMeta& meta = r->folder->meta();
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

// A loader over `seeds`, sampling with this trainer's partition co-located and the others
// through their actors.
std::unique_ptr<Loader> make_loader(caf::actor_system& system, Replica& r, const std::vector<int64_t>& seeds,
                                    int64_t batch_size, uint64_t epoch, bool shuffle) {
  EpochPlan plan = plan_epoch({seeds.data(), seeds.size()}, batch_size, mix64(r.job.seed, r.index), epoch, shuffle);
  SamplerConfig config;
  config.fanouts = {std::vector<int>(r.job.fanouts.begin(), r.job.fanouts.end())};
  config.replace = r.job.replace;
  auto make_sampler = [&system, &r, config]() -> BatchSampler {
    std::vector<PartitionRef> parts;
    for (int p = 0; p < static_cast<int>(r.partitions.size()); ++p) {
      parts.push_back(p == r.part ? PartitionRef::local(r.topology, r.features)
                                  : PartitionRef::remote(caf::actor_cast<partition_actor>(r.partitions[p])));
    }
    auto sampler = std::make_shared<DistributedSampler>(system, r.folder->book(), std::move(parts), config, kSampleDeadline);
    return [sampler](Span<const int64_t> batch_seeds, const SampleKey& key) { return sampler->sample(batch_seeds, key); };
  };
  LoaderOptions options;
  options.workers = r.job.workers;
  options.prefetch = r.job.prefetch;
  options.deadline = kStepDeadline;
  return std::make_unique<Loader>(std::move(plan), make_sampler, options);
}

// One optimiser step of every replica: this one's batch (if it has one left), gradients
// summed over all replicas with the step's seed count, loss and correct predictions.
// Returns {loss sum, seeds, correct} over all replicas.
std::array<double, 3> train_step(Replica& r, Loader& loader, uint64_t epoch, int64_t step) {
  r.model->train();
  r.optimizer->zero_grad();
  double loss_sum = 0, seeds = 0, correct = 0;
  if (loader.has_next()) {
    GraphBatch batch = to_graph_batch(loader.next());
    at::Tensor logits = r.model->forward(batch, true, step_key(r.job.seed, epoch, step, r.index));
    at::Tensor y = batch.y.slice(0, 0, batch.batch_size);
    at::Tensor loss = cross_entropy_sum(logits, y);
    loss.backward();
    loss_sum = loss.item<double>();
    seeds = static_cast<double>(count_labelled(logits, y));
    correct = static_cast<double>(count_correct(logits, y));
  }
  flatten_gradients(*r.model, r.gradients);
  const size_t n = r.gradients.size();
  r.gradients.push_back(static_cast<float>(loss_sum));
  r.gradients.push_back(static_cast<float>(seeds));
  r.gradients.push_back(static_cast<float>(correct));
  r.allreduce->sum(r.gradients.data(), r.gradients.size());
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
      [self, r](train_setup_atom, std::vector<caf::actor>& partitions, caf::actor& member) -> caf::result<bool> {
        if (static_cast<int>(partitions.size()) != r->job.num_partitions) {
          return caf::make_error(caf::sec::invalid_argument, "set-up with " + std::to_string(partitions.size()) +
                                                                 " partitions for a job of " +
                                                                 std::to_string(r->job.num_partitions));
        }
        r->partitions = std::move(partitions);
        r->allreduce = std::make_unique<runtime::Allreduce>(self->system(), std::move(member), kStepDeadline);
        return true;
      },
      [self, r](train_epoch_atom, uint64_t epoch, int64_t steps, caf::actor& driver) {
        try {
          if (!r->allreduce) throw Error("not set up");
          auto loader = make_loader(self->system(), *r, r->train_seeds, r->job.batch_size, epoch, true);
          for (int64_t step = 0; step < steps; ++step) {
            const std::array<double, 3> sums = train_step(*r, *loader, epoch, step);
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
          const std::vector<int64_t>& seeds = split == "val" ? r->val_seeds : r->test_seeds;
          double loss = 0;
          int64_t correct = 0, count = 0;
          if (!seeds.empty()) {
            torch::NoGradGuard no_grad;
            r->model->eval();
            auto loader = make_loader(self->system(), *r, seeds, r->job.eval_batch_size, kEvalEpoch, false);
            while (loader->has_next()) {
              GraphBatch batch = to_graph_batch(loader->next());
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
