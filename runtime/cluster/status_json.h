// The cluster's status as JSON: what `partita status --json` prints and what a dashboard
// serves. One object:
//   {"head": "HOST:PORT", "version": "...", "heartbeat_ms": N, "heartbeat_timeout_ms": N,
//    "nodes": [{"member": N, "name": "...", "address": "HOST:PORT", "version": "...",
//               "state": "alive" | "dead", "lost": "why, when dead", "cores": N,
//               "memory_bytes": N, "memory_available_bytes": N, "disk_free_bytes": N,
//               "cached_units": ["KEY", ...] (its staging cache), "ms_since_heartbeat": N, "actors": {"TYPE": count, ...},
//               "jobs": ["ID", ...]}, ...],   (the jobs running there)
//    "jobs": [{"id": "...", "state": "...", "nodes": ["NAME", ...], "actors": N,
//              "submitted": true|false, "message": "...", "output": "DIR",
//              "partitions": ["HOST:PORT", ...], "epoch": N, "epochs": N, "step": N,
//              "steps": N, "steps_per_second": X, "loss": X, "accuracy": X,
//              "restarts": N}, ...]}
//   (a job's fields are those of JobStatus, cluster_protocol.h; a job known only by its
//   actors has state "running", submitted false and zero progress)
#pragma once

#include <string>
#include <vector>

#include "runtime/cluster/cluster_protocol.h"

namespace partita::runtime {

// The ids of the jobs running on node `n` (none on a dead one): those whose actors its last
// heartbeat listed, and the unfinished ones placed there whose actors it has not reported
// yet. What `status` prints beside each node, as a table and as JSON.
std::vector<std::string> jobs_on_node(const ClusterStatus& status, const NodeStatus& n);

// `head` is the address the status was asked at.
std::string status_json(const ClusterStatus& status, const std::string& head);

// Jobs alone, as the array "jobs" above: what `partita job list --json` prints.
std::string jobs_json(const std::vector<JobStatus>& jobs);
// One job, as one object of that array: what `partita job status JOB --json` prints.
std::string job_json(const JobStatus& job);

}  // namespace partita::runtime
