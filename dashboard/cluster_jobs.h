// The jobs submitted to a cluster's head on its status page (`partita daemon --head
// --dashboard`). The head knows each job as its driver reports it (runtime/cluster/:
// JobStatus, sent by the driver at most every 250 ms, each report carrying every step
// since the previous one); the page follows that:
//   - every step, as the head accepts the report that carries it (on_report, from the
//     head's actor: HeadOptions::on_job_report), so the per-step curves and the step
//     counter are those `partita run --dashboard` shows for the same job;
//   - the epochs as the job's metrics.jsonl holds them (its output folder is on the head's
//     machine, where this runs), and the job's end, each time the head's status is read
//     (update, once per heartbeat period).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "dashboard/status_board.h"
#include "runtime/cluster/cluster_protocol.h"

namespace partita::dashboard {

class ClusterJobsFeed {
 public:
  explicit ClusterJobsFeed(std::shared_ptr<StatusBoard> board) : board_(std::move(board)) {}

  // Publishes what changed in `status` since the last call: new jobs (once their epoch
  // count is known, or ended), new epochs, where their actors run, ends. Jobs the board no longer keeps
  // (Limits::jobs) are not added again. Thread-safe with on_report.
  void update(const runtime::ClusterStatus& status);

  // A driver's report as the head accepted it: adds its job to the board if it is new (its
  // epoch count comes with the report), and publishes each of its steps. Reports of a job
  // that ended on the board are ignored. Thread-safe with update.
  void on_report(const runtime::JobStatus& report);

  // The jobs this feed keeps anything of: at most those of the last status (the head
  // bounds its list), however many came and went before.
  size_t jobs_tracked() const;

 private:
  void update_job(const runtime::JobStatus& job);
  // Adds the job to the board if it is not there yet and its epoch count is known; false
  // when it is not on the board.
  bool ensure_job(const runtime::JobStatus& job);

  std::shared_ptr<StatusBoard> board_;
  mutable std::mutex mutex_;
  std::map<std::string, int> epochs_published_;  // by job id
  std::set<std::string> ended_;
};

}  // namespace partita::dashboard
