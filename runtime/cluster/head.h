// The head: the actor a `partita daemon --head` publishes, which keeps the cluster's
// membership (cluster_protocol.h) and runs the jobs submitted to it. It hosts no job actors
// itself.
//
// A submitted job is run by a driver in a child process of the head's (the command comes
// from HeadOptions::driver_command): a job that crashes (a bug, memory) takes its driver
// down, not the head and the membership every other job relies on, and the head learns of it
// when it reaps the child. The driver places the job on the live nodes, reports its
// progress to the head (job_report) and writes its output and log under RUNS/ID on the
// head's machine; the head serves the log (job_logs) and cancels a job by SIGTERM to its
// driver. The head checks its drivers every half heartbeat period: one that exited without
// reporting an end is a failed job. Drivers still running when the head stops are killed;
// their actors on the nodes stop when their owner goes (runtime/host.h).
//
// Members are alive from their join until their agent's connection drops or no heartbeat
// came for the heartbeat timeout; then they are dead for good (a node that comes back joins
// again as a new member). The head checks the timeout every half heartbeat period, so a
// silent member is declared dead within timeout + period / 2 of its last heartbeat.
#pragma once

#include <caf/fwd.hpp>

#include <chrono>
#include <functional>
#include <vector>
#include <string>

#include "runtime/cluster/cluster_protocol.h"

namespace partita::runtime {

struct HeadOptions {
  std::chrono::milliseconds heartbeat_period{1000};
  std::chrono::milliseconds heartbeat_timeout{5000};
  // Dead members kept for the status, the most recent ones: a node that keeps coming back
  // must not grow the table without bound.
  size_t dead_members_kept = 64;
  // How long `stop_cluster` waits for the nodes it told to stop to go.
  std::chrono::milliseconds stop_deadline{10000};
  // Jobs: where their output folders go, and the command that runs a job's driver, given
  // its id, its job file and its output folder (empty: the head refuses submissions).
  std::string runs_dir = "partita-runs";
  std::function<std::vector<std::string>(const std::string& id, const std::string& job_file, const std::string& output)>
      driver_command;
  size_t max_running_jobs = 64;    // more submissions are refused
  size_t finished_jobs_kept = 64;  // the most recent ones, for the status
};

// Throws UsageError unless 0 < period < timeout <= 1 hour.
void check_heartbeat_settings(std::chrono::milliseconds period, std::chrono::milliseconds timeout);

// Spawns a head (checks `options` first, see check_heartbeat_settings).
head_actor spawn_head(caf::actor_system& system, const HeadOptions& options);

}  // namespace partita::runtime
