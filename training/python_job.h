// A Python job: the user's script run as a job on a cluster's nodes (`partita submit
// --address HEAD -- python3 train.py ARGS`), what the driver of such a job does. YAML jobs
// are training/cluster_job.h's; this one runs the user's own training loop instead of
// Partita's trainers, with the same staging, stop and recovery.
//
// The submission (PythonJob, sent to the head as JSON: python_job_json) names the command,
// the working folder on the head's machine, the world size and the slots each node offers.
// An attempt takes the live nodes, places rank r on node r mod N (so each node runs at most
// slots_per_node ranks), connects to them, stages the working folder on each
// (runtime/staging/: checksummed, cached; its files and those of its sub-folders one level
// down, hidden entries and __pycache__ left out) and spawns one launcher per rank
// (runtime/launcher/launcher.h) with the rank's environment:
//
//   PARTITA_RANK, PARTITA_WORLD_SIZE   the rank and the world size (partita.init_process_group)
//   PARTITA_ADDRESS                    the head (partita.init() connects to it)
//   PARTITA_GROUP                      the allreduce group's name: the job's id and attempt
//   PARTITA_JOB, PARTITA_RESTART       the job's id; the restarts so far (0 at first)
//   PARTITA_CHECKPOINT_DIR             the job's checkpoint folder (partita.checkpoint_dir())
//   PARTITA_NODE                       the node's name
//
// Every rank's output goes to `on_output`, line by line. The job is done when every rank
// exited with status 0. A rank that exits otherwise fails the job (ScriptFailed: its rank,
// its status and the tail of its stderr) and stops the others, unless a node was lost
// (within kLossGrace: a rank whose peer died fails first): then every rank is stopped, the
// lost node is left out until it joins again as a new member, and, up to max_restarts
// times, a new attempt runs the world again on the surviving nodes' slots, same world size;
// when the slots do not allow it, the job fails saying so once placement_wait passed. The
// script resumes by reading what it saved in PARTITA_CHECKPOINT_DIR, a folder of the job's
// output on the head's machine that every attempt gets: the nodes must see it at that path
// (the same machine, or a shared file system), as they see a YAML job's dataset.
//
// Cancel (RunOptions-like `cancel`): every rank is stopped (SIGTERM to its process group,
// SIGKILL after stop_grace) before JobCancelled is thrown.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/actor_system.h"
#include "training/job_types.h"
#include "training/placement.h"

namespace partita {

struct PythonJob {
  std::vector<std::string> command;  // [PYTHON, SCRIPT, ARGS...] (SCRIPT relative to workdir) or [PYTHON, -m, MODULE, ARGS...]
  std::string workdir;               // absolute, on the head's machine
  int ranks = 0;                     // the world size; 0: every slot of the first attempt
  int slots_per_node = 1;
  int max_restarts = 3;
};

inline constexpr int kMaxPythonRanks = 1024;
inline constexpr int kMaxSlotsPerNode = 256;

// The job as JSON (what the head stores as the job's file) and back. python_job_from_json
// throws UsageError naming the field for anything else (it reads what came over the wire).
std::string python_job_json(const PythonJob& job);
PythonJob python_job_from_json(const std::string& text);
// Whether `text` is a Python job's JSON (an object with "python"), not a YAML job.
bool is_python_job(const std::string& text);

// Checks the job where it is submitted and where its driver runs: the working folder
// exists, the command is an interpreter and a script inside it (no path leaving it) or `-m`
// and a module whose file is inside it, within the depth that is staged, the counts are in
// range. Throws UsageError naming the problem. Returns the job with the
// script relative to the working folder.
PythonJob checked_python_job(PythonJob job);

// A rank exited with a status other than 0.
class ScriptFailed : public Error {
 public:
  ScriptFailed(const std::string& what, int code) : Error(what), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

struct PythonJobOptions {
  std::string id;             // the job's id
  std::string head;           // HOST:PORT the ranks reach the head at
  std::string checkpoint_dir; // absolute; created if missing
  runtime::ActorSystemOptions system;
  std::function<std::vector<NodeOffer>()> live_nodes;  // as ClusterJobOptions'
  std::string staging_host;   // where the nodes reach this machine
  std::chrono::milliseconds connect_timeout{10000};
  std::chrono::milliseconds staging_deadline{600000};
  std::chrono::milliseconds placement_wait{30000};
  std::chrono::milliseconds poll{500};
  std::chrono::milliseconds stop_grace{5000};
  std::shared_ptr<CancelToken> cancel;
  // Rank `rank` printed `lines` (each ending in '\n').
  std::function<void(int rank, const std::string& lines)> on_output;
  // An attempt's ranks run: the node name of each rank, and each rank's pid there.
  std::function<void(const std::vector<std::string>&, const std::vector<int64_t>&)> on_started;
  std::function<void(int restarts, const std::string& why)> on_restart;
  // The owner key of each attempt's launchers (runtime/host.h), for the head's status.
  std::function<void(const std::string&)> on_owner;
};

// How long a failed rank waits for a node loss to be reported before it counts as the
// script's failure.
inline constexpr std::chrono::milliseconds kLossGrace{3000};

// Runs the job as above; returns when every rank exited with 0. Throws ScriptFailed,
// JobCancelled, PlacementError (the world does not fit the slots), or Error (a node lost
// with no restart left, a staging or a launch that failed).
void run_python_job(const PythonJob& job, const PythonJobOptions& options);

}  // namespace partita
