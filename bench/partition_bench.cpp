#include "bench/partition_bench.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/progress.h"
#include "base/staging_dir.h"
#include "base/stopwatch.h"
#include "base/subprocess.h"
#include "bench/harness.h"
#include "bench/workdir.h"
#include "partitioner/generators.h"
#include "partitioner/partition.h"
#include "partitioner/readers.h"

namespace partita::bench {

namespace fs = std::filesystem;

namespace {

ProcessResult run_child(const std::vector<std::string>& args, double timeout) {
  std::vector<std::string> argv{self_executable()};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessResult r = run_process(argv, timeout);
  if (r.timed_out) throw Error("benchmark child timed out: " + args.at(0) + " " + args.at(1));
  if (r.exit_code != 0) {
    throw Error("benchmark child failed (exit " + std::to_string(r.exit_code) + "): " + r.err);
  }
  return r;
}


}  // namespace

void run_bare_metis(const std::string& npy_dir, int parts, uint64_t seed, int threads) {
  PartitionOptions options;
  options.num_parts = parts;
  options.seed = seed;
  options.threads = threads;
  MetisGraph graph;
  {
    Dataset dataset = read_npy_folder(npy_dir);
    graph = build_metis_graph(dataset, options);
  }  // only METIS's own input stays alive during the call, as in a bare METIS program
  Stopwatch watch;
  run_metis(graph, parts, seed);
  std::cout << nlohmann::json{{"metis_seconds", watch.seconds()}}.dump() << "\n";
}

void run_partition_bench(const PartitionBenchOptions& o) {
  const Workdir dir(o.workdir, "bench");
  const std::string& workdir = dir.path();
  std::string graph_dir = workdir + "/rmat";
  Stopwatch watch;
  {
    RmatOptions rmat;
    rmat.num_nodes = o.num_nodes;
    rmat.avg_degree = o.avg_degree;
    rmat.seed = o.seed;
    rmat.threads = o.threads;
    Dataset graph = generate_rmat(rmat);
    StagingDir staging(graph_dir, true, kNpyFolderMarker);
    write_npy_folder(graph, staging.path());
    staging.commit();
  }
  double generate_seconds = watch.seconds();
  spdlog::info("generated RMAT {} nodes, avg degree {} in {:.1f}s", o.num_nodes, o.avg_degree,
               generate_seconds);

  std::string threads = std::to_string(o.threads);
  std::printf("\nRMAT %lld nodes, %.0f directed edges (seed %llu); generation %.1f s\n\n",
              (long long)o.num_nodes, static_cast<double>(o.num_nodes) * o.avg_degree,
              (unsigned long long)o.seed, generate_seconds);
  for (int k : o.parts) {
    std::string out_dir = workdir + "/parts" + std::to_string(k);
    // Each case is a fresh child process (its peak memory is its own), so there is nothing
    // to warm up; METIS alone varies by ±15% from run to run on a shared machine, hence the
    // interleaved rounds.
    double whole_rss = 0, bare_rss = 0;
    RoundsOptions rounds;
    rounds.title = std::to_string(k) + " parts: the whole `partita partition` command (read npy, METIS, relabel, "
                   "write) next to METIS_PartGraphKway alone on the same graph";
    rounds.warmup = 0;
    rounds.rounds = o.repeat;
    const Results results = run_cases(
        rounds,
        {{"partition", Role::kKernel,
          [&] {
            ProcessResult whole = run_child({"--log-level", "warn", "--threads", threads, "partition", "--input",
                                             graph_dir, "--format", "npy", "--parts", std::to_string(k), "--seed",
                                             std::to_string(o.seed), "--output", out_dir, "--overwrite"},
                                            o.timeout_seconds);
            whole_rss = std::max(whole_rss, whole.max_rss_bytes);
            return whole.wall_seconds;
          }},
         {"bare METIS", Role::kBaseline, [&] {
            ProcessResult bare = run_child({"--log-level", "warn", "--threads", threads, "bench", "bare-metis",
                                            "--input", graph_dir, "--parts", std::to_string(k), "--seed",
                                            std::to_string(o.seed)},
                                           o.timeout_seconds);
            bare_rss = std::max(bare_rss, bare.max_rss_bytes);
            return nlohmann::json::parse(bare.out).at("metis_seconds").get<double>();
          }}});
    std::printf("%d parts: time ratio %.2f; peak GB: partition %.2f, bare METIS %.2f, mem ratio %.2f (each child "
                "process's maximum resident set)\n",
                k, results.ratio("partition"), whole_rss / 1e9, bare_rss / 1e9, whole_rss / bare_rss);
    std::fflush(stdout);
    std::error_code ec;
    fs::remove_all(out_dir, ec);
  }
}

}  // namespace partita::bench
