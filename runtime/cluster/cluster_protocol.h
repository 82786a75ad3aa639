// The cluster's membership protocol, together, readable as one: what a node tells the head
// when it joins and at every heartbeat, what the head answers, and the status it gives
// anyone who asks (`partita status`, the dashboard).
//
// A cluster is one head (`partita daemon --head`) and any number of node daemons
// (`partita daemon --join HEAD:PORT`). The head keeps the membership: each node's address,
// resources and liveness, and what runs there. Liveness is two signals, whichever comes
// first: the node's agent stops heart-beating for the heartbeat timeout (a frozen process, a
// lost network), or its connection drops (a killed process; CAF's own connection heartbeats
// catch a silent one, see runtime/actor_system.h). A node that comes back, or re-joins a
// restarted head, is a new member with a new id: a member id names one uninterrupted life.
//
// Every request here has a deadline on the asking side; the head never waits on a node.
#pragma once

#include <caf/actor.hpp>
#include <caf/atom.hpp>
#include <caf/fwd.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace partita::runtime {

// What a node is: sent once, when it joins.
struct NodeInfo {
  std::string name;      // --name, or the host name
  std::string address;   // HOST:PORT its host actor listens on, as others reach it
  std::string version;   // Partita's
  int32_t cores = 0;     // usable by this process (its CPU affinity)
  int64_t memory_bytes = 0;  // physical memory of the machine
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, NodeInfo& x) {
  return f(caf::meta::type_name("partita.NodeInfo"), x.name, x.address, x.version, x.cores, x.memory_bytes);
}

// What a node reports at every heartbeat.
struct NodeLoad {
  int64_t memory_available_bytes = 0;  // MemAvailable
  int64_t disk_free_bytes = 0;         // in the daemon's data folder
  // The actors its host runs: their types, and for each the job (its owner, see host.h)
  // as an opaque key; "" for an actor without one.
  std::vector<std::string> actor_types;
  std::vector<std::string> actor_jobs;
  // The keys of the units in its staging cache (runtime/staging/stage_cache.h), at most
  // kMaxReportedCachedUnits: placement prefers a node that has a job's part already.
  std::vector<std::string> cached_units;
  // The node daemon's process (base/process_stats.h): its CPU time so far, resident memory,
  // threads, the bytes its network namespace's interfaces received and sent so far, and the
  // bytes of its staging cache's units (0 without a cache).
  double cpu_seconds = 0;
  int64_t resident_bytes = 0;
  int64_t threads = 0;
  int64_t network_received_bytes = 0;
  int64_t network_sent_bytes = 0;
  int64_t staging_cache_bytes = 0;
};
inline constexpr size_t kMaxReportedCachedUnits = 4096;

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, NodeLoad& x) {
  return f(caf::meta::type_name("partita.NodeLoad"), x.memory_available_bytes, x.disk_free_bytes, x.actor_types,
           x.actor_jobs, x.cached_units, x.cpu_seconds, x.resident_bytes, x.threads, x.network_received_bytes,
           x.network_sent_bytes, x.staging_cache_bytes);
}

// One member as the head sees it.
struct NodeStatus {
  uint64_t member = 0;  // 1, 2, ...: ids are never reused within a head's life
  NodeInfo info;
  NodeLoad load;        // as of the last heartbeat
  bool alive = false;
  std::string lost;     // why it is dead; "" while alive
  int64_t ms_since_heartbeat = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, NodeStatus& x) {
  return f(caf::meta::type_name("partita.NodeStatus"), x.member, x.info, x.load, x.alive, x.lost,
           x.ms_since_heartbeat);
}

// One training step of a job, as its driver saw it (training/job_types.h: JobProgress):
// what the status page's per-step curves and step counters are made of.
struct StepSample {
  int32_t epoch = 0;     // 1-based
  int64_t step = 0;      // 1..steps within the epoch
  int64_t steps = 0;     // steps the epoch runs
  double loss = 0, accuracy = 0;
  double seconds = 0;    // since the epoch started
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, StepSample& x) {
  return f(caf::meta::type_name("partita.StepSample"), x.epoch, x.step, x.steps, x.loss, x.accuracy, x.seconds);
}

// The most steps one driver's report carries: a driver whose steps outrun its reports
// sends one as soon as it holds this many.
inline constexpr size_t kMaxStepsPerReport = 1024;

// A job the head knows of. Submitted jobs (`partita submit JOB --address HEAD`) are run by
// a driver process the head starts; the driver reports its progress with this struct (the
// head fills in id, nodes and actors). Jobs of `partita submit --daemons` on the cluster's
// nodes are known only by their actors (state "running", the owner's key as id).
struct JobStatus {
  std::string id;                  // the head's job id, or the owner's key
  // Submitted jobs: "starting", "running", "recovering", "done", "failed", "cancelled".
  std::string state;
  std::vector<std::string> nodes;  // names of the nodes its actors run on
  std::vector<int64_t> node_actors;  // how many of its actors run on each of `nodes`
  int64_t actors = 0;
  bool submitted = false;          // run by a driver of the head's
  std::string message;             // why it failed or was cancelled; what it recovers from
  std::string output;              // its output folder, on the head's machine
  std::string owner;               // its current driver's owner key (runtime/host.h)
  std::vector<std::string> partitions;  // the address of each partition's node
  std::vector<int64_t> partition_bytes;  // what each partition takes in memory there
  int32_t epoch = 0, epochs = 0;
  int64_t step = 0, steps = 0;
  double steps_per_second = 0, loss = 0, accuracy = 0;
  int32_t restarts = 0;
  // A driver's report: every step since its previous report, at most kMaxStepsPerReport, in
  // order. The head hands them to HeadOptions::on_job_report and keeps none: a status has
  // none.
  std::vector<StepSample> new_steps;
  bool finished() const { return finished_state(state); }
  // "done", "failed" or "cancelled": the states a job ends in.
  static bool finished_state(const std::string& state) {
    return state == "done" || state == "failed" || state == "cancelled";
  }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, JobStatus& x) {
  return f(caf::meta::type_name("partita.JobStatus"), x.id, x.state, x.nodes, x.actors, x.submitted, x.message,
           x.output, x.owner, x.partitions, x.partition_bytes, x.epoch, x.epochs, x.step, x.steps, x.steps_per_second, x.loss,
           x.accuracy, x.restarts, x.node_actors, x.new_steps);
}

// The largest job file the head accepts, and the most log bytes one `logs` answer carries.
inline constexpr size_t kMaxSubmittedJobBytes = 256 * 1024;
inline constexpr int64_t kMaxLogChunkBytes = 64 * 1024;
// The most bytes of text a driver's report carries (its message, owner and partitions'
// addresses together): more is not a driver's report.
inline constexpr size_t kMaxReportBytes = 64 * 1024;

// Everything `status` shows.
struct ClusterStatus {
  std::string version;   // the head's
  int64_t heartbeat_ms = 0;
  int64_t heartbeat_timeout_ms = 0;
  std::vector<NodeStatus> nodes;  // live ones and the most recent dead ones, by member id
  std::vector<JobStatus> jobs;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ClusterStatus& x) {
  return f(caf::meta::type_name("partita.ClusterStatus"), x.version, x.heartbeat_ms, x.heartbeat_timeout_ms,
           x.nodes, x.jobs);
}

using join_atom = caf::atom_constant<caf::atom("c_join")>;
using heartbeat_atom = caf::atom_constant<caf::atom("c_beat")>;
using status_atom = caf::atom_constant<caf::atom("c_status")>;
using stop_cluster_atom = caf::atom_constant<caf::atom("c_stop")>;
// The stopping client has the head's answer to stop_cluster_atom: the head may go.
using stop_ack_atom = caf::atom_constant<caf::atom("c_stopack")>;
using stop_node_atom = caf::atom_constant<caf::atom("c_stopnode")>;
using submit_job_atom = caf::atom_constant<caf::atom("c_submit")>;
using job_report_atom = caf::atom_constant<caf::atom("c_jreport")>;
using job_logs_atom = caf::atom_constant<caf::atom("c_jlogs")>;
using cancel_job_atom = caf::atom_constant<caf::atom("c_jcancel")>;
using resume_job_atom = caf::atom_constant<caf::atom("c_jresume")>;
using rendezvous_atom = caf::atom_constant<caf::atom("c_rdv")>;

// Rendezvous of an allreduce group's members (head.h): the longest group name, the most
// ranks of one group and the most groups waiting for their members at once.
inline constexpr size_t kMaxGroupNameBytes = 256;
inline constexpr int32_t kMaxGroupSize = 1024;
inline constexpr size_t kMaxOpenGroups = 64;

// A node's agent (node_agent.h), as the head sees it.
//   stop_node: the cluster is stopping; shut this node's daemon down.
using node_agent_actor = caf::typed_actor<caf::reacts_to<stop_node_atom>>;

// The head (head.h).
//   (join, info, agent) -> (member id, heartbeat period ms, heartbeat timeout ms): a new
//       member; the head monitors `agent` (a node_agent_actor, sent untyped: CAF ships
//       untyped handles with nothing registered)
//   (heartbeat, member id, load) -> true, or false when the head does not know the member as
//       alive (it restarted, or declared the member dead): the node joins again
//   status -> the cluster's status
//   stop_cluster -> the number of nodes told to stop, once each of them has gone or the
//       head's deadline passed; then the head stops itself, which ends its daemon
//   (submit_job, name, job YAML) -> job id | error: starts the job's driver process, its
//       output folder RUNS/ID on the head's machine (DaemonOptions::runs_dir), its log
//       RUNS/ID/driver.log
//   (job_report, job id, token, status) -> true, false for a job the head does not run (or
//       runs no more) | error for a token that is not the job's (head.h) or a status no
//       driver sends (an unknown state, sizes over kMaxReportBytes): from the job's
//       driver, at every step (throttled; the report carries the steps since the last
//       one) and state change
//   (job_logs, job id, offset) -> (bytes of the job's log from offset, at most
//       kMaxLogChunkBytes; the next offset; the job's state) | error for an unknown job
//   (cancel_job, job id) -> the job's state | error for an unknown job: asks its driver to
//       stop (SIGTERM): its actors stop everywhere, its output keeps the last checkpoint
//   (resume_job, job id) -> job id | error for a job that runs or is done, or that neither
//       the head nor its runs folder knows: a new driver continues the cancelled or failed
//       job from the last checkpoint in its folder (head.h)
//   (rendezvous, group, rank, size, member) -> every member of the group by rank, once all
//       `size` ranks arrived | error naming the problem (a size that differs from the
//       group's, a rank taken or out of range, a group incomplete at the head's deadline):
//       `member` is the rank's allreduce member (runtime/collective/allreduce_member.h)
using head_actor = caf::typed_actor<
    caf::replies_to<join_atom, NodeInfo, caf::actor>::with<uint64_t, int64_t, int64_t>,
    caf::replies_to<heartbeat_atom, uint64_t, NodeLoad>::with<bool>,
    caf::replies_to<status_atom>::with<ClusterStatus>,
    caf::replies_to<stop_cluster_atom>::with<int32_t>,
    caf::reacts_to<stop_ack_atom>,
    caf::replies_to<submit_job_atom, std::string, std::string>::with<std::string>,
    caf::replies_to<job_report_atom, std::string, std::string, JobStatus>::with<bool>,
    caf::replies_to<job_logs_atom, std::string, int64_t>::with<std::string, int64_t, std::string>,
    caf::replies_to<cancel_job_atom, std::string>::with<std::string>,
    caf::replies_to<resume_job_atom, std::string>::with<std::string>,
    caf::replies_to<rendezvous_atom, std::string, int32_t, int32_t, caf::actor>::with<std::vector<caf::actor>>>;

// Registers the types above with an actor system's config (configure() calls it).
void add_cluster_types(caf::actor_system_config& config);

}  // namespace partita::runtime
