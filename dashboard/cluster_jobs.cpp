#include "dashboard/cluster_jobs.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <iterator>

#include "base/error.h"
#include "training/metrics_record.h"

namespace partita::dashboard {

void ClusterJobsFeed::update(const runtime::ClusterStatus& status) {
  std::lock_guard<std::mutex> lock(mutex_);
  // What the head no longer lists (it keeps its most recent finished jobs) is forgotten:
  // the head's list bounds this feed's.
  std::set<std::string> listed;
  for (const runtime::JobStatus& j : status.jobs) listed.insert(j.id);
  for (auto it = ended_.begin(); it != ended_.end();) it = listed.count(*it) ? std::next(it) : ended_.erase(it);
  for (auto it = epochs_published_.begin(); it != epochs_published_.end();) {
    it = listed.count(it->first) ? std::next(it) : epochs_published_.erase(it);
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

void ClusterJobsFeed::on_report(const runtime::JobStatus& report) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (ended_.count(report.id) || !is_valid_job_id(report.id)) return;
  try {
    if (!ensure_job(report)) return;
    for (const runtime::StepSample& s : report.new_steps) {
      JobProgress p;
      p.event = JobProgress::Event::step;
      p.epoch = s.epoch;
      p.epochs = report.epochs;
      p.step = s.step;
      p.steps = s.steps;
      p.loss = s.loss;
      p.accuracy = s.accuracy;
      p.seconds = s.seconds;
      p.steps_per_second = s.seconds > 0 ? static_cast<double>(s.step) / s.seconds : 0.0;
      board_->publish(report.id, p);
    }
  } catch (const Error& e) {
    spdlog::warn("status page: job {}: {}", report.id, e.what());
    ended_.insert(report.id);
  }
}

size_t ClusterJobsFeed::jobs_tracked() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::set<std::string> ids(ended_);
  for (const auto& [id, e] : epochs_published_) ids.insert(id);
  return ids.size();
}

bool ClusterJobsFeed::ensure_job(const runtime::JobStatus& j) {
  if (board_->has_job(j.id)) return true;
  if (j.epochs <= 0 && !j.finished()) return false;  // its epoch count comes with its first step
  board_->add_job(j.id, j.output, std::max(1, j.epochs));
  epochs_published_.emplace(j.id, 0);
  return true;
}

void ClusterJobsFeed::update_job(const runtime::JobStatus& j) {
  if (!ensure_job(j)) return;
  std::vector<std::pair<std::string, int64_t>> nodes;
  for (size_t i = 0; i < j.nodes.size(); ++i) nodes.emplace_back(j.nodes[i], i < j.node_actors.size() ? j.node_actors[i] : 0);
  board_->set_job_nodes(j.id, std::move(nodes));
  // Epochs whose metrics line is written: each with its record, in order.
  int& published = epochs_published_[j.id];
  if (j.epoch > published || j.finished()) {
    std::vector<EpochMetrics> epochs;
    try {
      epochs = read_metrics_file((std::filesystem::path(j.output) / kMetricsFileName).string());
    } catch (const Error&) {
      // none yet
    }
    for (const EpochMetrics& m : epochs) {
      if (m.epoch <= published) continue;
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
      published = m.epoch;
    }
  }
  if (j.finished()) {
    board_->set_state(j.id, j.state == "done" ? JobState::done : j.state == "failed" ? JobState::failed : JobState::cancelled,
                      j.message);
    ended_.insert(j.id);
    epochs_published_.erase(j.id);
  }
}

}  // namespace partita::dashboard
