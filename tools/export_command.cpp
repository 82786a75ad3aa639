// partita export RUN: a run's trained model as a PyTorch state dict (torch.load) with a
// JSON of what builds the PyG module that takes it (models/pyg_export.h).
// partita predict RUN: node predictions and embeddings, or a knowledge-graph run's entity
// and relation tables, as .npy files (training/trained_run.h).
#include <iostream>

#include "models/torch_runtime.h"
#include "tools/commands.h"
#include "training/run_export.h"

namespace partita::cli {

void add_export_command(CLI::App& app, const GlobalOptions&) {
  struct Options {
    std::string run_dir;
    std::string output;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd =
      app.add_subcommand("export", "write a run's trained model as a PyTorch state dict (torch.load) with its PyG arguments");
  cmd->footer(
      "Node classification: graphsage, gcn and gat under the names of torch_geometric.nn.models.GraphSAGE, GCN\n"
      "and GAT (load_state_dict(strict=True) takes them); rgcn and hetero_sage have no PyG model their weights\n"
      "fill one to one and keep Partita's names. Knowledge-graph runs (model.encoder: none): distmult and complex\n"
      "as torch_geometric.nn.kge's DistMult and ComplEx; transe (PyG's normalises entities) as `entities` and\n"
      "`relations`. The constructor arguments go beside the state dict as .json. See docs/export.md");
  cmd->add_option("run", o->run_dir, "the run's output folder (of partita run: job.yaml, checkpoint.json)")->required();
  cmd->add_option("-o,--output", o->output,
                  "the state dict to write [default: RUN/model.pt]; its description goes beside it as .json");
  cmd->callback([o] { std::cout << export_run(o->run_dir, o->output) << "\n"; });
}

void add_predict_command(CLI::App& app, const GlobalOptions& global) {
  struct Options {
    std::string run_dir;
    std::string nodes;
    std::string output;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("predict", "write a run's node predictions and embeddings (or KG tables) as .npy");
  cmd->footer(
      "Writes nodes.npy (original ids), predictions.npy (class ids), logits.npy and embeddings.npy (what the last\n"
      "layer reads) by full-neighbourhood inference over the whole graph: every in-edge, no sampling, no dropout;\n"
      "deterministic, as PyG's full-graph forward. Knowledge-graph runs: entities.npy and relations.npy.\n"
      "See docs/export.md");
  cmd->add_option("run", o->run_dir, "the run's output folder (of partita run: job.yaml, checkpoint.json)")->required();
  cmd->add_option("--nodes", o->nodes, "a 1-D int64 or int32 .npy of original node ids [default: every node]");
  cmd->add_option("-o,--output", o->output, "the folder to write [default: RUN/predictions]");
  cmd->callback([o, &global] {
    set_torch_threads(global.threads);  // the products on --threads cores (0: all), as a trainer's
    std::cout << predict_run(o->run_dir, o->nodes, o->output) << "\n";
  });
}

}  // namespace partita::cli
