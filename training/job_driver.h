// The job driver: turns a JobConfig into actors on a Runtime (partitions, allreduce
// members and trainers, each trainer with its partition) and steers the epochs: training
// steps with a progress line, evaluation on the validation and test seeds through the same
// distributed sampling, a checkpoint and a metrics line per epoch. The same code runs a job
// in one process (`partita run`) and on daemons (`partita submit`).
//
// OUTPUT holds: job.yaml (the job as run), metrics.jsonl (one JSON object per epoch),
// checkpoint.json + checkpoints/epoch-<e>.bin (model and optimiser state after epoch e; with
// train.checkpoint_every_steps, epoch-<e>-step-<s>.bin after s steps of epoch e, the
// pointer holding the epoch's sums so far so that a resumed epoch reports the same metrics),
// and partitions/ when the job partitioned a dataset itself.
//
// What a run reports and the options it takes are the job's vocabulary
// (training/job_types.h); the actor types it spawns, training/job_actor_types.h.
#pragma once

#include <string>

#include "runtime/runtime.h"
#include "training/job_config.h"
#include "training/job_types.h"

namespace partita {

// Opens OUTPUT for a run: refuses one that holds a run unless options.resume or
// options.overwrite (UsageError naming both flags), clears the old run's checkpoint and
// metrics unless resuming, and writes job.yaml. Every driver starts with it.
void open_job_output(const JobConfig& job, const RunOptions& options);

// Checks RunOptions::placement and node_partition_dirs against the job and the runtime:
// each empty, or one node in [0, nodes) per partition and one folder per node. Throws
// UsageError naming what is wrong. Every driver starts with it.
void check_placement(const RunOptions& options, int partitions, int nodes);

// Writes the job's partition folder when the job names a dataset or a generator and
// OUTPUT/partitions does not already hold that data partitioned that way.
void prepare_data(const JobConfig& job, int threads);

// Runs the job; throws Error naming the trainer and node when one fails or is lost, or
// when nothing happens for options.progress_deadline; JobCancelled when options.cancel
// stopped it. However it ends, the job's actors are stopped before it returns. They are
// owned by the driver (runtime/host.h): should this process die mid-job, each daemon stops
// the job's actors itself when it sees the driver go.
JobReport run_job(runtime::Runtime& runtime, const JobConfig& job, const RunOptions& options);

}  // namespace partita
