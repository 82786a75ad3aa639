// The trainer: one model replica with its sampler actor and its allreduce member, all three
// in one process (actors/protocol.h, trainer_actor). Data parallel, like DDP: every replica
// starts from the same weights (seeded by the job), averages its gradients with the
// others' at every step, and so stays identical to them.
//
// Trainer t of a job with P partitions and k trainers per partition serves partition
// t / k and trains on the t % k-th contiguous share of that partition's training nodes:
// its sampler serves that share (and the same share of the validation and test nodes), so
// training and evaluation batches come from the one sampling pipeline, by move.
// All trainers take the same number of steps per epoch (the driver computes it); one
// whose share has run out joins the step's allreduce with no seeds. The step's gradient
// is the mean over every seed of every trainer, so it does not depend on how the seeds
// were spread.
//
// Randomness: batches are keyed by (job seed, trainer, epoch, batch), dropout by (job
// seed, epoch, step, trainer); nothing depends on earlier steps, so a run resumed from a
// checkpoint continues exactly as an uninterrupted one.
#pragma once

#include "models/model_config.h"
#include "partitioner/partition_format.h"
#include "runtime/host.h"
#include "training/job_config.h"

namespace partita {

// The model a job's trainers build (node classification), from the job and its graph: what
// `partita export` and `predict` rebuild from a run's job (training/trained_run.h).
ModelConfig node_model_config(const JobConfig& job, const PartitionMeta& meta);

// Registers "trainer" (settings: job, the job as YAML (job_to_yaml); trainer, its index).
// Its actor runs on a thread of its own: an epoch blocks in libtorch compute.
void register_training_types(runtime::ActorTypeRegistry& registry);

}  // namespace partita
