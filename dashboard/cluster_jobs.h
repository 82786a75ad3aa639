// The jobs submitted to a cluster's head on its status page (`partita daemon --head
// --dashboard`). The head knows each job as its driver reports it (runtime/cluster/:
// JobStatus, refreshed by the drivers every step they report, at most every 250 ms); the
// page follows that: the last step each time the head's status is read (once per heartbeat
// period), the epochs as the job's metrics.jsonl holds them (its output folder is on the
// head's machine, where this runs), and the job's end. Per-step curves therefore have a
// point per period rather than per step.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>

#include "dashboard/status_board.h"
#include "runtime/cluster/cluster_protocol.h"

namespace partita::dashboard {

class ClusterJobsFeed {
 public:
  explicit ClusterJobsFeed(std::shared_ptr<StatusBoard> board) : board_(std::move(board)) {}

  // Publishes what changed in `status` since the last call: new jobs (once their epoch
  // count is known, or ended), new epochs, the last step, ends. Jobs the board no longer
  // keeps (Limits::jobs) are not added again.
  void update(const runtime::ClusterStatus& status);

  // The jobs this feed keeps anything of: at most those of the last status (the head
  // bounds its list), however many came and went before.
  size_t jobs_tracked() const;

 private:
  void update_job(const runtime::JobStatus& job);

  std::shared_ptr<StatusBoard> board_;
  std::map<std::string, int> epochs_published_;  // by job id
  std::map<std::string, std::pair<int, int64_t>> last_step_;  // (epoch, step) published
  std::set<std::string> ended_;
};

}  // namespace partita::dashboard
