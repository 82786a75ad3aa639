// `partita bench chaos`: does a long job submitted to a head survive random faults, and end
// with the weights it would have had without them? A head and 3 nodes run on 3 separate
// hosts (network namespaces, netns/netns_cluster.h: the head and node 0 on host 0, node i
// on host i); one job (3 partitions, up to 2 per node, checkpoints every
// `checkpoint_every` steps) runs on them for about `minutes`, while every `interval`
// seconds (the fault lands at a random point of its interval, seeded) one fault, drawn at
// random (each kind once in every 3 faults), hits the cluster:
//   kill -9 node   SIGKILL of a random node of the job's; once the job trains again, a
//                  fresh node takes its place on its host (as `bench recovery` does). The
//                  job restarts from its last checkpoint (train.max_restarts).
//   SIGSTOP node   a random node of the job's frozen for 10-20 s (longer than the
//                  heartbeat timeout: the job restarts without it), then SIGCONT: it
//                  joins the head again as a new member.
//   SIGSTOP head   the head frozen for 2-3 s, then SIGCONT: less than the connection
//                  heartbeat timeout (5 s), which a job survives without a restart (its
//                  actors do not need the head). What a job does NOT survive: a head killed
//                  or frozen for longer (its driver is the head's child and stops the job;
//                  a new head does not resume it: docs/cluster.md, "A lost head").
// The same job runs undisturbed at the same time on a second head and 3 nodes on the same
// hosts; the job's length in epochs comes from a short calibration job on both.
//
// Every fault must be named in the job's log (driver.log: "lost NODE (ADDRESS); restart
// ..." for a node, "the head at ... has not answered" for the head): its detection time is
// that line's time. Every wait has a bound; a fault not recovered from within it ends the
// bench with an Error naming what it waited for. Prints a table (fault, target, time since
// the job started, detected after, recovered after, steps re-done) and a summary: the
// faults, whether the job's final parameter hash equals the undisturbed job's, and hangs
// (always 0 when it returns: a hang is an Error).
// Throws Error when a fault is not in the log or the hashes differ.
//
// Needs root, iproute2 (the hosts); without them, throws Error saying why. Every child
// process and namespace is gone when this returns or throws, also on SIGINT or SIGTERM.
#pragma once

#include <cstdint>
#include <string>

namespace partita::bench {

struct ChaosBenchOptions {
  double minutes = 30;            // the undisturbed job's length (calibrated)
  double interval = 150;          // seconds between faults
  int64_t num_nodes = 20000;      // SBM nodes
  int64_t checkpoint_every = 10;  // train.checkpoint_every_steps
  std::string work_dir;           // keeps the partitions; default: a temporary folder
  uint64_t seed = 1;              // graph, job and faults
};

void run_chaos_bench(const ChaosBenchOptions& options);

}  // namespace partita::bench
