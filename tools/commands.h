// The `partita` subcommands. Each add_*_command registers its flags on `app` and a
// callback that calls into the layers below; errors propagate as partita::Error.
#pragma once

#include <CLI/CLI.hpp>

#include "runtime/actor_system.h"
#include "runtime/host.h"
#include "tools/cli_checks.h"

namespace partita {
struct PythonJob;  // training/python_job.h
}

namespace partita::cli {

// Options every subcommand shares.
struct GlobalOptions {
  std::string log_level = "info";
  int threads = 0;  // 0 = all cores
  std::string tls_dir;    // --tls-dir: the TLS credentials folder (runtime/tls/credentials.h)
  bool insecure = false;  // --insecure: plaintext, loopback only
};

// Installs the process's TLS credentials for a command that opens or connects to ports:
// none with --insecure (and a warning), else the folder of --tls-dir, $PARTITA_TLS_DIR or
// ~/.partita/tls. A command whose ports stay inside the process (`run` without --daemons)
// passes `in_process`: it uses a CA of its own memory, so it needs no set-up.
void install_credentials(const GlobalOptions& global, bool in_process = false);

// The commands of this binary, registered on `app`: all of them in partita-full
// (tools/all_commands.cpp), those that need no libtorch in partita (tools/light_commands.cpp).
void add_commands(CLI::App& app, const GlobalOptions& global);

// Where the commands this binary lacks run, and its help: partita-full's path for partita
// (beside it in a build tree, in ../libexec/partita/ once installed); empty for partita-full,
// which has them all.
std::string binary_for_other_commands();

void add_generate_command(CLI::App& app, const GlobalOptions& global);
void add_partition_command(CLI::App& app, const GlobalOptions& global);
void add_inspect_command(CLI::App& app, const GlobalOptions& global);
void add_bench_command(CLI::App& app, const GlobalOptions& global);
void add_daemon_command(CLI::App& app, const GlobalOptions& global);
void add_run_command(CLI::App& app, const GlobalOptions& global);
void add_submit_command(CLI::App& app, const GlobalOptions& global);
void add_plot_command(CLI::App& app, const GlobalOptions& global);
void add_export_command(CLI::App& app, const GlobalOptions& global);
void add_predict_command(CLI::App& app, const GlobalOptions& global);
void add_status_command(CLI::App& app, const GlobalOptions& global);
void add_stop_command(CLI::App& app, const GlobalOptions& global);
void add_down_command(CLI::App& app, const GlobalOptions& global);
void add_job_command(CLI::App& app, const GlobalOptions& global);
void add_start_command(CLI::App& app, const GlobalOptions& global);
void add_logs_command(CLI::App& app, const GlobalOptions& global);
void add_job_driver_command(CLI::App& app, const GlobalOptions& global);
void add_cluster_command(CLI::App& app, const GlobalOptions& global);
void add_datasets_command(CLI::App& app, const GlobalOptions& global);

// `partita job submit JOB`: submits the job to the head at `address` (head_address.h: ""
// for the default), then (unless `detach`) prints its log until it ends; Ctrl-C detaches.
// With `resume`, continues the latest cancelled or failed job of the same name on the head
// instead. Throws Error when the job fails.
void submit_to_head(const std::string& address, const std::string& job_file, const std::string& output, bool detach,
                    bool resume, const GlobalOptions& global);

// `partita submit -- python3 SCRIPT ARGS`: checks the Python job here (its script inside
// its working folder, its world size within the live nodes' trainer slots), submits it to
// the head at `address`, then as submit_to_head. Throws UsageError naming the problem.
void submit_python_to_head(const std::string& address, const PythonJob& job, bool detach, const GlobalOptions& global);

// `partita job list` (`id` empty) and `partita job status JOB`: the head's submitted jobs
// as a table, one job's details, or JSON (runtime/cluster/status_json.h). Throws Error for
// an unknown job.
void print_head_jobs(const std::string& address, const std::string& id, bool json, const GlobalOptions& global);

// `partita job resume JOB`: the head continues the cancelled or failed job from its last
// checkpoint; then as submit_to_head (the log from the resume on).
void resume_job_on_head(const std::string& address, const std::string& id, bool detach, const GlobalOptions& global);

// `partita job logs JOB`: the job's log; with `follow`, until it ends (Error unless done).
void print_job_logs(const std::string& address, const std::string& id, bool follow, const GlobalOptions& global);

// `partita job stop JOB`: cancels the job and waits (at most `timeout_s`) until its driver
// reports its end; prints that end.
void stop_job_on_head(const std::string& address, const std::string& id, int timeout_s, const GlobalOptions& global);

// The actor system of a command that talks to a head (status, stop, submit, logs, a job's
// driver): two threads, networking on.
runtime::ActorSystemOptions head_client_options();

// Where a head listens unless told otherwise, and where the commands look for it when
// nothing else says (tools/head_address.h).
inline constexpr const char* kDefaultHeadAddress = "127.0.0.1:7070";

}  // namespace partita::cli
