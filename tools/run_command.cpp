// partita run JOB.yaml: the whole job in this process (the embedded default).
// partita submit JOB.yaml --daemons H1:P1,H2:P2: the same job on node daemons; partition i
// and its trainers go to daemon i mod D, the driver stays here and prints the progress.
#include <iostream>

#include "actors/protocol.h"
#include "base/error.h"
#include "runtime/runtime.h"
#include "tools/commands.h"
#include "training/job_config.h"
#include "training/job_driver.h"
#include "training/job_types.h"

namespace partita::cli {

namespace {

struct JobOptions {
  std::string job_file;
  std::string output;  // overrides the job's
  std::vector<std::string> daemons;
  bool resume = false;
  bool overwrite = false;
  int connect_timeout_s = 10;
};

void run(const JobOptions& o, const GlobalOptions& global) {
  JobConfig job = load_job(o.job_file);
  if (!o.output.empty()) job.output = std::filesystem::absolute(o.output).lexically_normal().string();
  if (o.resume && o.overwrite) throw UsageError("--resume and --overwrite contradict each other");

  runtime::ActorSystemOptions system;
  system.threads = global.threads;
  add_protocol_types(system);
  std::unique_ptr<runtime::Runtime> rt =
      o.daemons.empty()
          ? runtime::Runtime::in_process(system, job_actor_types())
          : runtime::Runtime::connect(system, o.daemons, std::chrono::seconds(o.connect_timeout_s));

  prepare_data(job, global.threads);
  RunOptions options;
  options.resume = o.resume;
  options.overwrite = o.overwrite;
  options.threads = global.threads;
  JobReport report = run_job(*rt, job, options);
  if (!report.epochs.empty()) {
    const EpochMetrics& last = report.epochs.back();
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

void add_job_options(CLI::App* cmd, JobOptions& o) {
  cmd->add_option("job", o.job_file, "the job file (YAML, see examples/)")->required();
  cmd->add_option("-o,--output", o.output, "folder for checkpoints and metrics (overrides the job's output)");
  cmd->add_flag("--resume", o.resume, "continue from the output folder's last checkpoint");
  cmd->add_flag("--overwrite", o.overwrite, "start afresh even if the output folder holds a run");
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
  CLI::App* cmd = app.add_subcommand("submit", "run a training job on node daemons (partita daemon)");
  add_job_options(cmd, *o);
  cmd->add_option("--daemons", o->daemons, "HOST:PORT of every daemon, comma-separated")
      ->required()
      ->delimiter(',');
  cmd->add_option("--connect-timeout", o->connect_timeout_s, "seconds to wait for each daemon")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->callback([o, &global] { run(*o, global); });
}

}  // namespace partita::cli
