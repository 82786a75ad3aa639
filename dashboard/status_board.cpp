#include "dashboard/status_board.h"

#include <nlohmann/json.hpp>
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <sstream>

#include "base/error.h"
#include "training/metrics_record.h"

namespace partita::dashboard {

namespace {

// A metrics.jsonl field as a Prometheus name part ([a-zA-Z0-9_]): link-prediction fields
// such as "test.hits@10" become "test_hits_at_10".
std::string metric_name(const std::string& field) {
  std::string name;
  for (char c : field) {
    if (c == '@') {
      name += "_at_";
    } else {
      name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    }
  }
  return name;
}

constexpr JobState kStates[] = {JobState::preparing, JobState::running, JobState::done, JobState::failed,
                                JobState::cancelled};

bool finished(JobState state) { return state == JobState::done || state == JobState::failed || state == JobState::cancelled; }

bool id_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

nlohmann::json points_json(const Series& series) {
  nlohmann::json out = nlohmann::json::array();
  for (const Point& p : series.points()) out.push_back({p.x, p.y});
  return out;
}

// A sample value as the exposition format spells it (Go's float syntax).
std::string prometheus_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

// A label value: backslash, double quote and line feed escaped.
std::string prometheus_label(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

// One metric family: its HELP and TYPE lines, then its samples.
class Family {
 public:
  Family(std::ostringstream& out, const std::string& name, const std::string& type, const std::string& help)
      : out_(out), name_(name) {
    out_ << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
  }
  void sample(const std::string& labels, double value) {
    out_ << name_ << '{' << labels << "} " << prometheus_number(value) << '\n';
  }

 private:
  std::ostringstream& out_;
  std::string name_;
};

}  // namespace

const char* to_string(JobState state) {
  switch (state) {
    case JobState::preparing: return "preparing";
    case JobState::running: return "running";
    case JobState::done: return "done";
    case JobState::failed: return "failed";
    case JobState::cancelled: return "cancelled";
  }
  return "unknown";
}

std::vector<NodeStatus> cluster_nodes(const runtime::ClusterStatus& status) {
  // Members by id: a node that came back is a newer member under the same name, and
  // replaces its dead record (one series per node name in /metrics).
  std::vector<NodeStatus> nodes;
  std::map<std::string, size_t> index_of;
  for (const runtime::NodeStatus& n : status.nodes) {
    NodeStatus node;
    node.name = n.info.name;
    node.state = n.alive ? "up" : "lost";
    node.detail = n.alive ? fmt::format("{}, {} cores, {:.1f} GiB free, {} actors", n.info.address, n.info.cores,
                                        static_cast<double>(n.load.memory_available_bytes) / (1 << 30),
                                        n.load.actor_types.size())
                          : n.lost;
    auto [it, added] = index_of.emplace(node.name, nodes.size());
    if (added) {
      nodes.push_back(std::move(node));
    } else {
      nodes[it->second] = std::move(node);
    }
  }
  return nodes;
}

bool is_valid_job_id(const std::string& id) {
  return !id.empty() && id.size() <= 64 && std::all_of(id.begin(), id.end(), id_char);
}

std::string make_job_id(const std::string& name) {
  std::string id = name.substr(0, 64);
  for (char& c : id) {
    if (!id_char(c)) c = '-';
  }
  return id.empty() ? "job" : id;
}

StatusBoard::StatusBoard(Limits limits) : limits_(limits) {
  if (limits.points_per_series < 2) throw UsageError("the status board keeps at least 2 points per series");
  if (limits.epochs_per_job < 1 || limits.jobs < 1) throw UsageError("the status board keeps at least 1 epoch and 1 job");
}

StatusBoard::Job& StatusBoard::job_locked(const std::string& id) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) throw UsageError("the status board has no job '" + id + "'");
  return it->second;
}

void StatusBoard::add_job(const std::string& id, const std::string& description, int epochs) {
  if (!is_valid_job_id(id)) throw UsageError("invalid job id '" + id + "': use 1-64 characters of A-Z a-z 0-9 . _ -");
  std::lock_guard<std::mutex> lock(mutex_);
  auto existing = jobs_.find(id);
  if (existing != jobs_.end()) {
    if (!finished(existing->second.state)) throw UsageError("job '" + id + "' is already on the status board");
    jobs_.erase(existing);
    order_.erase(std::find(order_.begin(), order_.end(), id));
  }
  if (order_.size() >= limits_.jobs) {
    auto oldest = std::find_if(order_.begin(), order_.end(), [&](const std::string& j) { return finished(jobs_.at(j).state); });
    if (oldest == order_.end()) {
      throw Error("the status board holds " + std::to_string(order_.size()) + " unfinished jobs, its limit");
    }
    jobs_.erase(*oldest);
    order_.erase(oldest);
  }
  Job job(limits_.points_per_series);
  job.description = description;
  job.epochs = epochs;
  jobs_.emplace(id, std::move(job));
  order_.push_back(id);
}

void StatusBoard::publish(const std::string& id, const JobProgress& progress) {
  std::lock_guard<std::mutex> lock(mutex_);
  Job& job = job_locked(id);
  if (job.state == JobState::preparing) job.state = JobState::running;
  // An epoch's record may come after the next epoch's first steps (a head reads it from the
  // metrics file): it does not take the newer step's place as the job's position.
  const bool older = progress.event == JobProgress::Event::epoch && job.has_figures &&
                     std::make_pair(progress.epoch, progress.step) < std::make_pair(job.last.epoch, job.last.step);
  if (!older) {
    job.last = progress;
    job.last.metrics = nullptr;
  }
  job.has_figures = true;
  job.epochs = progress.epochs;
  if (progress.event == JobProgress::Event::step) {
    const double x = static_cast<double>(progress.epoch - 1) * static_cast<double>(progress.steps) +
                     static_cast<double>(progress.step);
    job.loss.add(x, progress.loss);
    job.accuracy.add(x, progress.accuracy);
    job.rate.add(x, progress.steps_per_second);
    ++job.steps_done;
  } else if (progress.metrics) {
    EpochMetrics record = *progress.metrics;
    record.step_losses.clear();
    record.step_losses.shrink_to_fit();
    record.step_hashes.clear();
    record.step_hashes.shrink_to_fit();
    job.records.push_back(std::move(record));
    if (job.records.size() > limits_.epochs_per_job) job.records.pop_front();
  }
}

void StatusBoard::set_state(const std::string& id, JobState state, const std::string& message) {
  std::lock_guard<std::mutex> lock(mutex_);
  Job& job = job_locked(id);
  job.state = state;
  job.message = message;
}

void StatusBoard::set_nodes(std::vector<NodeStatus> nodes) {
  std::lock_guard<std::mutex> lock(mutex_);
  nodes_ = std::move(nodes);
}

bool StatusBoard::has_job(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return jobs_.count(id) > 0;
}

std::vector<std::string> StatusBoard::job_ids() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return order_;
}

std::pair<std::vector<StatusBoard::Summary>, std::vector<NodeStatus>> StatusBoard::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Summary> jobs;
  for (const std::string& id : order_) {
    const Job& job = jobs_.at(id);
    std::optional<EpochMetrics> last_epoch;
    if (!job.records.empty()) last_epoch = job.records.back();
    jobs.push_back(
        {id, job.description, job.message, job.state, job.last, job.has_figures, job.epochs, job.steps_done, last_epoch});
  }
  return {std::move(jobs), nodes_};
}

std::string StatusBoard::jobs_json() const {
  const auto [jobs, nodes] = snapshot();
  nlohmann::json out = {{"nodes", nlohmann::json::array()}, {"jobs", nlohmann::json::array()}};
  for (const NodeStatus& n : nodes) out["nodes"].push_back({{"name", n.name}, {"state", n.state}, {"detail", n.detail}});
  for (const Summary& j : jobs) {
    out["jobs"].push_back({{"id", j.id},
                           {"description", j.description},
                           {"state", to_string(j.state)},
                           {"message", j.message},
                           {"epoch", j.last.epoch},
                           {"epochs", j.epochs},
                           {"step", j.last.step},
                           {"steps", j.last.steps},
                           {"steps_per_second", j.last.steps_per_second},
                           {"loss", j.has_figures ? nlohmann::json(j.last.loss) : nlohmann::json()},
                           {"accuracy", j.has_figures ? nlohmann::json(j.last.accuracy) : nlohmann::json()},
                           {"steps_done", j.steps_done},
                           {"last_epoch", j.last_epoch ? nlohmann::json(*j.last_epoch) : nlohmann::json()}});
  }
  return out.dump();
}

std::optional<std::string> StatusBoard::metrics_json(const std::string& id) const {
  std::optional<Job> job;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return std::nullopt;
    job.emplace(it->second);
  }
  nlohmann::json out = {{"job", id}, {"epochs", job->records}};
  out["steps"] = {{"stride", job->loss.stride()},
                  {"samples", job->loss.samples()},
                  {"loss", points_json(job->loss)},
                  {"accuracy", points_json(job->accuracy)},
                  {"steps_per_second", points_json(job->rate)}};
  return out.dump();
}

std::string StatusBoard::prometheus_text() const {
  const auto snap = snapshot();  // not a structured binding: the lambdas below capture it
  const std::vector<Summary>& jobs = snap.first;
  const std::vector<NodeStatus>& nodes = snap.second;
  std::ostringstream out;
  auto label = [](const std::string& id) { return "job=\"" + prometheus_label(id) + "\""; };
  {
    Family f(out, "partita_job_state", "gauge", "1 for the job's current state, 0 for the others.");
    for (const Summary& job : jobs) {
      for (JobState s : kStates) f.sample(label(job.id) + ",state=\"" + to_string(s) + "\"", s == job.state ? 1 : 0);
    }
  }
  auto gauge = [&](const std::string& name, const std::string& help, auto value) {
    Family f(out, name, "gauge", help);
    for (const Summary& job : jobs) f.sample(label(job.id), value(job));
  };
  gauge("partita_job_epoch", "The epoch the job is in or last finished (1-based; 0 before the first step).",
        [](const Summary& j) { return j.last.epoch; });
  gauge("partita_job_epochs", "The job's last epoch.", [](const Summary& j) { return j.epochs; });
  gauge("partita_job_step", "Steps done in the current epoch.", [](const Summary& j) { return static_cast<double>(j.last.step); });
  gauge("partita_job_epoch_steps", "Steps the current epoch runs.", [](const Summary& j) { return static_cast<double>(j.last.steps); });
  gauge("partita_job_steps_per_second", "Steps per second over the current epoch so far.",
        [](const Summary& j) { return j.last.steps_per_second; });
  gauge("partita_job_loss", "The last step's mean loss over its seeds (after an epoch: its train loss).",
        [](const Summary& j) { return j.last.loss; });
  gauge("partita_job_accuracy", "The last step's accuracy over its seeds (after an epoch: its train accuracy).",
        [](const Summary& j) { return j.last.accuracy; });
  {
    Family f(out, "partita_job_steps_total", "counter", "Steps every trainer has done since the job started.");
    for (const Summary& job : jobs) f.sample(label(job.id), static_cast<double>(job.steps_done));
  }
  // The last epoch's record, one gauge per metrics.jsonl field (their names are the file's).
  std::map<std::string, std::vector<std::pair<std::string, double>>> fields;
  for (const Summary& job : jobs) {
    if (!job.last_epoch) continue;
    const nlohmann::json record = *job.last_epoch;
    for (const auto& [field, value] : record.items()) {
      fields[metric_name(field)].emplace_back(job.id, value.get<double>());
    }
  }
  for (const auto& [field, samples] : fields) {
    Family f(out, "partita_epoch_" + field, "gauge", "Field '" + field + "' of the job's last metrics.jsonl line (. and @ as _ and _at_).");
    for (const auto& [id, value] : samples) f.sample(label(id), value);
  }
  {
    Family f(out, "partita_node_up", "gauge", "1 if the node is up, 0 if it was lost.");
    for (const NodeStatus& n : nodes) f.sample("node=\"" + prometheus_label(n.name) + "\"", n.state == "up" ? 1 : 0);
  }
  return out.str();
}

}  // namespace partita::dashboard
