// partita run JOB.yaml: the whole job in this process (the embedded default).
// partita submit JOB.yaml --daemons H1:P1,H2:P2: the same job on node daemons; partition i
// and its trainers go to daemon i mod D, the driver stays here and prints the progress.
// partita submit JOB.yaml --address HEAD (or partita job submit JOB.yaml): the job goes to a
// cluster's head, whose driver runs it (tools/cluster_job_commands.cpp); partita job
// list|status|logs|stop|resume: the head's jobs.
// partita submit --address HEAD -- python3 SCRIPT [ARGS] (or partita job submit -- ...): a
// Python job, the user's script on the cluster's nodes (training/python_job.h).
#include <filesystem>
#include <iostream>

#include "actors/protocol.h"
#include "base/error.h"
#include "dashboard/status_board.h"
#include "dashboard/status_server.h"
#include "runtime/launcher/launcher.h"
#include "runtime/runtime.h"
#include "tools/commands.h"
#include "tools/head_address.h"
#include "training/job_config.h"
#include "training/job_driver.h"
#include "training/job_actor_types.h"
#include "training/python_job.h"

namespace partita::cli {

namespace {

namespace fs = std::filesystem;

struct JobOptions {
  std::string job_file;
  std::string output;  // overrides the job's
  std::vector<std::string> daemons;
  std::string address;  // of a head
  bool detach = false;
  bool resume = false;
  bool overwrite = false;
  int connect_timeout_s = 10;
  std::string dashboard;  // [HOST:]PORT of the status page; empty: none
  int64_t seed = -1;      // overrides train.seed when >= 0
  // A Python job (`submit -- python3 SCRIPT ARGS`): the words after the first positional.
  std::vector<std::string> command;
  PythonJob python;
};

// The runtime's nodes for the status page; `lost` (an Error naming a lost node) marks it.
std::vector<dashboard::NodeStatus> node_states(const runtime::Runtime& rt, const JobConfig& job, const std::string& lost) {
  std::vector<dashboard::NodeStatus> nodes;
  for (int n = 0; n < rt.num_nodes(); ++n) {
    std::string parts;
    for (int p = 0; p < job.num_partitions; ++p) {
      if (JobConfig::node_of_partition(p, rt.num_nodes()) == n) parts += (parts.empty() ? "" : ", ") + std::to_string(p);
    }
    const std::string name = rt.node_name(n);
    const bool is_lost = !lost.empty() && lost.find(name) != std::string::npos;
    nodes.push_back({name, is_lost ? "lost" : "up", is_lost ? lost : "partitions " + parts});
  }
  return nodes;
}

void run(const JobOptions& o, const GlobalOptions& global) {
  JobConfig job = load_job(o.job_file);
  if (!o.output.empty()) job.output = std::filesystem::absolute(o.output).lexically_normal().string();
  // train.seed, and with it every draw the job makes from it (a split that follows it too:
  // training/job_config.h, data.split_seed).
  if (o.seed >= 0) job.seed = static_cast<uint64_t>(o.seed);
  if (o.resume && o.overwrite) throw UsageError("--resume and --overwrite contradict each other");

  // The status page comes first, so a port in use fails before any work.
  std::shared_ptr<dashboard::StatusBoard> board;
  std::unique_ptr<dashboard::StatusServer> server;
  const std::string job_id = dashboard::make_job_id(std::filesystem::path(job.output).filename().string());
  if (!o.dashboard.empty()) {
    board = std::make_shared<dashboard::StatusBoard>();
    server = std::make_unique<dashboard::StatusServer>(board, dashboard::parse_dashboard_address(o.dashboard));
    board->add_job(job_id, o.job_file + " -> " + job.output, job.epochs);
    std::cout << "status page on " << server->url() << std::endl;  // a line for scripts, as the daemon's
  }

  install_credentials(global, o.daemons.empty());
  runtime::ActorSystemOptions system;
  system.threads = global.threads;
  add_protocol_types(system);
  std::unique_ptr<runtime::Runtime> rt =
      o.daemons.empty()
          ? runtime::Runtime::in_process(system, job_actor_types())
          : runtime::Runtime::connect(system, o.daemons, std::chrono::seconds(o.connect_timeout_s));

  RunOptions options;
  options.resume = o.resume;
  options.overwrite = o.overwrite;
  options.threads = global.threads;
  if (board) {
    board->set_nodes(node_states(*rt, job, ""));
    options.on_progress = [board, job_id](const JobProgress& progress) { board->publish(job_id, progress); };
  }
  JobReport report;
  try {
    prepare_data(job, global.threads);
    report = run_job(*rt, job, options);
    if (board) board->set_state(job_id, dashboard::JobState::done);
  } catch (const JobCancelled& e) {
    if (board) board->set_state(job_id, dashboard::JobState::cancelled, e.what());
    throw;
  } catch (const std::exception& e) {
    if (board) {
      board->set_state(job_id, dashboard::JobState::failed, e.what());
      std::optional<Error> lost = rt->lost_node();
      board->set_nodes(node_states(*rt, job, lost ? lost->what() : ""));
    }
    throw;
  }
  if (!report.epochs.empty()) {
    const EpochMetrics& last = report.epochs.back();
    if (report.selected_epoch > 0) {
      std::cout << "selected epoch " << report.selected_epoch << " (" << report.select << "): val " << report.metric
                << " " << (report.selected_val ? std::to_string(*report.selected_val) : std::string("-")) << ", test "
                << report.metric << " " << (report.selected_test ? std::to_string(*report.selected_test) : std::string("-"))
                << (report.early_stopped ? " (stopped early)" : "") << "\n";
    }
    if (job.link_prediction()) {
      std::cout << "epoch " << last.epoch << ": train loss " << last.train_loss;
      for (const char* metric : {"test.mrr", "test.hits@1", "test.hits@3", "test.hits@10", "test.raw_mrr"}) {
        for (const auto& [name, value] : last.ranking) {
          if (name == metric) std::cout << ", " << name << " " << value;
        }
      }
      std::cout << "\nresults in " << job.output << "\n";
    } else {
      std::cout << "epoch " << last.epoch << ": train loss " << last.train_loss << ", val accuracy "
                << last.val_accuracy << ", test accuracy " << last.test_accuracy << "\n"
                << "results in " << job.output << "\n";
    }
  } else {
    std::cout << "nothing to do: the checkpoint in " << job.output << " already covers every epoch\n";
  }
}

void add_job_options(CLI::App* cmd, JobOptions& o, bool job_required = true) {
  CLI::Option* job = cmd->add_option("job", o.job_file, "the job file (YAML, see examples/)");
  if (job_required) job->required();
  cmd->add_option("-o,--output", o.output, "folder for checkpoints and metrics (overrides the job's output)");
  cmd->add_flag("--resume", o.resume, "continue from the output folder's last checkpoint");
  cmd->add_flag("--overwrite", o.overwrite, "start afresh even if the output folder holds a run");
  cmd->add_option("--dashboard", o.dashboard,
                  "serve a status page with live curves on [HOST:]PORT (host 127.0.0.1 unless given; port 0: a free one)");
  cmd->add_option("--seed", o.seed, "train.seed for this run (the job file's otherwise)")->check(CLI::NonNegativeNumber);
}

// The flags of a Python job (`submit -- python3 SCRIPT ARGS`), on submit and job submit.
void add_python_options(CLI::App* cmd, JobOptions& o) {
  cmd->add_option("command", o.command, "a Python job: after --, PYTHON SCRIPT [ARGS...] or PYTHON -m MODULE [ARGS...]");
  cmd->add_option("--ranks", o.python.ranks, "a Python job's world size (0: one rank per trainer slot)")
      ->check(cli::in_range(0, kMaxPythonRanks))
      ->capture_default_str();
  cmd->add_option("--slots-per-node", o.python.slots_per_node, "a Python job's trainer slots on each node")
      ->check(cli::in_range(1, kMaxSlotsPerNode))
      ->capture_default_str();
  cmd->add_option("--max-restarts", o.python.max_restarts, "a Python job's restarts after lost nodes")
      ->check(cli::in_range(0, 100))
      ->capture_default_str();
  cmd->add_option("--workdir", o.python.workdir,
                  "a Python job's working folder, staged to the nodes (default: this command's)");
}

// A Python job, to the head (tools/commands.h: submit_python_to_head).
void submit_python(const JobOptions& o, const GlobalOptions& global) {
  if (!o.daemons.empty()) throw UsageError("a Python job runs on a cluster's head (--address), not on --daemons");
  if (o.resume || o.overwrite || !o.output.empty() || !o.dashboard.empty() || o.seed >= 0) {
    throw UsageError("--resume, --overwrite, --output, --dashboard and --seed are for YAML jobs; a Python job's script "
                     "resumes from partita.checkpoint_dir()");
  }
  PythonJob job = o.python;
  job.command.push_back(o.job_file);
  job.command.insert(job.command.end(), o.command.begin(), o.command.end());
  if (job.workdir.empty()) job.workdir = fs::current_path().string();
  submit_python_to_head(o.address, job, o.detach, global);
}

// `submit`: on daemons this process drives (--daemons), or on a cluster's head (--address,
// $PARTITA_ADDRESS or ~/.partita/head_address: tools/head_address.h).
void submit(const JobOptions& o, const GlobalOptions& global) {
  if (o.job_file.empty()) throw UsageError("submit needs a job file, or a Python job: submit -- python3 SCRIPT [ARGS...]");
  if (!o.command.empty() || runtime::is_python_interpreter_name(fs::path(o.job_file).filename().string())) {
    return submit_python(o, global);
  }
  const bool to_head = !o.address.empty() || (o.daemons.empty() && head_address_given(""));
  if (to_head == !o.daemons.empty() || (!o.address.empty() && !o.daemons.empty())) {
    throw UsageError("submit needs either --address HEAD (a cluster's head runs the job; or $PARTITA_ADDRESS) or "
                     "--daemons H1:P1,... (this process drives daemons), not " +
                     std::string(o.daemons.empty() ? "neither" : "both"));
  }
  if (!to_head) {
    if (o.detach) throw UsageError("--detach needs --address: with --daemons the job lives in this process");
    run(o, global);
    return;
  }
  if (o.overwrite || !o.dashboard.empty()) {
    throw UsageError("--overwrite and --dashboard are for --daemons; a submitted job gets a fresh folder on the head, "
                     "whose status page (start --head --dashboard) shows it");
  }
  if (o.seed >= 0) {
    throw UsageError("--seed is for run and --daemons; a job submitted to a head runs its file as written (set "
                     "train.seed there)");
  }
  submit_to_head(o.address, o.job_file, o.output, o.detach, o.resume, global);
}

}  // namespace

void add_run_command(CLI::App& app, const GlobalOptions& global) {
  auto o = std::make_shared<JobOptions>();
  CLI::App* cmd = app.add_subcommand("run", "run a training job in this process");
  add_job_options(cmd, *o);
  cmd->callback([o, &global] { run(*o, global); });
}

void add_submit_command(CLI::App& app, const GlobalOptions& global) {
  auto o = std::make_shared<JobOptions>();
  CLI::App* cmd = app.add_subcommand(
      "submit", "run a training job on node daemons (partita daemon), or a Python job: submit -- python3 SCRIPT [ARGS]");
  add_job_options(cmd, *o, false);
  add_python_options(cmd, *o);
  cmd->add_option("--daemons", o->daemons, "HOST:PORT of every daemon, comma-separated (a cluster without a head)")
      ->delimiter(',');
  cmd->add_option("--address", o->address,
                  "HOST:PORT of a cluster's head: it runs the job; this command prints its log until it ends (Ctrl-C "
                  "detaches)");
  cmd->add_flag("--detach", o->detach, "with --address: return once the job is submitted");
  cmd->add_option("--connect-timeout", o->connect_timeout_s, "seconds to wait for each daemon")
      ->check(cli::positive())
      ->capture_default_str();
  cmd->callback([o, &global] { submit(*o, global); });
}

void add_job_command(CLI::App& app, const GlobalOptions& global) {
  CLI::App* job = app.add_subcommand("job", "jobs on a cluster's head: submit, list, status, logs, stop, resume");
  job->require_subcommand(1);

  auto o = std::make_shared<JobOptions>();
  CLI::App* cmd = job->add_subcommand("submit", "submit a training job to the cluster's head (it runs the job)");
  cmd->add_option("job", o->job_file, "the job file (YAML, see examples/), or after --, python3 SCRIPT [ARGS...]")
      ->required();
  add_python_options(cmd, *o);
  cmd->add_option("--address", o->address, kHeadAddressHelp);
  cmd->add_flag("--detach", o->detach, "return once the job is submitted");
  cmd->add_flag("--resume", o->resume,
                "continue the latest cancelled or failed job of this file's name from its last checkpoint");
  cmd->callback([o, &global] {
    if (!o->command.empty() || runtime::is_python_interpreter_name(fs::path(o->job_file).filename().string())) {
      return submit_python(*o, global);
    }
    submit_to_head(o->address, o->job_file, "", o->detach, o->resume, global);
  });

  struct Options {
    std::string id;
    std::string address;
    bool follow = false;
    bool detach = false;
    bool json = false;
    int timeout_s = 30;
  };
  auto q = std::make_shared<Options>();
  CLI::App* list = job->add_subcommand("list", "list the head's jobs");
  list->add_option("--address", q->address, kHeadAddressHelp);
  list->add_flag("--json", q->json, "print them as JSON");
  list->callback([q, &global] { print_head_jobs(q->address, "", q->json, global); });

  CLI::App* status = job->add_subcommand("status", "show one job: its state, progress and where it runs");
  status->add_option("job", q->id, "the job's id (partita job list lists them)")->required();
  status->add_option("--address", q->address, kHeadAddressHelp);
  status->add_flag("--json", q->json, "print it as JSON");
  status->callback([q, &global] { print_head_jobs(q->address, q->id, q->json, global); });

  CLI::App* logs = job->add_subcommand("logs", "print a job's log");
  logs->add_option("job", q->id, "the job's id (partita job list lists them)")->required();
  logs->add_option("--address", q->address, kHeadAddressHelp);
  logs->add_flag("-f,--follow", q->follow, "keep printing until the job ends (Ctrl-C detaches)");
  logs->callback([q, &global] { print_job_logs(q->address, q->id, q->follow, global); });

  CLI::App* stop = job->add_subcommand("stop", "cancel a job (its output keeps its last checkpoint; job resume continues it)");
  stop->add_option("job", q->id, "the job's id (partita job list lists them)")->required();
  stop->add_option("--address", q->address, kHeadAddressHelp);
  stop->add_option("--timeout", q->timeout_s, "seconds to wait for the job to stop")
      ->check(cli::positive())
      ->capture_default_str();
  stop->callback([q, &global] { stop_job_on_head(q->address, q->id, q->timeout_s, global); });

  CLI::App* resume = job->add_subcommand("resume", "continue a cancelled or failed job from its last checkpoint");
  resume->add_option("job", q->id, "the job's id (partita job list lists them)")->required();
  resume->add_option("--address", q->address, kHeadAddressHelp);
  resume->add_flag("--detach", q->detach, "return once the job is resumed");
  resume->callback([q, &global] { resume_job_on_head(q->address, q->id, q->detach, global); });
}

}  // namespace partita::cli
