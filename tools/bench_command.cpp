// partita bench ...: the benchmarks of BENCHMARKS.md.
#include "bench/partition_bench.h"
#include "base/error.h"
#include "tools/commands.h"

namespace partita::cli {

void add_bench_command(CLI::App& app, const GlobalOptions& global) {
  CLI::App* bench = app.add_subcommand("bench", "run a benchmark (see BENCHMARKS.md)");
  bench->require_subcommand(1);

  auto p = std::make_shared<bench::PartitionBenchOptions>();
  CLI::App* partition = bench->add_subcommand(
      "partition", "time and peak memory of `partita partition` next to the bare METIS call");
  partition->add_option("--nodes", p->num_nodes, "RMAT nodes")->check(CLI::PositiveNumber)->capture_default_str();
  partition->add_option("--avg-degree", p->avg_degree, "directed edges per node")->check(CLI::PositiveNumber)->capture_default_str();
  partition->add_option("--parts", p->parts, "part counts to measure")->delimiter(',')->check(CLI::PositiveNumber);
  partition->add_option("--seed", p->seed, "graph and METIS seed")->capture_default_str();
  partition->add_option("--workdir", p->workdir, "keep the generated graph here (default: a temporary folder)");
  partition->callback([p, &global] {
    p->threads = global.threads;
    if (p->parts.empty()) throw UsageError("--parts: give at least one part count");
    bench::run_partition_bench(*p);
  });

  struct BareOptions {
    std::string input;
    int parts = 2;
    uint64_t seed = 1;
  };
  auto b = std::make_shared<BareOptions>();
  CLI::App* bare = bench->add_subcommand(
      "bare-metis", "(used by bench partition) time METIS_PartGraphKway alone on an npy graph");
  bare->add_option("--input", b->input, "npy folder")->required();
  bare->add_option("--parts", b->parts, "parts")->check(CLI::PositiveNumber);
  bare->add_option("--seed", b->seed, "METIS seed");
  bare->callback([b, &global] { bench::run_bare_metis(b->input, b->parts, b->seed, global.threads); });
}

}  // namespace partita::cli
