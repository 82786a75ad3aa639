// A Slurm allocation as `partita start --slurm` sees it: which task this process is, how many
// tasks and nodes the step has, the step's hosts, and where the head of the allocation's
// cluster listens. Slurm describes all of it in the SLURM_* environment of every task that
// `srun` starts; this unit reads it (from a map, so that tests need no Slurm), expands
// Slurm's compressed host lists (`node[01-03,7]`) and derives the head's port.
//
// Why a port derived from the job's id: every task must know where the head listens before
// any of them has talked to another, and the job's id is the one number they all share. Two
// allocations that share a node (Slurm's node sharing) get different ports unless their ids
// differ by a multiple of kSlurmPortSpan. The range [kSlurmPortBase, kSlurmPortBase +
// kSlurmPortSpan) stays below Linux's ephemeral ports (32768 and up), where the kernel's
// choice for outgoing connections would collide with it. `--slurm-port` overrides it.
//
// Which variables (Slurm's own names; a step's win over its job's, which differ when the
// step uses part of the allocation):
//   SLURM_JOB_ID (or SLURM_JOBID)   the job's id, a decimal number
//   SLURM_PROCID                    this task's rank in the step, 0..tasks-1
//   SLURM_STEP_NUM_TASKS, SLURM_NTASKS (or SLURM_NPROCS)        the step's tasks
//   SLURM_STEP_NUM_NODES, SLURM_NNODES (or SLURM_JOB_NUM_NODES) the step's nodes
//   SLURM_STEP_NODELIST, SLURM_JOB_NODELIST (or SLURM_NODELIST) the step's hosts
//   SLURMD_NODENAME                 the node this task runs on (optional)
//   SLURM_SUBMIT_DIR                where sbatch or srun was run (optional)
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace partita::runtime {

inline constexpr uint16_t kSlurmPortBase = 20000;
inline constexpr uint16_t kSlurmPortSpan = 10000;
// The most hosts a host list may expand to: a typo (`node[1-99999999]`) is an error, not an
// allocation that exhausts memory.
inline constexpr size_t kMaxSlurmHosts = 65536;

struct SlurmAllocation {
  std::string job_id;              // decimal
  int proc_id = 0;                 // this task, 0..tasks-1; task 0 is the head
  int tasks = 0;                   // >= 1
  int nodes = 0;                   // >= 1, the number of distinct hosts
  std::vector<std::string> hosts;  // the step's hosts in Slurm's order; hosts.size() == nodes
  std::string this_node;           // SLURMD_NODENAME; "" when not set
  std::string submit_dir;          // SLURM_SUBMIT_DIR; "" when not set

  bool head() const { return proc_id == 0; }
  // The head's host: the step's first, where Slurm places task 0.
  const std::string& head_host() const { return hosts.front(); }
};

// The hosts of a Slurm host list, in its order: comma-separated entries, each a name whose
// bracketed parts are ranges and numbers (`node[01-03,7]` is node01, node02, node03, node7:
// a range keeps the width of its first bound's digits), several brackets in one name
// multiplying (`r[1-2]n[1-2]` is r1n1, r1n2, r2n1, r2n2). Throws Error naming the list
// and what is wrong with it: an unbalanced bracket, an empty entry or range, a bound that is
// not a number, a range whose end is below its start, more than kMaxSlurmHosts hosts.
std::vector<std::string> expand_slurm_hostlist(const std::string& list);

// The allocation in `env` (variable -> value). Throws Error naming every variable that is
// missing and any that is malformed (not a number, PROCID outside 0..tasks-1, a node count
// other than the host list's).
SlurmAllocation parse_slurm_allocation(const std::map<std::string, std::string>& env);

// The SLURM_* variables of this process's environment, for parse_slurm_allocation.
std::map<std::string, std::string> slurm_environment();

// The head's port for job `job_id` (decimal): kSlurmPortBase + job_id mod kSlurmPortSpan.
uint16_t slurm_head_port(const std::string& job_id);

}  // namespace partita::runtime
