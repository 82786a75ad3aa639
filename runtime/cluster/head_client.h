// Talking to the head from another process: what a joining node, `partita status` and
// `partita stop` do. Every call has a deadline; every failure is an Error naming the head's
// address.
#pragma once

#include <caf/fwd.hpp>

#include <caf/actor.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "runtime/address.h"
#include "runtime/cluster/cluster_protocol.h"

namespace partita::runtime {

// Connects to the head at `head` and returns its handle. Throws Error naming the address
// when nothing answers within `timeout`, or when what answers there is not a Partita head
// (a node daemon: "start it with --head"; another program or version).
head_actor connect_head(caf::actor_system& system, const Endpoint& head, std::chrono::milliseconds timeout);

// The cluster's status; throws Error naming `where` if the head does not answer in time.
ClusterStatus cluster_status(caf::actor_system& system, const head_actor& head, const std::string& where,
                             std::chrono::milliseconds timeout);

// Stops the cluster: the head cancels its jobs and waits for their drivers (head.h), tells
// every live node to stop, waits for them (its own deadlines) and answers; this
// acknowledges the answer (stop_ack_atom), on which the head stops itself, and waits (at
// most `timeout`) until the head is gone too.
// Returns the number of nodes told to stop. Throws Error naming `where` on no answer in time.
int stop_cluster(caf::actor_system& system, const head_actor& head, const std::string& where,
                 std::chrono::milliseconds timeout);

// Submits a job (its YAML, `name` for its id) and returns the id the head gave it. Throws
// Error naming `where` with the head's reason when it refuses, or on no answer in time.
std::string submit_job(caf::actor_system& system, const head_actor& head, const std::string& where,
                       const std::string& name, const std::string& yaml, std::chrono::milliseconds timeout);

// A piece of a job's log and its state then.
struct JobLogChunk {
  std::string bytes;
  int64_t next_offset = 0;
  std::string state;
};

// The job's log from `offset` (at most kMaxLogChunkBytes). Throws Error naming `where` for
// an unknown job or no answer in time.
JobLogChunk job_logs(caf::actor_system& system, const head_actor& head, const std::string& where, const std::string& id,
                     int64_t offset, std::chrono::milliseconds timeout);

// A driver's report on its job (cluster_protocol.h: job_report), with the token the head gave
// it. Returns false when the head runs the job no more. Throws Error naming `where` when the
// head refuses it (a wrong token, a malformed status) or does not answer in time.
bool report_job(caf::actor_system& system, const head_actor& head, const std::string& where, const std::string& id,
                const std::string& token, const JobStatus& status, std::chrono::milliseconds timeout);

// Asks the head to cancel a job; returns its state then. Throws as job_logs.
std::string cancel_job(caf::actor_system& system, const head_actor& head, const std::string& where,
                       const std::string& id, std::chrono::milliseconds timeout);

// Joins the rendezvous of `group` (head.h) as `rank` of `size`, with the rank's allreduce
// member, and returns every member by rank once all ranks arrived. Throws Error naming
// `where` with the head's reason when it refuses (a size that differs from the other
// ranks', a rank taken or out of range), when the group fails, or when it is not complete
// within `timeout`.
std::vector<caf::actor> rendezvous(caf::actor_system& system, const head_actor& head, const std::string& where,
                                   const std::string& group, int rank, int size, const caf::actor& member,
                                   std::chrono::milliseconds timeout);

// Asks the head to resume a cancelled or failed job from its last checkpoint (head.h);
// returns its id. Throws Error naming `where` with the head's reason when it refuses (a job
// that runs or is done, an unknown one), or on no answer in time.
std::string resume_job(caf::actor_system& system, const head_actor& head, const std::string& where,
                       const std::string& id, std::chrono::milliseconds timeout);

}  // namespace partita::runtime
