#include "bench/sample_bench.h"

#include <spdlog/spdlog.h>

#include <sys/resource.h>
#include <time.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "base/error.h"
#include "base/random.h"
#include "bench/gather_bench.h"
#include "bench/input_graph.h"
#include "bench/stats.h"
#include "base/stopwatch.h"
#include "graph/neighbor_sampler.h"
#include "graph/subgraph_builder.h"
#include "graph/time_order.h"
#include "partitioner/generators.h"
#include "partitioner/partition_stores.h"
#include "partitioner/readers.h"

namespace partita::bench {

namespace {

// pyg-lib 0.4 on this machine class, RMAT 1M nodes / 20M edges, batch 1024, [15,10,5], one
// thread (a quoted figure; PyPI is not reachable here to rerun it).
constexpr double kPygBatchesPerSecond = 21.4;
constexpr double kPygEdgesPerSecond = 7.0e6;

struct Throughput {
  double batches_per_second = 0;
  double edges_per_second = 0;
  double nodes_per_batch = 0;
  // Edges per second of the process's CPU time: on a loaded machine, wall time also counts
  // the time the sampler waited for a core; CPU time counts only what it ran.
  double edges_per_cpu_second = 0;
  double faults_per_batch = 0;  // the process's minor page faults per measured batch
};

long minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Every thread runs its own sampler on batches t, t + threads, ...: the way a loader
// with several sampler workers uses the kernel.
// `times`: each seed's time bound (temporal sampling), beside `seeds`; empty: none.
// `next_batch`: the first batch not sampled yet in this process; every call samples batches
// after it (4 warm-up, then num_batches measured) and moves it past them. As in an epoch,
// which samples each seed once, no measured batch was sampled before: rounds that repeat
// the same batches would measure a cache warmed by them (the 32 MB L3 holds a good part of
// 8 batches' columns), which favours the kernel that reads fewer lines.
Throughput measure(const Topology& topology, const SamplerConfig& config,
                   const std::vector<int64_t>& seeds, int64_t batch_size, int num_batches,
                   int threads, int64_t& next_batch, const std::vector<int64_t>& times = {}) {
  std::atomic<int64_t> edges{0}, nodes{0};
  const int64_t first_batch = next_batch;
  next_batch += 4 + num_batches;
  // One sampler per thread, warmed up before the clock starts (the topology paged in, its
  // buffers sized), as a loader's samplers are after their first batches.
  std::vector<std::unique_ptr<NeighborSampler>> samplers;
  for (int t = 0; t < threads; ++t) samplers.push_back(std::make_unique<NeighborSampler>(topology, config));
  auto run = [&](NeighborSampler& sampler, int first, int count, int step) {
    int64_t local_edges = 0, local_nodes = 0;
    for (int b = first; b < count; b += step) {
      const int64_t batch_index = first_batch + b;
      size_t offset = (static_cast<size_t>(batch_index) * batch_size) % (seeds.size() - batch_size);
      Span<const int64_t> batch(seeds.data() + offset, batch_size);
      Span<const int64_t> bounds;
      if (!times.empty()) bounds = Span<const int64_t>(times.data() + offset, batch_size);
      MiniBatch mb = sampler.sample(batch, {1, 0, static_cast<uint64_t>(batch_index)}, bounds);
      local_edges += static_cast<int64_t>(mb.row.size());
      local_nodes += static_cast<int64_t>(mb.node_ids.size());
      sampler.recycle(std::move(mb));  // as a loader whose consumer hands batches back
    }
    edges += local_edges;
    nodes += local_nodes;
  };
  for (int t = 0; t < threads; ++t) run(*samplers[t], num_batches, num_batches + 4, 1);
  edges = 0;
  nodes = 0;
  const long faults_start = minor_faults();
  Stopwatch watch;
  const double cpu_start = process_cpu_seconds();
  std::vector<std::thread> workers;
  for (int t = 1; t < threads; ++t) {
    workers.emplace_back([&, t] { run(*samplers[t], t, num_batches, threads); });
  }
  run(*samplers[0], 0, num_batches, threads);
  for (auto& w : workers) w.join();
  double seconds = watch.seconds();
  const double cpu = process_cpu_seconds() - cpu_start;
  const double faults = static_cast<double>(minor_faults() - faults_start);
  return {num_batches / seconds, static_cast<double>(edges) / seconds, static_cast<double>(nodes) / num_batches,
          static_cast<double>(edges) / cpu, faults / num_batches};
}

// The floor of a batch's memory time: CPU nanoseconds per random 8-byte read of the
// topology's largest array (its columns: 160 MB, far beyond the cache) when the reads are
// independent and prefetched 16 ahead, as many in flight as the core keeps; a sampler's
// reads depend on one another only hop by hop, so it can at best overlap them like this.
double random_read_ns(const Topology& topology, uint64_t seed) {
  const Span<const int64_t> column = topology.csc(0).indices.as<int64_t>();
  constexpr size_t kReads = size_t{1} << 22, kAhead = 16;
  std::vector<uint32_t> at(kReads);
  Rng rng(mix64(seed, 0x666c6f6f72ull));
  for (auto& a : at) a = static_cast<uint32_t>(rng.below(column.size()));
  const double start = process_cpu_seconds();
  int64_t sum = 0;
  for (size_t k = 0; k < kReads; ++k) {
    if (k + kAhead < kReads) __builtin_prefetch(column.data() + at[k + kAhead]);
    sum += column[at[k]];
  }
  const double seconds = process_cpu_seconds() - start;
  volatile int64_t keep = sum;  // the reads are the point
  (void)keep;
  return seconds * 1e9 / static_cast<double>(kReads);
}

std::string fanout_text(const std::vector<int>& fanout) {
  std::string s = "[";
  for (size_t i = 0; i < fanout.size(); ++i) s += (i ? "," : "") + std::to_string(fanout[i]);
  return s + "]";
}

}  // namespace

void run_sample_bench(const SampleBenchOptions& o) {
  int64_t next_batch = 0;  // measure()'s: no batch is sampled twice
  RmatOptions rmat;
  rmat.num_nodes = o.num_nodes;
  rmat.avg_degree = o.avg_degree;
  rmat.seed = o.seed;
  const Dataset d = input_or_rmat(o.input, rmat);
  // The topology as samplers keep it (its sampling arrays on huge pages) and, as the
  // same-run baseline of that, in the plain vectors it is built in (4 KB pages).
  const Topology topology = topology_from_dataset(d);
  const Topology plain_topology = topology_from_dataset(d, TopologyMemory::kPlain);
  std::vector<int64_t> seeds(d.num_nodes);
  for (int64_t v = 0; v < d.num_nodes; ++v) seeds[v] = v;
  Rng rng(o.seed);
  shuffle(seeds, rng);
  const double bytes_per_edge =
      static_cast<double>(topology.sampling_bytes()) / static_cast<double>(d.num_edges());

  std::printf("\n%s: %lld nodes, %lld directed edges; batch %lld; topology %.2f bytes/edge; medians of %d "
              "interleaved rounds of %d batches\n\n",
              o.input.empty() ? "RMAT" : o.input.c_str(), (long long)d.num_nodes, (long long)d.num_edges(),
              (long long)o.batch_size, bytes_per_edge, o.rounds, o.num_batches);
  double nodes_per_batch = 0;  // of the first fanout list: the gather below fetches as many rows
  std::printf("%-12s %7s | %10s %10s %12s %11s %12s | %20s %11s | %14s\n", "fanouts", "threads", "batches/s",
              "edges/s", "edges/CPU s", "nodes/batch", "faults/batch", "4 KB pages: edges/s", "ratio, CPU",
              "vs 1 thread");
  for (const auto& fanout : o.fanouts) {
    SamplerConfig config;
    config.fanouts = {fanout};
    double single = 0;
    for (int threads : o.threads) {
      std::vector<double> batches, rate, cpu_rate, faults, plain_rate, ratio, cpu_ratio;
      Throughput t;
      for (int round = 0; round < o.rounds; ++round) {
        Throughput p;
        // Alternate which goes first, so neither always runs on a warmer machine.
        if (round % 2 == 0) {
          t = measure(topology, config, seeds, o.batch_size, o.num_batches, threads, next_batch);
          p = measure(plain_topology, config, seeds, o.batch_size, o.num_batches, threads, next_batch);
        } else {
          p = measure(plain_topology, config, seeds, o.batch_size, o.num_batches, threads, next_batch);
          t = measure(topology, config, seeds, o.batch_size, o.num_batches, threads, next_batch);
        }
        batches.push_back(t.batches_per_second);
        rate.push_back(t.edges_per_second);
        cpu_rate.push_back(t.edges_per_cpu_second);
        faults.push_back(t.faults_per_batch);
        plain_rate.push_back(p.edges_per_second);
        ratio.push_back(t.edges_per_second / p.edges_per_second);
        cpu_ratio.push_back(t.edges_per_cpu_second / p.edges_per_cpu_second);
      }
      if (threads == o.threads.front()) single = median(rate);
      if (nodes_per_batch == 0) nodes_per_batch = t.nodes_per_batch;
      std::printf("%-12s %7d | %10.1f %9.2fM %11.2fM %11.0f %12.1f | %19.2fM %5.2f/%5.2f | %13.2fx\n",
                  fanout_text(fanout).c_str(), threads, median(batches), median(rate) / 1e6,
                  median(cpu_rate) / 1e6, t.nodes_per_batch, median(faults), median(plain_rate) / 1e6,
                  median(ratio), median(cpu_ratio), median(rate) / single);
      if (fanout == std::vector<int>{15, 10, 5} && threads == 1) {
        std::printf("%-12s %7s | %10.1f %9.2fM %12s %11s %12s | %20s %11s | %13.2fx  <- ours / pyg-lib 0.4 "
                    "(quoted); by CPU time %.2fx\n",
                    "  pyg-lib", "1", kPygBatchesPerSecond, kPygEdgesPerSecond / 1e6, "", "", "", "", "",
                    median(rate) / kPygEdgesPerSecond, median(cpu_rate) / kPygEdgesPerSecond);
      }
      if (threads == 1) {
        // Distance to the floor: one batch's random reads (column bounds and original id of
        // every frontier node, each pick's source, each neighbour's dedup slot) at the
        // overlapped random-read time measured now, against a batch's CPU time.
        NeighborSampler sampler(topology, config);
        const MiniBatch b = sampler.sample(Span<const int64_t>(seeds.data(), o.batch_size), {2, 0, 0});
        int64_t frontier = 0;
        for (size_t h = 0; h + 1 < b.num_sampled_nodes.size(); ++h) frontier += b.num_sampled_nodes[h];
        const double reads = 2.0 * static_cast<double>(frontier) + 2.0 * static_cast<double>(b.row.size());
        const double floor_ms = reads * random_read_ns(topology, o.seed) / 1e6;
        const double batch_ms = t.edges_per_second / t.batches_per_second / median(cpu_rate) * 1e3;
        std::printf("%-12s %7s | floor: %.0fk random reads a batch at the overlapped rate = %.2f ms; a batch's CPU "
                    "time %.2f ms = %.2fx the floor\n",
                    "", "", reads / 1e3, floor_ms, batch_ms, batch_ms / floor_ms);
      }
      std::fflush(stdout);
    }
  }
  std::printf("\nedges/CPU s: sampled edges per second of the process's CPU time (on a loaded machine, wall time "
              "also counts waiting for a core). faults/batch: minor page faults per batch (batches handed back to "
              "the sampler, as a loader's consumer does). 4 KB pages: the same topology in plain vectors, same "
              "rounds; ratio: huge pages over it, by wall / by CPU time.\n");
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

void run_hetero_sample_bench(const SampleBenchOptions& o) {
  int64_t next_batch = 0;  // measure()'s: no batch is sampled twice
  Dataset typed;
  int64_t num_seeds = 0;  // seeds are nodes [0, num_seeds): the papers, or every entity
  if (!o.triples.empty()) {
    typed = read_dataset("triples", o.triples);
    num_seeds = typed.num_nodes;
  } else {
    HeteroOptions h;
    h.num_papers = o.hetero_papers;
    h.num_authors = o.hetero_papers / 2;
    h.num_venues = std::max<int64_t>(h.num_classes, o.hetero_papers / 400);
    h.feature_dim = 0;
    h.seed = o.seed;
    typed = generate_hetero(h);
    num_seeds = h.num_papers;
  }
  Dataset plain = typed;  // the same edges, in the same order, without types
  plain.node_type_names.clear();
  plain.node_type.clear();
  plain.edge_types.clear();
  plain.edges.type.clear();
  const Topology hetero_topology = topology_from_dataset(typed);
  const Topology plain_topology = topology_from_dataset(plain);
  std::vector<int64_t> seeds(static_cast<size_t>(num_seeds));
  for (int64_t v = 0; v < num_seeds; ++v) seeds[v] = v;
  Rng rng(o.seed);
  shuffle(seeds, rng);
  std::printf("\n%s: %lld nodes (%lld seed candidates), %lld edges, %zu edge types; batch %lld, 1 thread, %d "
              "interleaved rounds of %d batches\n\n",
              o.triples.empty() ? "hetero generator" : o.triples.c_str(), (long long)typed.num_nodes,
              (long long)num_seeds, (long long)typed.num_edges(), typed.edge_types.size(), (long long)o.batch_size,
              o.rounds, o.num_batches);
  std::printf("%-12s | %14s %12s %12s | %14s %12s %12s | %12s\n", "fanouts", "hetero edges/s", "edges/batch",
              "nodes/batch", "homog edges/s", "edges/batch", "nodes/batch", "hetero/homog");
  for (const auto& fanout : o.fanouts) {
    SamplerConfig typed_config, plain_config;
    typed_config.fanouts.assign(typed.edge_types.size(), fanout);
    plain_config.fanouts = {fanout};
    std::vector<double> typed_rate, plain_rate, ratio;
    Throughput a, b;
    for (int round = 0; round < o.rounds; ++round) {
      // Alternate which goes first, so neither always runs on a warmer machine.
      if (round % 2 == 0) {
        a = measure(hetero_topology, typed_config, seeds, o.batch_size, o.num_batches, 1, next_batch);
        b = measure(plain_topology, plain_config, seeds, o.batch_size, o.num_batches, 1, next_batch);
      } else {
        b = measure(plain_topology, plain_config, seeds, o.batch_size, o.num_batches, 1, next_batch);
        a = measure(hetero_topology, typed_config, seeds, o.batch_size, o.num_batches, 1, next_batch);
      }
      typed_rate.push_back(a.edges_per_second);
      plain_rate.push_back(b.edges_per_second);
      ratio.push_back(a.edges_per_second / b.edges_per_second);
    }
    std::printf("%-12s | %13.2fM %12.0f %12.0f | %13.2fM %12.0f %12.0f | %11.2fx\n", fanout_text(fanout).c_str(),
                median(typed_rate) / 1e6, a.edges_per_second / a.batches_per_second, a.nodes_per_batch,
                median(plain_rate) / 1e6, b.edges_per_second / b.batches_per_second, b.nodes_per_batch,
                median(ratio));
    std::fflush(stdout);
  }
}

void run_temporal_sample_bench(const SampleBenchOptions& o) {
  int64_t next_batch = 0;  // measure()'s: no batch is sampled twice
  const bool edge_times = o.temporal == "edge";
  if (!edge_times && o.temporal != "node") {
    throw UsageError("--temporal: '" + o.temporal + "' is not one of: edge, node");
  }
  RmatOptions rmat;
  rmat.num_nodes = o.num_nodes;
  rmat.avg_degree = o.avg_degree;
  rmat.seed = o.seed;
  const Dataset d = input_or_rmat(o.input, rmat);
  const Topology topology = topology_from_dataset(d);
  constexpr uint64_t kTimes = 1000000000;
  const auto time_of = [&](uint64_t stream, int64_t id) {
    return static_cast<int64_t>(mix64(o.seed, stream, static_cast<uint64_t>(id)) % kTimes);
  };
  std::vector<int64_t> edge_time(static_cast<size_t>(topology.num_edges())), node_time(static_cast<size_t>(d.num_nodes));
  for (int64_t k = 0; k < topology.num_edges(); ++k) edge_time[k] = time_of(1, topology.original_edge_id(k));
  for (int64_t v = 0; v < d.num_nodes; ++v) node_time[v] = time_of(2, v);
  std::vector<int64_t> seeds(static_cast<size_t>(d.num_nodes)), times(seeds.size());
  for (int64_t v = 0; v < d.num_nodes; ++v) seeds[v] = v;
  Rng rng(o.seed);
  shuffle(seeds, rng);
  for (size_t i = 0; i < seeds.size(); ++i) times[i] = time_of(3, seeds[i]);

  std::printf("\n%s: %lld nodes, %lld directed edges; %s times uniform in [0, 1e9), seed bounds too; batch %lld, "
              "disjoint trees, 1 thread, %d interleaved rounds of %d batches\n\n",
              o.input.empty() ? "RMAT" : o.input.c_str(), (long long)d.num_nodes, (long long)d.num_edges(),
              o.temporal.c_str(), (long long)o.batch_size, o.rounds, o.num_batches);
  // The time order, built once as a partition or sampler actor builds it when it opens its
  // part (graph/time_order.h): a one-time cost, outside the rates (the samplers share it).
  SamplerConfig order;
  order.fanouts = {{1}};
  order.disjoint = true;
  order.temporal = edge_times ? TemporalMode::kEdgeTime : TemporalMode::kNodeTime;
  order.edge_time = ArrayRef::from_vector(edge_time);
  order.node_time = ArrayRef::from_vector(node_time);
  Stopwatch watch;
  order.order_by_time(topology);
  std::printf("time order (%s times): built in %.2f s, one thread; %.1f bytes per edge\n\n", o.temporal.c_str(),
              watch.seconds(), static_cast<double>(order.time_order->bytes()) / static_cast<double>(topology.num_edges()));
  // The same order with its times as int64 (TimeWidth::kWide), when they are 32-bit codes:
  // measured in the same rounds, so that what the narrow codes change shows apart from the
  // machine's drift between invocations.
  std::shared_ptr<const TimeOrder> wide;
  if (order.time_order->narrow()) {
    wide = std::make_shared<const TimeOrder>(topology, order.temporal, node_time, edge_time, TimeWidth::kWide);
  }
  std::printf("%-12s %-8s | %14s %12s %12s | %14s %12s %12s | %12s | %s | %s\n", "fanouts", "strategy",
              "temporal edges/s", "edges/batch", "nodes/batch", "uniform edges/s", "edges/batch", "nodes/batch",
              "temporal/uniform", "same, by CPU time", "int64 times: edges/s, 32-bit codes over them");
  for (const auto& fanout : o.fanouts) {
    for (TemporalStrategy strategy : {TemporalStrategy::kUniform, TemporalStrategy::kLast}) {
      SamplerConfig uniform, temporal;
      uniform.fanouts = {fanout};
      uniform.disjoint = true;
      temporal = uniform;
      temporal.temporal = edge_times ? TemporalMode::kEdgeTime : TemporalMode::kNodeTime;
      temporal.temporal_strategy = strategy;
      if (edge_times) {
        temporal.edge_time = ArrayRef::from_vector(edge_time);
      } else {
        temporal.node_time = ArrayRef::from_vector(node_time);
      }
      temporal.time_order = order.time_order;
      SamplerConfig temporal_wide = temporal;
      temporal_wide.time_order = wide;
      std::vector<double> temporal_rate, uniform_rate, ratio, cpu_ratio, wide_rate, narrow_over_wide;
      Throughput a, b, w;
      const auto measure_wide = [&] {
        if (wide) w = measure(topology, temporal_wide, seeds, o.batch_size, o.num_batches, 1, next_batch, times);
      };
      for (int round = 0; round < o.rounds; ++round) {
        if (round % 2 == 0) {
          a = measure(topology, temporal, seeds, o.batch_size, o.num_batches, 1, next_batch, times);
          measure_wide();
          b = measure(topology, uniform, seeds, o.batch_size, o.num_batches, 1, next_batch);
        } else {
          b = measure(topology, uniform, seeds, o.batch_size, o.num_batches, 1, next_batch);
          measure_wide();
          a = measure(topology, temporal, seeds, o.batch_size, o.num_batches, 1, next_batch, times);
        }
        temporal_rate.push_back(a.edges_per_second);
        uniform_rate.push_back(b.edges_per_second);
        ratio.push_back(a.edges_per_second / b.edges_per_second);
        cpu_ratio.push_back(a.edges_per_cpu_second / b.edges_per_cpu_second);
        if (wide) {
          wide_rate.push_back(w.edges_per_second);
          narrow_over_wide.push_back(a.edges_per_second / w.edges_per_second);
        }
      }
      std::printf("%-12s %-8s | %13.2fM %12.0f %12.0f | %13.2fM %12.0f %12.0f | %15.2fx | %16.2fx | ",
                  fanout_text(fanout).c_str(), strategy == TemporalStrategy::kUniform ? "uniform" : "last",
                  median(temporal_rate) / 1e6, a.edges_per_second / a.batches_per_second, a.nodes_per_batch,
                  median(uniform_rate) / 1e6, b.edges_per_second / b.batches_per_second, b.nodes_per_batch,
                  median(ratio), median(cpu_ratio));
      if (wide) {
        std::printf("%.2fM, %.2fx\n", median(wide_rate) / 1e6, median(narrow_over_wide));
      } else {
        std::printf("(the times are int64: they span 2^32 or more)\n");
      }
      std::fflush(stdout);
    }
  }
}

}  // namespace partita::bench
