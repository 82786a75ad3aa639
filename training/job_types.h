// A training job's vocabulary, shared by its drivers, the tools and a host application that
// embeds the runtime: the metrics of an epoch and the report of a run, the progress a run
// reports as it goes, the options it runs with (its cancellation among them), and the
// pointer to its last checkpoint. Types only: the drivers that produce them are
// training/job_driver.h (run_job), and nothing here needs libtorch or the job file.
//
// A host follows a job through RunOptions::on_progress (every step and every epoch, on the
// thread that called run_job) and stops it through RunOptions::cancel (from any thread):
// run_job then throws JobCancelled, and OUTPUT keeps the last epoch's checkpoint, so the
// job can be resumed.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"

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
  // Link prediction: ranking metrics by name ("test.mrr", "test.hits@10", "test.raw_mrr",
  // ...; training/kg_driver.h), in the order metrics.jsonl lists them.
  std::vector<std::pair<std::string, double>> ranking;
  double ranking_metric(const std::string& name) const;
};

struct JobReport {
  // Per-step records (step_losses, step_hashes) are kept for this many of the latest epochs
  // and cleared in older ones, so a job of a million epochs holds a bounded report; every
  // epoch keeps its summary figures.
  static constexpr size_t kStepRecordsKept = 64;

  // Appends `m` as the latest epoch and clears the per-step records of the epoch that falls
  // kStepRecordsKept behind it.
  void add_epoch(EpochMetrics m);

  std::vector<EpochMetrics> epochs;  // this run's epochs (after the resumed one, if any)
  int first_epoch = 1;
  int64_t steps_per_epoch = 0;       // of a whole epoch, even when max_steps ran fewer
  uint64_t parameter_hash = 0;       // of every replica's weights at the end
  std::vector<char> final_state;     // model and optimiser state at the end
  // Model selection (train.select; training/model_selection.h): the epoch the run reports
  // and keeps in OUTPUT/selected/, with its validation and test values of the task's
  // metric (none when that epoch was not evaluated). OUTPUT/report.json says the same.
  std::string select;                // "best_val" or "last"
  std::string metric;                // "accuracy", "mrr", "auc" or "rmse"
  bool higher_is_better = true;
  int selected_epoch = 0;            // 0: no epoch ran
  std::optional<double> selected_val, selected_test;
  bool early_stopped = false;        // train.early_stopping ended the run before its last epoch
};

// The run's report file inside OUTPUT, and the folder of the selected epoch's checkpoint
// (a checkpoint pointer with its state files, as OUTPUT holds its last).
inline constexpr const char* kReportFileName = "report.json";
inline constexpr const char* kSelectedDirName = "selected";

// What RunOptions::on_progress is told: a step done by every trainer, or an epoch done.
struct JobProgress {
  enum class Event { step, epoch };
  Event event = Event::step;
  int epoch = 0;           // 1-based, of the job (a resumed run starts after its checkpoint)
  int epochs = 0;          // the job's last epoch
  int64_t step = 0;        // steps of this epoch done, 1..steps; `steps` for an epoch event
  int64_t steps = 0;       // steps this epoch runs (RunOptions::max_steps may shorten it)
  double loss = 0;         // step: the step's mean loss over its seeds; epoch: the train loss
  double accuracy = 0;     // step: the step's accuracy over its seeds; epoch: the train accuracy
  double steps_per_second = 0;  // over the epoch so far
  double seconds = 0;           // since the epoch started
  // Epoch events only: the epoch's metrics (evaluation included), exactly as
  // JobReport::epochs will hold them. Valid during the call.
  const EpochMetrics* metrics = nullptr;
};

// Asks a running job to stop, from any thread: share one between the host and
// RunOptions::cancel. The driver sees it within 100 ms or at its next step report, stops
// the trainers (their next allreduce fails) or, during an evaluation, stops before the
// next epoch, and run_job throws JobCancelled.
class CancelToken {
 public:
  void cancel() noexcept { cancelled_.store(true, std::memory_order_relaxed); }
  bool cancelled() const noexcept { return cancelled_.load(std::memory_order_relaxed); }

 private:
  std::atomic<bool> cancelled_{false};
};

// run_job's outcome when RunOptions::cancel was used. The trainers have stopped; OUTPUT
// keeps the checkpoint and the metrics of the last whole epoch (resume continues from it).
class JobCancelled : public Error {
 public:
  JobCancelled(const std::string& what, int epoch, int64_t steps_done, int checkpoint_epoch)
      : Error(what), epoch_(epoch), steps_done_(steps_done), checkpoint_epoch_(checkpoint_epoch) {}
  int epoch() const { return epoch_; }                  // the epoch that was stopped
  // Steps of that epoch every trainer had reported when the driver stopped them (a trainer
  // may have run a step further, whose update no checkpoint holds).
  int64_t steps_done() const { return steps_done_; }
  int checkpoint_epoch() const { return checkpoint_epoch_; }  // in OUTPUT; 0: none

 private:
  int epoch_;
  int64_t steps_done_;
  int checkpoint_epoch_;
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
  // Called on run_job's thread after every step (once every trainer reported it) and after
  // every epoch (once its checkpoint and metrics line are written). It should return
  // quickly: the trainers do not wait for it (an epoch runs in each trainer on its own, and
  // the driver reads their reports as they come), so a slow callback only delays the
  // reports it sees. If it throws, the job's trainers are stopped and run_job rethrows.
  std::function<void(const JobProgress&)> on_progress;
  // Set to stop the job from another thread; see CancelToken.
  std::shared_ptr<CancelToken> cancel;
  // The node (of the runtime's) of each partition, with its trainers; empty: partition p
  // on node p mod nodes (JobConfig::node_of_partition). A job placed by resources
  // (training/placement.h) passes its placement here.
  std::vector<int> placement;
  // The partition folder as each node (of the runtime's) opens it, when the nodes do not
  // share the driver's path (a cluster job's staged copies, training/cluster_job.h); empty:
  // job.partition_dir() everywhere. The driver itself reads job.partition_dir().
  std::vector<std::string> node_partition_dirs;
  // Told, before any actor is spawned, the key under which the nodes list the job's
  // actors (runtime::owner_key of the driver that owns them): how a head matches the actors
  // its nodes report to the job.
  std::function<void(const std::string&)> on_owner;
};

// A run's checkpoint pointer inside OUTPUT (JSON naming its epoch and its state files in
// OUTPUT/checkpoints/): what --resume reads, whichever driver wrote it.
inline constexpr const char* kCheckpointFileName = "checkpoint.json";

// A checkpoint pointer as read: where it is, the epochs it holds whole, the steps of the
// next one it holds (0: none; node-classification jobs checkpoint inside an epoch), and
// its JSON, for the driver that wrote it to read the rest.
struct CheckpointPointer {
  std::string path;
  int epoch = 0;
  int64_t step = 0;
  nlohmann::json meta;
};

// OUTPUT's checkpoint pointer, or none when OUTPUT has none. Throws Error naming the file
// when it is damaged (not JSON, no epoch, a negative epoch or step). The one reader of the
// pointer: --resume and a cluster job's recovery both use it.
std::optional<CheckpointPointer> read_checkpoint_pointer(const std::string& output);

}  // namespace partita
