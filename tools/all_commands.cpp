// partita-full: every command (tools/main.cpp says why `partita` has only some).
#include "tools/commands.h"

namespace partita::cli {

void add_commands(CLI::App& app, const GlobalOptions& global) {
  add_generate_command(app, global);
  add_partition_command(app, global);
  add_inspect_command(app, global);
  add_bench_command(app, global);
  add_daemon_command(app, global);
  add_run_command(app, global);
  add_submit_command(app, global);
  add_plot_command(app, global);
  add_export_command(app, global);
  add_predict_command(app, global);
  add_status_command(app, global);
  add_stop_command(app, global);
  add_down_command(app, global);
  add_start_command(app, global);
  add_job_command(app, global);
  add_logs_command(app, global);
  add_job_driver_command(app, global);
  add_cluster_command(app, global);
  add_datasets_command(app, global);
}

std::string binary_for_other_commands() { return ""; }

}  // namespace partita::cli
