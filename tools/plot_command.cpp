// partita plot RUN_DIR -o curves.png|.svg: a job's curves per epoch from its metrics.jsonl,
// without a browser (dashboard/run_plot.h).
#include <iostream>

#include "dashboard/run_plot.h"
#include "tools/commands.h"

namespace partita::cli {

void add_plot_command(CLI::App& app, const GlobalOptions&) {
  struct Options {
    std::string run_dir;
    std::string output;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("plot", "draw a job's loss, accuracy and throughput per epoch into a PNG or SVG");
  cmd->add_option("run_dir", o->run_dir, "the job's output folder (holding metrics.jsonl)")->required();
  cmd->add_option("-o,--output", o->output, "the image to write: .png or .svg")->required();
  cmd->callback([o] {
    dashboard::plot_run(o->run_dir, o->output);
    std::cout << "wrote " << o->output << "\n";
  });
}

}  // namespace partita::cli
