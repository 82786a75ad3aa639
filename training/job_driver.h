// The job driver: turns a JobConfig into actors on a Runtime (partitions, allreduce
// members and trainers, each trainer with its partition) and steers the epochs: training
// steps with a progress line, evaluation on the validation and test seeds through the same
// distributed sampling, a checkpoint and a metrics line per epoch. The same code runs a job
// in one process (`partita run`) and on daemons (`partita submit`).
//
// OUTPUT holds: job.yaml (the job as run), metrics.jsonl (one JSON object per epoch),
// checkpoint.json + checkpoints/epoch-<e>.bin (model and optimiser state after epoch e),
// and partitions/ when the job partitioned a dataset itself.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/runtime.h"
#include "training/job_config.h"

namespace partita {

struct EpochMetrics {
  int epoch = 0;  // 1-based
  int64_t steps = 0;
  double seconds = 0;
  double batches_per_second = 0;  // trainer batches (steps x trainers) per second
  double train_loss = 0;          // mean over the epoch's seeds
  double train_accuracy = 0;
  double val_loss = 0, val_accuracy = 0;
  double test_loss = 0, test_accuracy = 0;
  std::vector<double> step_losses;  // the mean loss of every step, as all replicas saw it
  // The weights' hash after every step, the same on every replica (the driver checks).
  std::vector<uint64_t> step_hashes;
};

struct JobReport {
  std::vector<EpochMetrics> epochs;  // this run's epochs (after the resumed one, if any)
  int first_epoch = 1;
  int64_t steps_per_epoch = 0;       // of a whole epoch, even when max_steps ran fewer
  uint64_t parameter_hash = 0;       // of every replica's weights at the end
  std::vector<char> final_state;     // model and optimiser state at the end
};

struct RunOptions {
  bool resume = false;     // continue from OUTPUT's last checkpoint
  bool overwrite = false;  // start afresh even if OUTPUT holds a run
  // How long the driver waits for any sign of progress from the trainers.
  std::chrono::milliseconds progress_deadline{180000};
  // Stop after this many epochs of the job (0: run them all); for tests of resuming.
  int stop_after_epoch = 0;
  int threads = 0;  // for preparing data (generate, partition); 0 = all cores
  bool evaluate = true;  // evaluate on the val and test seeds after every epoch
  // Run at most this many steps per epoch (0: the whole epoch); benchmarks time a part.
  int64_t max_steps = 0;
};

// Writes the job's partition folder when the job names a dataset or a generator and
// OUTPUT/partitions does not already hold that data partitioned that way.
void prepare_data(const JobConfig& job, int threads);

// Runs the job; throws Error naming the trainer and node when one fails or is lost, or
// when nothing happens for options.progress_deadline.
JobReport run_job(runtime::Runtime& runtime, const JobConfig& job, const RunOptions& options);

}  // namespace partita
