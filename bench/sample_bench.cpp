#include "bench/sample_bench.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "base/random.h"
#include "bench/gather_bench.h"
#include "bench/input_graph.h"
#include "base/stopwatch.h"
#include "graph/neighbor_sampler.h"
#include "graph/subgraph_builder.h"
#include "partitioner/generators.h"
#include "partitioner/partition_stores.h"

namespace partita::bench {

namespace {

// pyg-lib 0.4 on this machine class, RMAT 1M nodes / 20M edges, batch 1024, [15,10,5], one
// thread (quoted in the issue; PyPI is not reachable here to rerun it).
constexpr double kPygBatchesPerSecond = 21.4;
constexpr double kPygEdgesPerSecond = 7.0e6;

struct Throughput {
  double batches_per_second = 0;
  double edges_per_second = 0;
  double nodes_per_batch = 0;
};

// Every thread runs its own sampler on batches t, t + threads, ...: the way a loader
// with several sampler workers uses the kernel.
Throughput measure(const Topology& topology, const SamplerConfig& config,
                   const std::vector<int64_t>& seeds, int64_t batch_size, int num_batches,
                   int threads) {
  std::atomic<int64_t> edges{0}, nodes{0};
  auto run = [&](int first, int count) {
    NeighborSampler sampler(topology, config);
    int64_t local_edges = 0, local_nodes = 0;
    for (int b = first; b < count; b += threads) {
      size_t offset = (static_cast<size_t>(b) * batch_size) % (seeds.size() - batch_size);
      Span<const int64_t> batch(seeds.data() + offset, batch_size);
      MiniBatch mb = sampler.sample(batch, {1, 0, static_cast<uint64_t>(b)});
      local_edges += static_cast<int64_t>(mb.row.size());
      local_nodes += static_cast<int64_t>(mb.node_ids.size());
    }
    edges += local_edges;
    nodes += local_nodes;
  };
  run(0, std::min(4, num_batches));  // warm-up: page in the topology, size the buffers
  edges = 0;
  nodes = 0;
  Stopwatch watch;
  std::vector<std::thread> workers;
  for (int t = 1; t < threads; ++t) workers.emplace_back(run, t, num_batches);
  run(0, num_batches);
  for (auto& w : workers) w.join();
  double seconds = watch.seconds();
  return {num_batches / seconds, static_cast<double>(edges) / seconds,
          static_cast<double>(nodes) / num_batches};
}

std::string fanout_text(const std::vector<int>& fanout) {
  std::string s = "[";
  for (size_t i = 0; i < fanout.size(); ++i) s += (i ? "," : "") + std::to_string(fanout[i]);
  return s + "]";
}

}  // namespace

void run_sample_bench(const SampleBenchOptions& o) {
  RmatOptions rmat;
  rmat.num_nodes = o.num_nodes;
  rmat.avg_degree = o.avg_degree;
  rmat.seed = o.seed;
  const Dataset d = input_or_rmat(o.input, rmat);
  Topology topology = topology_from_dataset(d);
  std::vector<int64_t> seeds(d.num_nodes);
  for (int64_t v = 0; v < d.num_nodes; ++v) seeds[v] = v;
  Rng rng(o.seed);
  shuffle(seeds, rng);
  const double bytes_per_edge =
      static_cast<double>(topology.sampling_bytes()) / static_cast<double>(d.num_edges());

  std::printf("\n%s: %lld nodes, %lld directed edges; batch %lld; topology %.2f bytes/edge\n\n",
              o.input.empty() ? "RMAT" : o.input.c_str(), (long long)d.num_nodes,
              (long long)d.num_edges(), (long long)o.batch_size, bytes_per_edge);
  double nodes_per_batch = 0;  // of the first fanout list: the gather below fetches as many rows
  std::printf("%-12s %7s | %10s %14s %12s | %14s\n", "fanouts", "threads", "batches/s",
              "edges/s", "nodes/batch", "vs 1 thread");
  for (const auto& fanout : o.fanouts) {
    SamplerConfig config;
    config.fanouts = {fanout};
    double single = 0;
    for (int threads : o.threads) {
      Throughput t = measure(topology, config, seeds, o.batch_size, o.num_batches, threads);
      if (threads == o.threads.front()) single = t.edges_per_second;
      if (nodes_per_batch == 0) nodes_per_batch = t.nodes_per_batch;
      std::printf("%-12s %7d | %10.1f %13.2fM %12.0f | %13.2fx\n", fanout_text(fanout).c_str(),
                  threads, t.batches_per_second, t.edges_per_second / 1e6, t.nodes_per_batch,
                  t.edges_per_second / single);
      if (fanout == std::vector<int>{15, 10, 5} && threads == 1) {
        std::printf("%-12s %7s | %10.1f %13.2fM %12s | %13.2fx  <- ours / pyg-lib 0.4 (quoted)\n",
                    "  pyg-lib", "1", kPygBatchesPerSecond, kPygEdgesPerSecond / 1e6, "",
                    t.edges_per_second / kPygEdgesPerSecond);
      }
      std::fflush(stdout);
    }
  }
  if (o.feature_dim > 0) {
    // The sampled nodes' features: as many distinct random rows per batch as the first
    // fanout list reached, next to a memcpy of the same bytes.
    std::printf("\nfeature gather: %lld float32 per node, %.0f nodes per batch\n",
                (long long)o.feature_dim, nodes_per_batch);
    GatherBenchOptions gather;
    gather.num_nodes = d.num_nodes;
    gather.dim = o.feature_dim;
    gather.batch_nodes = static_cast<int64_t>(nodes_per_batch);
    gather.threads = o.threads;
    gather.seed = o.seed;
    run_gather_bench(gather);
  }
}

}  // namespace partita::bench
