// What the two drivers of a training job share. run_job's (training/job_driver.cpp: GNN
// jobs, node classification and link prediction with a GNN encoder) and run_kg_job's
// (training/kg_driver.cpp: knowledge-graph embeddings) each write their own task's steps:
// the actors they spawn, an epoch, an evaluation, a checkpoint. What they do alike lives
// here, once: where a partition and its trainers run, the folder each node opens, how a
// trainer is named in errors, how a failure names a lost node, the run's owner key and its
// metrics line per epoch. Internal to training/.
#pragma once

#include <caf/all.hpp>

#include <chrono>
#include <optional>
#include <string>

#include "base/error.h"
#include "partitioner/partition_format.h"
#include "runtime/runtime.h"
#include "training/job_config.h"
#include "training/job_types.h"
#include "training/model_selection.h"

namespace partita {

class DriverBase {
 public:
  DriverBase(const DriverBase&) = delete;
  DriverBase& operator=(const DriverBase&) = delete;

 protected:
  // How long one request to an actor of the job may take.
  static constexpr std::chrono::milliseconds kRequestDeadline{60000};
  // How long a failed job waits to learn which node was lost, if one was (a killed
  // daemon's connection drops at once; a silent one within the heartbeat timeout).
  static constexpr std::chrono::milliseconds kLostNodeGrace{3000};
  // How often a driver with a cancel token looks at it while no trainer reports.
  static constexpr std::chrono::milliseconds kCancelPoll{100};

  // `job` and `options` outlive the driver (run_job's arguments).
  DriverBase(runtime::Runtime& runtime, const JobConfig& job, const RunOptions& options)
      : runtime_(runtime), job_(job), options_(options), self_(runtime.system()), folder_(job.partition_dir()) {}
  ~DriverBase() = default;

  // Where partition `part` and the actors placed with it run: RunOptions::placement, or
  // round robin over the runtime's nodes.
  int node_of_partition(int part) const;
  // The partition folder as `node` opens it (RunOptions::node_partition_dirs).
  const std::string& dir_on(int node) const;
  // "trainer T (partition P, on NODE)", for errors.
  std::string describe_trainer(int trainer) const;
  bool cancel_requested() const { return options_.cancel && options_.cancel->cancelled(); }
  // Tells RunOptions::on_owner the key its nodes list the job's actors under (this
  // driver's; runtime::owner_key): how a head matches them to the job.
  void announce_owner() const;
  // Throws `failure` as an Error, with the node the runtime lost when one was within
  // kLostNodeGrace (a trainer can see a peer's process end before this process hears of
  // it): one way for every failure of a job on daemons to name a lost node.
  [[noreturn]] void throw_naming_lost_node(const Error& failure) const;
  // The progress event of a step every trainer reported: the `done`-th of epoch `epoch`'s
  // `steps`, its mean loss, `seconds` into the epoch.
  JobProgress step_progress(int epoch, int64_t done, int64_t steps, double loss, double seconds) const;
  // Appends the epoch's line to OUTPUT/metrics.jsonl (training/metrics_record.h).
  void append_metrics(const EpochMetrics& m) const;

  // Model selection (training/model_selection.h), the same in both drivers.
  // start_selection: once, before the first epoch, after open_job_output. Resolves
  // train.select (unset: best_val when the folder has validation nodes or edges and the run
  // evaluates, else last; UsageError naming train.select or train.early_stopping when they
  // need validation the folder lacks) and, on resume, replays the `done_epochs` epochs of
  // OUTPUT's metrics file, whose selected checkpoint OUTPUT/selected/ holds already.
  void start_selection(int done_epochs);
  // After epoch m's checkpoint (OUTPUT's checkpoint pointer holds it) and metrics line:
  // when it is the new selected epoch, copies that checkpoint into OUTPUT/selected/ (its
  // pointer written last). True when early stopping ends the run after this epoch.
  bool select_epoch(const EpochMetrics& m);
  // The report's selection fields; writes OUTPUT/report.json. `last_epoch`: the run's last.
  void finish_selection(JobReport& report, int last_epoch, bool early_stopped) const;

  runtime::Runtime& runtime_;
  const JobConfig& job_;
  const RunOptions& options_;
  caf::scoped_actor self_;
  PartitionFolder folder_;

 private:
  SelectionMetric metric_;
  SelectMode mode_ = SelectMode::kLast;
  std::optional<ModelSelector> selector_;
  std::optional<double> selected_test_;
};

}  // namespace partita
