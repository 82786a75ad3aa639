// `partita bench recovery`: what losing a node costs a job submitted to a head. A head and
// four nodes run as `partita daemon` children on loopback; one long job (2 partitions,
// checkpoints every `checkpoint_every` steps) runs on them while trials kill the node of
// partition 0 mid-job, alternately by SIGKILL (the process dies: its connections drop) and
// SIGSTOP (frozen: its sockets stay open, only the connection heartbeats tell), and start a
// fresh node in its place. Each trial measures, from the signal:
//   - the job's detection: until the job's driver has stopped the job and reports
//     "recovering" (what train.max_restarts counts);
//   - the baseline, in the same trial: until the head's membership declares the node dead
//     (its agent's connection drops, or no heartbeat for the heartbeat timeout);
//   - recovery: until the job reports its first step after resuming;
//   - the steps re-done: those trained after the checkpoint it resumed from (the driver's
//     count, in its restart message).
// Prints each trial and, per signal, the median and the max of each.
#pragma once

#include <cstdint>
#include <string>

namespace partita::bench {

struct RecoveryBenchOptions {
  int trials = 10;               // per signal, interleaved
  int64_t num_nodes = 20000;     // SBM nodes
  int64_t checkpoint_every = 10;  // train.checkpoint_every_steps
  std::string work_dir;          // keeps the partitions; default: a temporary folder
  uint64_t seed = 1;
};

void run_recovery_bench(const RecoveryBenchOptions& options);

}  // namespace partita::bench
