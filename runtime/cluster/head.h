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
// driver, then SIGKILL if it has not exited within HeadOptions::cancel_deadline (the job is
// cancelled either way). The head checks its drivers every half heartbeat period: one that
// exited without reporting an end is a failed job. A cluster stop cancels every job first
// and stops the nodes only once their drivers are gone (a node stopping under a running job
// would look like a lost node and cost it a restart), answers, and stops the head when the
// client acknowledges the answer (or 5 s later). Drivers still running when the head's
// process ends are killed; a driver also ends when its head's process dies (it asks the
// kernel for SIGTERM then: PR_SET_PDEATHSIG), and its actors on the nodes stop when their
// owner goes (runtime/host.h).
//
// A cancelled or failed job resumes (resume_job): a new driver continues it from the last
// checkpoint in its folder, appending to its log; so does a job of an earlier head's life
// whose folder is in the runs folder.
//
// A driver's reports carry a random token the head gave it on its command line: a report
// without it (another process that reaches the head) is refused, and so is one with a state
// or sizes no driver sends.
//
// Rendezvous: the processes of a data-parallel job find each other through the head. Each
// rank sends (rendezvous, group, rank, size, member), its allreduce member's handle
// (runtime/collective/allreduce_member.h); the head holds the answers until all `size`
// ranks of the group arrived, then answers every rank with the members by rank, and
// forgets the group (the same name may then gather a new one). It refuses, with an error
// naming the group and the problem: a name that is empty or over kMaxGroupNameBytes, a
// size outside 1..kMaxGroupSize, a rank outside 0..size-1, a rank that already arrived,
// and a group beyond kMaxOpenGroups waiting at once. A rank whose size differs from the
// group's fails the whole group (every waiting rank gets the error: they cannot all be
// right). A group still incomplete HeadOptions::rendezvous_deadline after its first
// arrival fails too, naming the ranks that never came. A rank whose member is lost before
// the group is complete (its process ended, it gave up waiting) is forgotten: it may
// arrive again, and the others keep waiting. Ranks wire their ring themselves
// (runtime/collective/allreduce_group.h); the head only introduces them.
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

// What a job's driver command is made of: the address the driver reaches the head at (its
// bound address; loopback for a wildcard one), the job's id, its job file and output folder,
// and the token its reports must carry.
struct DriverLaunch {
  std::string head;
  std::string id;
  std::string job_file;
  std::string output;
  std::string token;
  bool resume = false;  // continue from the output folder's last checkpoint
};

struct HeadOptions {
  std::chrono::milliseconds heartbeat_period{1000};
  std::chrono::milliseconds heartbeat_timeout{5000};
  // Dead members kept for the status, the most recent ones: a node that keeps coming back
  // must not grow the table without bound.
  size_t dead_members_kept = 64;
  // How long `stop_cluster` waits for the nodes it told to stop to go.
  std::chrono::milliseconds stop_deadline{10000};
  // Jobs: where their output folders go, and the command that runs a job's driver (empty:
  // the head refuses submissions).
  std::string runs_dir = "partita-runs";
  std::function<std::vector<std::string>(const DriverLaunch&)> driver_command;
  size_t max_running_jobs = 4;     // more submissions are refused (`partita daemon --max-jobs`)
  size_t finished_jobs_kept = 64;  // the most recent ones, for the status
  // How long a cancelled driver (`partita stop JOB`, or a cluster stop) may take to stop its
  // job's actors and exit before the head kills it.
  std::chrono::milliseconds cancel_deadline{15000};
  // How long a rendezvous group may wait for its last rank after its first arrived.
  std::chrono::milliseconds rendezvous_deadline{300000};
  // Called in the head's actor with every report of a driver the head accepts (its id
  // set), steps included (JobStatus::new_steps), before the head drops the steps: what a
  // status page of the head's process records every step from. It must not block.
  std::function<void(const JobStatus&)> on_job_report;
};

// Throws UsageError unless 0 < period < timeout <= 1 hour.
void check_heartbeat_settings(std::chrono::milliseconds period, std::chrono::milliseconds timeout);

// Spawns a head (checks `options` first, see check_heartbeat_settings).
head_actor spawn_head(caf::actor_system& system, const HeadOptions& options);

// Tells a head spawned in this process the address its drivers reach it at, once it is
// published (the port is known only then). Until it is told, the head refuses submissions;
// it takes the first address from its own process only. Throws Error if the head does not
// answer within `timeout`.
void tell_head_its_address(caf::actor_system& system, const head_actor& head, const std::string& address,
                           std::chrono::milliseconds timeout);

}  // namespace partita::runtime
