// What the status page shows: the nodes and their state, the jobs with their progress, and
// each job's curves, kept in memory by the process that drives the jobs (`partita run` /
// `submit` with --dashboard; later the head daemon) and rendered for the page (JSON) and
// for monitoring (Prometheus text).
//
// Fed from the driver's own records, never a second computation: a job's step and epoch
// events are the JobProgress its driver hands RunOptions::on_progress, and an epoch's
// record is its EpochMetrics, serialised by training/metrics_record.h exactly as the
// metrics.jsonl line (so /api/jobs/ID/metrics, /metrics and metrics.jsonl name every
// figure alike).
//
// Nodes over time: each time the node list is replaced (a head: once per heartbeat
// period), a node with resources (a live cluster node) adds a point to each of its curves
// (cores busy, resident memory, threads, network bytes/s in and out, staging cache bytes),
// Series of at most Limits::points_per_series points like a job's, for at most
// Limits::nodes nodes (those the latest list names).
//
// Bounded memory, whatever runs: per job, each per-step curve (loss, accuracy, steps/s) is
// a Series of at most Limits::points_per_series points (downsampled: the whole run at
// decreasing resolution, dashboard/series.h), and the last Limits::epochs_per_job epoch
// records are kept (older ones dropped; metrics.jsonl has them all). At most Limits::jobs
// jobs: adding one more drops the oldest finished job.
//
// Thread-safe: every call locks one mutex. publish() is O(1) amortised under it; the
// renderings copy what they need under it and format outside, so a page being polled
// holds the lock only for the copy and never delays the driver's thread for long.
//
// Hosting it, as `partita run --dashboard` does (tools/run_command.cpp) and a head daemon
// would, one board for all its jobs:
//   auto board = std::make_shared<dashboard::StatusBoard>();
//   dashboard::StatusServer server(board, dashboard::parse_dashboard_address("8265"));
//   board->add_job(id, "what it is", job.epochs);
//   options.on_progress = [board, id](const JobProgress& p) { board->publish(id, p); };
//   run_job(runtime, job, options);  // then board->set_state(id, JobState::done), or failed
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dashboard/series.h"
#include "runtime/cluster/cluster_protocol.h"
#include "training/job_driver.h"

namespace partita::dashboard {

enum class JobState { preparing, running, done, failed, cancelled };
const char* to_string(JobState state);

// What a cluster's node reported in its last heartbeat (runtime/cluster/cluster_protocol.h:
// NodeInfo and NodeLoad): its machine and its daemon's process.
struct NodeResources {
  int32_t cores = 0;
  int64_t memory_bytes = 0, memory_available_bytes = 0, disk_free_bytes = 0;
  double cpu_seconds = 0;  // the daemon's CPU time so far
  int64_t resident_bytes = 0, threads = 0;
  int64_t network_received_bytes = 0, network_sent_bytes = 0;  // its network namespace's, so far
  int64_t staging_cache_bytes = 0;
  int64_t actors = 0;
  double heartbeat_age_seconds = 0;  // since that heartbeat
};

struct NodeStatus {
  std::string name;     // "in-process", or the daemon's HOST:PORT
  std::string state;    // "up" or "lost"
  std::string detail;   // why it is lost, or what runs there ("partitions 0, 2")
  std::optional<NodeResources> resources;  // a live cluster node's; none in-process

  NodeStatus() = default;
  NodeStatus(std::string name, std::string state, std::string detail, std::optional<NodeResources> resources = {})
      : name(std::move(name)), state(std::move(state)), detail(std::move(detail)), resources(std::move(resources)) {}
};

// The nodes of a cluster as its head knows them (runtime/cluster/): alive ones "up" with
// their address, cores, free memory and actor count, and their resources; dead ones "lost"
// with the reason.
std::vector<NodeStatus> cluster_nodes(const runtime::ClusterStatus& status);

// A job id as URLs and Prometheus labels carry it: 1-64 characters of [A-Za-z0-9._-].
// make_job_id turns any name into one (other characters become '-'; empty: "job").
bool is_valid_job_id(const std::string& id);
std::string make_job_id(const std::string& name);

class StatusBoard {
 public:
  struct Limits {
    size_t points_per_series = 1000;  // per-step curve; >= 2
    size_t epochs_per_job = 1000;     // epoch records kept per job; >= 1
    size_t jobs = 32;                 // jobs kept; >= 1
    size_t nodes = 256;               // nodes whose curves are kept; >= 1
  };

  explicit StatusBoard(Limits limits);
  StatusBoard() : StatusBoard(Limits()) {}

  // Adds a job in state `preparing` (data generation and partitioning come first), or
  // replaces a finished job with the same id. Throws UsageError for an invalid id or one
  // of a job still preparing or running; Error when Limits::jobs jobs are all unfinished.
  void add_job(const std::string& id, const std::string& description, int epochs);
  // A step or epoch event of the job (as RunOptions::on_progress gets it); the first one
  // moves a preparing job to running. An epoch event adds its metrics record. Throws
  // UsageError for an unknown job (a caller's mistake: the job was never added).
  void publish(const std::string& id, const JobProgress& progress);
  // The job's state and, for failed or cancelled jobs, why (the error's message).
  void set_state(const std::string& id, JobState state, const std::string& message = "");
  // Replaces the node list, and adds a point to the curves of each node with resources
  // (rates from the previous point of the same node). Forgets the curves of nodes it does
  // not name.
  void set_nodes(std::vector<NodeStatus> nodes);
  // Where a job's actors run: (node name, actors there) pairs, as the head counts them.
  // Ignored for an unknown job (the head lists jobs the board may not keep).
  void set_job_nodes(const std::string& id, std::vector<std::pair<std::string, int64_t>> nodes);

  bool has_job(const std::string& id) const;
  std::vector<std::string> job_ids() const;  // in the order they were added

  // {"nodes": [{"name","state","detail"}...], "jobs": [job summary...]}; a summary holds
  // id, description, state, message, epoch, epochs, step, steps, steps_per_second, loss and
  // accuracy of the last step, steps_done, and last_epoch (the newest epoch record or null).
  // A job that ended (failed, cancelled) keeps the figures of its last step or epoch; loss
  // and accuracy are null while it has none (never a 0 it did not reach). "actors_by_node":
  // [{"node", "actors"}...] as set_job_nodes last said (empty: none known).
  std::string jobs_json() const;
  // {"job": id, "epochs": [records as metrics.jsonl], "steps": {"stride": k, "samples": n,
  //  "loss": [[x, y]...], "accuracy": [...], "steps_per_second": [...]}}; x is the job's
  // step count since its first epoch ((epoch - 1) * steps + step). nullopt: unknown job.
  std::optional<std::string> metrics_json(const std::string& id) const;
  // {"nodes": [{"name", "state", "detail", "resources": {NodeResources' fields} or null,
  //  "history": {"stride": k, "cpu_cores": [[x, y]...], "resident_bytes", "threads",
  //  "network_receive_bytes_per_second", "network_transmit_bytes_per_second",
  //  "staging_cache_bytes"}}...]}; x is seconds since the board was made. cpu_cores is
  // the cores the node's daemon kept busy since the previous point (CPU seconds / seconds).
  std::string nodes_json() const;
  // The Prometheus text exposition format 0.0.4 (dashboard/prometheus_text.h): per job
  // (label job_id="ID") its state, position, last step's figures, steps done (a counter),
  // step durations (a histogram) and last epoch record (one gauge per metrics.jsonl field,
  // partita_job_last_epoch_<field>); per node (label node="NAME") whether it is up and, for
  // a live cluster node, its resources; and this process's figures (process_*). The names
  // are listed in docs/cluster.md.
  std::string prometheus_text() const;

  // The upper bounds (seconds) of the step-duration histogram's buckets.
  static const std::vector<double>& step_duration_bounds();

 private:
  struct Job {
    std::string description;
    JobState state = JobState::preparing;
    std::string message;
    JobProgress last;  // the newest event (its metrics pointer is never kept)
    bool has_figures = false;  // a step or an epoch was published: `last` has a loss
    // Step durations: seconds between a step's end and the previous one's (the first step
    // of an epoch: from the epoch's start), by bucket of step_duration_bounds() (+Inf last).
    std::vector<uint64_t> duration_counts;
    double duration_sum = 0;
    int epochs = 0;
    int64_t steps_done = 0;
    Series loss, accuracy, rate;  // per step
    std::deque<EpochMetrics> records;  // without their per-step vectors
    std::vector<std::pair<std::string, int64_t>> nodes;  // set_job_nodes

    explicit Job(size_t points) : loss(points), accuracy(points), rate(points) {}
  };
  Job& job_locked(const std::string& id);
  // A node's curves, and its previous point (for the rates).
  struct NodeHistory {
    Series cpu, resident, threads, received, sent, cache;
    double at = -1;  // seconds since the board was made; -1: no point yet
    double cpu_seconds = 0;
    int64_t received_bytes = 0, sent_bytes = 0;
    explicit NodeHistory(size_t points)
        : cpu(points), resident(points), threads(points), received(points), sent(points), cache(points) {}
  };
  // A job's scalars, copied under the lock for a rendering.
  struct Summary {
    std::string id, description, message;
    JobState state;
    JobProgress last;
    bool has_figures;
    int epochs;
    int64_t steps_done;
    std::vector<uint64_t> duration_counts;
    double duration_sum;
    std::vector<std::pair<std::string, int64_t>> nodes;
    std::optional<EpochMetrics> last_epoch;
  };
  // Every job's summary and the nodes, in one lock.
  std::pair<std::vector<Summary>, std::vector<NodeStatus>> snapshot() const;

  Limits limits_;
  mutable std::mutex mutex_;
  std::vector<std::string> order_;  // ids, oldest first
  std::map<std::string, Job> jobs_;
  std::vector<NodeStatus> nodes_;
  std::map<std::string, NodeHistory> history_;  // by node name
  std::chrono::steady_clock::time_point made_ = std::chrono::steady_clock::now();
};

}  // namespace partita::dashboard
