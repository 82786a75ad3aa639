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
#include "bench/stats.h"
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
  std::printf("%5s | %12s %12s | %12s %12s | %10s %10s\n", "parts", "partition s", "peak GB",
              "bare METIS s", "peak GB", "time ratio", "mem ratio");
  for (int k : o.parts) {
    std::string out_dir = workdir + "/parts" + std::to_string(k);
    // METIS alone varies by ±15% from run to run on a shared machine: the two are run
    // alternately, `repeat` times each, and the medians compared.
    std::vector<double> whole_seconds, metis_seconds;
    double whole_rss = 0, bare_rss = 0;
    for (int r = 0; r < o.repeat; ++r) {
      ProcessResult whole = run_child({"--log-level", "warn", "--threads", threads, "partition",
                                       "--input", graph_dir, "--format", "npy", "--parts",
                                       std::to_string(k), "--seed", std::to_string(o.seed),
                                       "--output", out_dir, "--overwrite"},
                                      o.timeout_seconds);
      ProcessResult bare = run_child({"--log-level", "warn", "--threads", threads, "bench",
                                      "bare-metis", "--input", graph_dir, "--parts",
                                      std::to_string(k), "--seed", std::to_string(o.seed)},
                                     o.timeout_seconds);
      whole_seconds.push_back(whole.wall_seconds);
      metis_seconds.push_back(nlohmann::json::parse(bare.out).at("metis_seconds").get<double>());
      whole_rss = std::max(whole_rss, whole.max_rss_bytes);
      bare_rss = std::max(bare_rss, bare.max_rss_bytes);
    }
    double whole = median(whole_seconds), metis = median(metis_seconds);
    std::printf("%5d | %12.2f %12.2f | %12.2f %12.2f | %10.2f %10.2f\n", k, whole, whole_rss / 1e9,
                metis, bare_rss / 1e9, whole / metis, whole_rss / bare_rss);
    std::fflush(stdout);
    std::error_code ec;
    fs::remove_all(out_dir, ec);
  }
  std::printf("\npartition s: the whole `partita partition` command (read npy, METIS, relabel, "
              "write); bare METIS s: METIS_PartGraphKway alone on the same graph; medians of %d "
              "alternating runs. Peak memory is each child process's maximum resident set.\n",
              o.repeat);
}

}  // namespace partita::bench
