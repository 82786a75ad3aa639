// A job on a cluster's live nodes, placed by resources and recovered from lost nodes: what
// the driver of a job submitted to a head runs (`partita submit JOB --address HEAD`).
//
// An attempt asks for the live nodes, places the partitions (training/placement.h),
// connects to the nodes it uses, stages on each node the parts it hosts (below) and runs
// the job (run_job). When a node is lost the driver
// notices it (its connection drops at once for a killed process, within CAF's connection
// heartbeat timeout for a frozen one: about 6 s, see runtime/actor_system.h), stops the
// rest of the attempt (run_job stops its actors however it ends), and, up to
// `train.max_restarts` times, starts a new attempt: the lost node is left out (until it
// comes back as a new member of the head), its partitions go to the surviving nodes or a
// node that joined meanwhile, and the job resumes from its last checkpoint
// (`train.checkpoint_every_steps` bounds the steps re-done). Batches are partition- and
// placement-invariant and the checkpoint holds the epoch's sums so far, so a recovered job
// ends with the weights and metrics of an uninterrupted one.
//
// Data staging: a node needs no copy of the partition folder at the driver's path. Each
// attempt serves every node it uses the folder's top files (META.json, partition_book.bin)
// and the part<i>/ folders placed there (every part, for a job whose actors read all of
// them: relational models, temporal sampling) over the bulk transport; the node's cache
// (runtime/staging/stage_cache.h) verifies every file, keeps them by content checksum and
// copies nothing it has already, so a job whose data is cached starts without copying.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "runtime/actor_system.h"
#include "runtime/staging/stage_cache.h"
#include "training/job_config.h"
#include "training/job_driver.h"
#include "training/placement.h"

namespace partita {

struct ClusterJobOptions {
  RunOptions run;  // resume/overwrite of the first attempt, progress, cancel (placement: set here)
  runtime::ActorSystemOptions system;  // of each attempt's runtime (networking is turned on)
  // The cluster's live nodes now (the head's members); called before every attempt. Throws
  // Error when it cannot tell (the head is gone): the job fails with it.
  std::function<std::vector<NodeOffer>()> live_nodes;
  std::chrono::milliseconds connect_timeout{10000};
  // After a loss, how long to wait for nodes enough to place the job again (a node that
  // joins meanwhile counts), asking every `poll`.
  std::chrono::milliseconds placement_wait{30000};
  std::chrono::milliseconds poll{500};
  // Told each attempt's placement: the address of each partition's node, and the bytes of
  // each partition (what it takes there: the head reserves them, see runtime/cluster/head.h).
  std::function<void(const std::vector<std::string>&, const std::vector<int64_t>&)> on_placed;
  // Data staging (runtime/staging/): an address of this machine that the nodes reach (the
  // head's host), where each attempt serves every node it places partitions on the parts
  // it hosts; the nodes keep them in their cache and open the job's data there. Empty: the
  // nodes read the partition folder at the driver's path (a folder they share). Jobs whose
  // actors read every part (knowledge-graph trainers, relational and temporal samplers) get
  // every part on each node they use.
  std::string staging_host;
  // Bounds one node's staging (its every wait is bounded by the node's cache deadline).
  std::chrono::milliseconds staging_deadline{600000};
  // Told what each node's staging did: the node's address and the stager's outcome.
  std::function<void(const std::string&, const runtime::StageOutcome&)> on_staged;
  // Told each restart: its number (1, 2, ...) and what happened: "lost NODE (ADDRESS); restart
  // N of at most M: resuming after epoch E [and step S of the next], K step(s) to re-do".
  std::function<void(int, const std::string&)> on_restart;
};

// The job as a head's driver reads it (`partita submit --address`): the job as run
// (job_to_yaml), with its data section as the user wrote it, paths made absolute. A job that
// generates its graph or partitions a dataset thus has its data prepared by its driver, in
// its output where the driver runs, rather than pointing at a partition folder on the
// submitting machine. A dataset's (or a partition folder's) absolute path must then exist on
// the head's machine: the same machine, or a shared file system; datasets themselves are not
// staged to the head. `job` is load_job(job_file).
std::string submitted_job_yaml(const std::string& job_file, const JobConfig& job);

// Runs the job as above and returns the last attempt's report (its epochs: those after the
// checkpoint it resumed from). Throws PlacementError when the job cannot be placed (first
// attempt: at once; after a loss: once placement_wait passed), JobCancelled when cancelled,
// Error naming the lost node and the restarts used when none is left, and the attempt's
// Error for any other failure (not retried: it would fail again).
JobReport run_cluster_job(const JobConfig& job, const ClusterJobOptions& options);

}  // namespace partita
