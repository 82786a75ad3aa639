// partita generate {rmat,sbm,hetero}: synthetic graphs in the npy layout.
#include <spdlog/spdlog.h>

#include "base/staging_dir.h"
#include "partitioner/generators.h"
#include "partitioner/readers.h"
#include "tools/commands.h"

namespace partita::cli {

namespace {

struct OutputOptions {
  std::string dir;
  bool overwrite = false;
};

void add_output_flags(CLI::App* cmd, OutputOptions& out) {
  cmd->add_option("-o,--output", out.dir, "output folder (npy layout)")->required();
  cmd->add_flag("--overwrite", out.overwrite, "replace the output folder if it exists");
}

// The widest input a job takes (a model's width limit): a wider graph could be generated
// but never trained on.
constexpr double kMaxFeatures = 65536;

void add_split_flags(CLI::App* cmd, SplitOptions& split) {
  cmd->add_option("--train-nodes", split.num_train, "training nodes (0: use --train-fraction)")
      ->check(cli::at_least(0))->capture_default_str();
  cmd->add_option("--train-fraction", split.train_fraction, "fraction of nodes for training")
      ->check(cli::in_range(0.0, 1.0))->capture_default_str();
  cmd->add_option("--val-fraction", split.val_fraction, "fraction of nodes for validation")
      ->check(cli::in_range(0.0, 1.0))->capture_default_str();
  cmd->add_option("--test-fraction", split.test_fraction, "fraction of nodes for testing")
      ->check(cli::in_range(0.0, 1.0))->capture_default_str();
}

// Checks the output folder as StagingDir will, so a generate into an existing folder fails
// at once rather than after minutes of generating.
void check_output(const OutputOptions& out) {
  StagingDir::check_target(out.dir, out.overwrite, kNpyFolderMarker);
}

// The generator writes into a staging folder so a failed or interrupted run leaves nothing.
void write_output(const Dataset& dataset, const OutputOptions& out) {
  StagingDir staging(out.dir, out.overwrite, kNpyFolderMarker);
  write_npy_folder(dataset, staging.path());
  staging.commit();
  spdlog::info("wrote {}: {} nodes, {} directed edges{}", out.dir, dataset.num_nodes,
               dataset.num_edges(),
               dataset.feature_dim > 0 ? ", " + std::to_string(dataset.feature_dim) + " features"
                                       : std::string());
}

}  // namespace

void add_generate_command(CLI::App& app, const GlobalOptions& global) {
  CLI::App* generate = app.add_subcommand("generate", "write a synthetic graph (npy layout)");
  generate->require_subcommand(1);

  auto rmat = std::make_shared<RmatOptions>();
  auto rmat_out = std::make_shared<OutputOptions>();
  CLI::App* r = generate->add_subcommand("rmat", "power-law R-MAT graph");
  r->add_option("--nodes", rmat->num_nodes, "number of nodes")->check(cli::positive())->capture_default_str();
  r->add_option("--avg-degree", rmat->avg_degree, "directed edges per node")->check(cli::positive())->capture_default_str();
  r->add_option("--a", rmat->a, "R-MAT quadrant probability a")->capture_default_str();
  r->add_option("--b", rmat->b, "R-MAT quadrant probability b")->capture_default_str();
  r->add_option("--c", rmat->c, "R-MAT quadrant probability c (d = 1 - a - b - c)")->capture_default_str();
  r->add_flag("--undirected", rmat->undirected,
              "store every edge in both directions (--avg-degree still counts directed edges)");
  r->add_option("--features", rmat->feature_dim, "random float32 features per node (0: none)")
      ->check(cli::in_range(0, kMaxFeatures))->capture_default_str();
  r->add_option("--classes", rmat->num_classes, "random labels in [0, classes) (0: none)")
      ->check(cli::at_least(0))->capture_default_str();
  add_split_flags(r, rmat->split);
  r->add_option("--seed", rmat->seed, "random seed")->capture_default_str();
  add_output_flags(r, *rmat_out);
  r->callback([rmat, rmat_out, &global] {
    check_output(*rmat_out);
    rmat->threads = global.threads;
    write_output(generate_rmat(*rmat), *rmat_out);
  });

  auto sbm = std::make_shared<SbmOptions>();
  auto sbm_out = std::make_shared<OutputOptions>();
  CLI::App* s = generate->add_subcommand("sbm", "stochastic block model with class-dependent features");
  s->add_option("--nodes", sbm->num_nodes, "number of nodes")->check(cli::positive())->capture_default_str();
  s->add_option("--classes", sbm->num_classes, "number of classes (blocks)")->check(cli::positive())->capture_default_str();
  s->add_option("--avg-degree", sbm->avg_degree, "directed edges per node")->check(cli::positive())->capture_default_str();
  s->add_option("--homophily", sbm->homophily, "fraction of edges inside a class")->check(cli::in_range(0.0, 1.0))->capture_default_str();
  s->add_option("--features", sbm->feature_dim, "feature dimension (0: none)")->check(cli::in_range(0, kMaxFeatures))->capture_default_str();
  s->add_option("--noise", sbm->noise, "feature noise relative to the class signal")->check(cli::at_least(0))->capture_default_str();
  add_split_flags(s, sbm->split);
  s->add_option("--seed", sbm->seed, "random seed")->capture_default_str();
  add_output_flags(s, *sbm_out);
  s->callback([sbm, sbm_out, &global] {
    check_output(*sbm_out);
    sbm->threads = global.threads;
    write_output(generate_sbm(*sbm), *sbm_out);
  });

  auto het = std::make_shared<HeteroOptions>();
  auto het_out = std::make_shared<OutputOptions>();
  CLI::App* h = generate->add_subcommand("hetero", "heterogeneous author-paper-venue graph");
  h->add_option("--papers", het->num_papers, "paper nodes")->check(cli::positive())->capture_default_str();
  h->add_option("--authors", het->num_authors, "author nodes")->check(cli::positive())->capture_default_str();
  h->add_option("--venues", het->num_venues, "venue nodes")->check(cli::positive())->capture_default_str();
  h->add_option("--classes", het->num_classes, "paper fields (labels)")->check(cli::positive())->capture_default_str();
  h->add_option("--features", het->feature_dim, "paper feature dimension (0: none)")->check(cli::in_range(0, kMaxFeatures))->capture_default_str();
  h->add_option("--citations", het->citations_per_paper, "citations per paper")->check(cli::at_least(0))->capture_default_str();
  h->add_option("--authors-per-paper", het->authors_per_paper, "authors per paper")->check(cli::at_least(0))->capture_default_str();
  h->add_option("--homophily", het->homophily, "fraction of citations and authorships within the paper's field")
      ->check(cli::in_range(0.0, 1.0))->capture_default_str();
  h->add_option("--noise", het->noise, "paper feature noise relative to the field signal")
      ->check(cli::at_least(0))->capture_default_str();
  add_split_flags(h, het->split);
  h->add_option("--seed", het->seed, "random seed")->capture_default_str();
  add_output_flags(h, *het_out);
  h->callback([het, het_out, &global] {
    check_output(*het_out);
    het->threads = global.threads;
    write_output(generate_hetero(*het), *het_out);
  });
}

}  // namespace partita::cli
