#include "dashboard/status_board.h"

#include <nlohmann/json.hpp>
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

#include "base/error.h"
#include "base/process_stats.h"
#include "dashboard/prometheus_text.h"
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

nlohmann::json actors_by_node(const std::vector<std::pair<std::string, int64_t>>& nodes) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [node, actors] : nodes) out.push_back({{"node", node}, {"actors", actors}});
  return out;
}

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
    if (n.alive) {
      NodeResources r;
      r.cores = n.info.cores;
      r.memory_bytes = n.info.memory_bytes;
      r.memory_available_bytes = n.load.memory_available_bytes;
      r.disk_free_bytes = n.load.disk_free_bytes;
      r.cpu_seconds = n.load.cpu_seconds;
      r.resident_bytes = n.load.resident_bytes;
      r.threads = n.load.threads;
      r.network_received_bytes = n.load.network_received_bytes;
      r.network_sent_bytes = n.load.network_sent_bytes;
      r.staging_cache_bytes = n.load.staging_cache_bytes;
      r.actors = static_cast<int64_t>(n.load.actor_types.size());
      r.heartbeat_age_seconds = static_cast<double>(n.ms_since_heartbeat) / 1000.0;
      node.resources = r;
    }
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
  if (limits.epochs_per_job < 1 || limits.jobs < 1 || limits.nodes < 1) {
    throw UsageError("the status board keeps at least 1 epoch, 1 job and 1 node");
  }
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
  job.duration_counts.assign(step_duration_bounds().size() + 1, 0);
  job.description = description;
  job.epochs = epochs;
  jobs_.emplace(id, std::move(job));
  order_.push_back(id);
}

void StatusBoard::publish(const std::string& id, const JobProgress& progress) {
  std::lock_guard<std::mutex> lock(mutex_);
  Job& job = job_locked(id);
  if (job.state == JobState::preparing) job.state = JobState::running;
  const JobProgress previous = job.last;
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
    // The step's duration, when the previous step is the one before it in the same epoch
    // (or it is an epoch's first); after a gap (a resumed run), none.
    const bool follows = progress.step == 1 || (previous.event == JobProgress::Event::step && previous.epoch == progress.epoch &&
                                                previous.step + 1 == progress.step);
    if (follows) {
      const double seconds = std::max(0.0, progress.step == 1 ? progress.seconds : progress.seconds - previous.seconds);
      const std::vector<double>& bounds = step_duration_bounds();
      const size_t bucket = static_cast<size_t>(std::lower_bound(bounds.begin(), bounds.end(), seconds) - bounds.begin());
      ++job.duration_counts[bucket];
      job.duration_sum += seconds;
    }
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
  const double at = std::chrono::duration<double>(std::chrono::steady_clock::now() - made_).count();
  std::lock_guard<std::mutex> lock(mutex_);
  nodes_ = std::move(nodes);
  std::set<std::string> named;
  for (const NodeStatus& n : nodes_) named.insert(n.name);
  for (auto it = history_.begin(); it != history_.end();) it = named.count(it->first) ? std::next(it) : history_.erase(it);
  for (const NodeStatus& n : nodes_) {
    if (!n.resources) continue;
    auto it = history_.find(n.name);
    if (it == history_.end()) {
      if (history_.size() >= limits_.nodes) continue;
      it = history_.emplace(n.name, NodeHistory(limits_.points_per_series)).first;
    }
    NodeHistory& h = it->second;
    const NodeResources& r = *n.resources;
    const double span = at - h.at;
    // Rates need a previous point of the same life (counters that went back: a new daemon).
    if (h.at >= 0 && span > 0 && r.cpu_seconds >= h.cpu_seconds) {
      h.cpu.add(at, (r.cpu_seconds - h.cpu_seconds) / span);
      h.received.add(at, static_cast<double>(std::max<int64_t>(0, r.network_received_bytes - h.received_bytes)) / span);
      h.sent.add(at, static_cast<double>(std::max<int64_t>(0, r.network_sent_bytes - h.sent_bytes)) / span);
    }
    h.resident.add(at, static_cast<double>(r.resident_bytes));
    h.threads.add(at, static_cast<double>(r.threads));
    h.cache.add(at, static_cast<double>(r.staging_cache_bytes));
    h.at = at;
    h.cpu_seconds = r.cpu_seconds;
    h.received_bytes = r.network_received_bytes;
    h.sent_bytes = r.network_sent_bytes;
  }
}

void StatusBoard::set_job_nodes(const std::string& id, std::vector<std::pair<std::string, int64_t>> nodes) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = jobs_.find(id);
  if (it != jobs_.end()) it->second.nodes = std::move(nodes);
}

std::string StatusBoard::nodes_json() const {
  std::vector<NodeStatus> nodes;
  std::map<std::string, NodeHistory> history;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    nodes = nodes_;
    history = history_;
  }
  nlohmann::json out = {{"nodes", nlohmann::json::array()}};
  for (const NodeStatus& n : nodes) {
    nlohmann::json node = {{"name", n.name}, {"state", n.state}, {"detail", n.detail}, {"resources", nullptr},
                           {"history", nullptr}};
    if (n.resources) {
      const NodeResources& r = *n.resources;
      node["resources"] = {{"cores", r.cores},
                           {"memory_bytes", r.memory_bytes},
                           {"memory_available_bytes", r.memory_available_bytes},
                           {"disk_free_bytes", r.disk_free_bytes},
                           {"cpu_seconds", r.cpu_seconds},
                           {"resident_bytes", r.resident_bytes},
                           {"threads", r.threads},
                           {"network_received_bytes", r.network_received_bytes},
                           {"network_sent_bytes", r.network_sent_bytes},
                           {"staging_cache_bytes", r.staging_cache_bytes},
                           {"actors", r.actors},
                           {"heartbeat_age_seconds", r.heartbeat_age_seconds}};
    }
    auto h = history.find(n.name);
    if (h != history.end()) {
      node["history"] = {{"stride", h->second.resident.stride()},
                         {"cpu_cores", points_json(h->second.cpu)},
                         {"resident_bytes", points_json(h->second.resident)},
                         {"threads", points_json(h->second.threads)},
                         {"network_receive_bytes_per_second", points_json(h->second.received)},
                         {"network_transmit_bytes_per_second", points_json(h->second.sent)},
                         {"staging_cache_bytes", points_json(h->second.cache)}};
    }
    out["nodes"].push_back(std::move(node));
  }
  return out.dump();
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
    jobs.push_back({id, job.description, job.message, job.state, job.last, job.has_figures, job.epochs, job.steps_done,
                    job.duration_counts, job.duration_sum, job.nodes, last_epoch});
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
                           {"actors_by_node", actors_by_node(j.nodes)},
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

const std::vector<double>& StatusBoard::step_duration_bounds() {
  static const std::vector<double> bounds = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                             0.5,   1,      2.5,   5,    10,    30,    60};
  return bounds;
}

std::string StatusBoard::prometheus_text() const {
  const auto snap = snapshot();  // not a structured binding: the lambdas below capture it
  const std::vector<Summary>& jobs = snap.first;
  const std::vector<NodeStatus>& nodes = snap.second;
  using Type = PrometheusText::Type;
  PrometheusText out;
  auto job_label = [](const Summary& j) { return PrometheusLabels{{"job_id", j.id}}; };
  out.family("partita_job_state", Type::gauge, "1 for the job's current state, 0 for the others.");
  for (const Summary& job : jobs) {
    for (JobState s : kStates) out.sample({{"job_id", job.id}, {"state", to_string(s)}}, s == job.state ? 1 : 0);
  }
  // Per job; `has` false: the job has no such figure yet (no sample rather than a 0 it never had).
  auto per_job = [&](const std::string& name, Type type, const std::string& help, auto value, auto has) {
    out.family(name, type, help);
    for (const Summary& job : jobs) {
      if (has(job)) out.sample(job_label(job), value(job));
    }
  };
  auto always = [](const Summary&) { return true; };
  auto figures = [](const Summary& j) { return j.has_figures; };
  per_job("partita_job_epoch", Type::gauge, "The epoch the job is in or last finished (1-based; 0 before the first step).",
          [](const Summary& j) { return j.last.epoch; }, always);
  per_job("partita_job_planned_epochs", Type::gauge, "The job's last epoch (train.epochs).",
          [](const Summary& j) { return j.epochs; }, always);
  per_job("partita_job_epoch_step", Type::gauge, "Steps done in the current epoch.",
          [](const Summary& j) { return static_cast<double>(j.last.step); }, always);
  per_job("partita_job_epoch_steps", Type::gauge, "Steps the current epoch runs.",
          [](const Summary& j) { return static_cast<double>(j.last.steps); }, always);
  per_job("partita_job_steps_per_second", Type::gauge, "Steps per second over the current epoch so far.",
          [](const Summary& j) { return j.last.steps_per_second; }, figures);
  per_job("partita_job_loss", Type::gauge, "The last step's mean loss over its seeds (after an epoch: its train loss).",
          [](const Summary& j) { return j.last.loss; }, figures);
  per_job("partita_job_accuracy_ratio", Type::gauge,
          "The last step's accuracy over its seeds, 0..1 (after an epoch: its train accuracy).",
          [](const Summary& j) { return j.last.accuracy; }, figures);
  per_job("partita_job_steps_total", Type::counter, "Steps the job's trainers have done together since it started.",
          [](const Summary& j) { return static_cast<double>(j.steps_done); }, always);
  out.family("partita_job_step_duration_seconds", Type::histogram,
             "Seconds from one step's end to the next one's (an epoch's first step: from the epoch's start).");
  for (const Summary& job : jobs) out.histogram(job_label(job), step_duration_bounds(), job.duration_counts, job.duration_sum);
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
    // The record's own number is the family's name itself: partita_job_last_epoch.
    const std::string name = field == "epoch" ? "partita_job_last_epoch" : "partita_job_last_epoch_" + field;
    out.family(name, Type::gauge, "Field '" + field + "' of the job's last metrics.jsonl line (. and @ as _ and _at_).");
    for (const auto& [id, value] : samples) out.sample({{"job_id", id}}, value);
  }

  out.family("partita_node_up", Type::gauge, "1 if the node is up, 0 if it was lost.");
  for (const NodeStatus& n : nodes) out.sample({{"node", n.name}}, n.state == "up" ? 1 : 0);
  auto per_node = [&](const std::string& name, Type type, const std::string& help, auto value) {
    out.family(name, type, help);
    for (const NodeStatus& n : nodes) {
      if (n.resources) out.sample({{"node", n.name}}, static_cast<double>(value(*n.resources)));
    }
  };
  per_node("partita_node_cores", Type::gauge, "Cores the node's daemon may use (its CPU affinity).",
           [](const NodeResources& r) { return r.cores; });
  per_node("partita_node_memory_bytes", Type::gauge, "Physical memory of the node's machine.",
           [](const NodeResources& r) { return r.memory_bytes; });
  per_node("partita_node_memory_available_bytes", Type::gauge, "MemAvailable on the node's machine, net of placed jobs.",
           [](const NodeResources& r) { return r.memory_available_bytes; });
  per_node("partita_node_disk_free_bytes", Type::gauge, "Free bytes in the node daemon's data folder.",
           [](const NodeResources& r) { return r.disk_free_bytes; });
  per_node("partita_node_cpu_seconds_total", Type::counter, "CPU time (user + system) of the node's daemon.",
           [](const NodeResources& r) { return r.cpu_seconds; });
  per_node("partita_node_resident_memory_bytes", Type::gauge, "Resident memory of the node's daemon.",
           [](const NodeResources& r) { return r.resident_bytes; });
  per_node("partita_node_threads", Type::gauge, "Threads of the node's daemon.", [](const NodeResources& r) { return r.threads; });
  per_node("partita_node_network_receive_bytes_total", Type::counter,
           "Bytes received by the interfaces of the node daemon's network namespace.",
           [](const NodeResources& r) { return r.network_received_bytes; });
  per_node("partita_node_network_transmit_bytes_total", Type::counter,
           "Bytes sent by the interfaces of the node daemon's network namespace.",
           [](const NodeResources& r) { return r.network_sent_bytes; });
  per_node("partita_node_staging_cache_bytes", Type::gauge, "Bytes of the units in the node's staging cache.",
           [](const NodeResources& r) { return r.staging_cache_bytes; });
  per_node("partita_node_actors", Type::gauge, "Actors the node's host runs.", [](const NodeResources& r) { return r.actors; });
  per_node("partita_node_heartbeat_age_seconds", Type::gauge, "Seconds since the node's last heartbeat reached the head.",
           [](const NodeResources& r) { return r.heartbeat_age_seconds; });

  // This process (the head, or the process of `run --dashboard`), as Prometheus's clients
  // name a process's figures.
  try {
    const ProcessStats p = read_process_stats();
    auto process = [&](const std::string& name, Type type, const std::string& help, double value) {
      out.family(name, type, help);
      out.sample({}, value);
    };
    process("process_cpu_seconds_total", Type::counter, "Total user and system CPU time spent in seconds.", p.cpu_seconds);
    process("process_resident_memory_bytes", Type::gauge, "Resident memory size in bytes.",
            static_cast<double>(p.resident_bytes));
    process("process_virtual_memory_bytes", Type::gauge, "Virtual memory size in bytes.", static_cast<double>(p.virtual_bytes));
    process("process_open_fds", Type::gauge, "Number of open file descriptors.", static_cast<double>(p.open_fds));
    if (p.max_fds >= 0) {
      process("process_max_fds", Type::gauge, "Maximum number of open file descriptors.", static_cast<double>(p.max_fds));
    }
    process("process_start_time_seconds", Type::gauge, "Start time of the process since unix epoch in seconds.",
            p.start_time_seconds);
    process("process_threads", Type::gauge, "Number of OS threads of the process.", static_cast<double>(p.threads));
    process("process_network_receive_bytes_total", Type::counter,
            "Number of bytes received by the process's network namespace over all interfaces.",
            static_cast<double>(p.network_received_bytes));
    process("process_network_transmit_bytes_total", Type::counter,
            "Number of bytes sent by the process's network namespace over all interfaces.",
            static_cast<double>(p.network_sent_bytes));
  } catch (const Error& e) {
    spdlog::debug("status page: no process metrics: {}", e.what());
  }
  return out.str();
}

}  // namespace partita::dashboard
