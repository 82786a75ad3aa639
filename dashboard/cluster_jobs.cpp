#include "dashboard/cluster_jobs.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <iterator>

#include "base/error.h"
#include "training/metrics_record.h"

namespace partita::dashboard {

void ClusterJobsFeed::update(const runtime::ClusterStatus& status) {
  // What the head no longer lists (it keeps its most recent finished jobs) is forgotten:
  // the head's list bounds this feed's.
  std::set<std::string> listed;
  for (const runtime::JobStatus& j : status.jobs) listed.insert(j.id);
  for (auto it = ended_.begin(); it != ended_.end();) it = listed.count(*it) ? std::next(it) : ended_.erase(it);
  for (auto it = epochs_published_.begin(); it != epochs_published_.end();) {
    it = listed.count(it->first) ? std::next(it) : epochs_published_.erase(it);
  }
  for (auto it = last_step_.begin(); it != last_step_.end();) {
    it = listed.count(it->first) ? std::next(it) : last_step_.erase(it);
  }
  for (const runtime::JobStatus& j : status.jobs) {
    if (!j.submitted || ended_.count(j.id) || !is_valid_job_id(j.id)) continue;
    try {
      update_job(j);
    } catch (const Error& e) {
      // The board refuses (all its jobs unfinished): the page misses this job, status has it.
      spdlog::warn("status page: job {}: {}", j.id, e.what());
      ended_.insert(j.id);
    }
  }
}

size_t ClusterJobsFeed::jobs_tracked() const {
  std::set<std::string> ids(ended_);
  for (const auto& [id, e] : epochs_published_) ids.insert(id);
  for (const auto& [id, at] : last_step_) ids.insert(id);
  return ids.size();
}

void ClusterJobsFeed::update_job(const runtime::JobStatus& j) {
  {
    if (!board_->has_job(j.id)) {
      if (j.epochs <= 0 && !j.finished()) return;  // its epoch count comes with its first report
      board_->add_job(j.id, j.output, std::max(1, j.epochs));
    }
    // Epochs whose metrics line is written: each with its record, in order.
    if (j.epoch > epochs_published_[j.id] || j.finished()) {
      std::vector<EpochMetrics> epochs;
      try {
        epochs = read_metrics_file((std::filesystem::path(j.output) / kMetricsFileName).string());
      } catch (const Error&) {
        // none yet
      }
      for (const EpochMetrics& m : epochs) {
        if (m.epoch <= epochs_published_[j.id]) continue;
        JobProgress p;
        p.event = JobProgress::Event::epoch;
        p.epoch = m.epoch;
        p.epochs = j.epochs;
        p.step = p.steps = m.steps;
        p.loss = m.train_loss;
        p.accuracy = m.train_accuracy;
        p.seconds = m.seconds;
        p.steps_per_second = m.seconds > 0 ? static_cast<double>(m.steps) / m.seconds : 0.0;
        p.metrics = &m;
        board_->publish(j.id, p);
        epochs_published_[j.id] = m.epoch;
      }
    }
    // The last step, if it is inside an epoch and new.
    const std::pair<int, int64_t> at{j.epoch, j.step};
    if (j.state == "running" && j.step > 0 && j.step < j.steps && last_step_[j.id] != at) {
      JobProgress p;
      p.epoch = j.epoch;
      p.epochs = j.epochs;
      p.step = j.step;
      p.steps = j.steps;
      p.loss = j.loss;
      p.accuracy = j.accuracy;
      p.steps_per_second = j.steps_per_second;
      board_->publish(j.id, p);
      last_step_[j.id] = at;
    }
    if (j.finished()) {
      board_->set_state(j.id, j.state == "done" ? JobState::done : j.state == "failed" ? JobState::failed : JobState::cancelled,
                        j.message);
      ended_.insert(j.id);
      epochs_published_.erase(j.id);
      last_step_.erase(j.id);
    }
  }
}

}  // namespace partita::dashboard
