#include "bench/aggregate_bench.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cstdio>

#include "base/random.h"
#include "base/stopwatch.h"
#include "graph/neighbor_sampler.h"
#include "graph/subgraph_builder.h"
#include "models/aggregate.h"
#include "models/batch_tensors.h"
#include "models/gnn_model.h"
#include "models/keyed_dropout.h"
#include "models/torch_runtime.h"
#include "models/training.h"
#include "partitioner/generators.h"
#include "partitioner/partition_stores.h"

namespace partita::bench {

namespace {

template <typename Body>
double median_ms(int runs, Body body) {
  body();  // warm-up: allocator, thread pool, page faults
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    Stopwatch watch;
    body();
    ms.push_back(watch.seconds() * 1e3);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// One batch of random seeds with N(0, 1) features and random labels.
MiniBatch sample_one_batch(const AggregateBenchOptions& o) {
  RmatOptions rmat;
  rmat.num_nodes = o.num_nodes;
  rmat.avg_degree = o.avg_degree;
  rmat.seed = o.seed;
  Dataset d = generate_rmat(rmat);
  Topology topology = topology_from_dataset(d);
  std::vector<int64_t> seeds(d.num_nodes);
  for (int64_t v = 0; v < d.num_nodes; ++v) seeds[v] = v;
  Rng rng(o.seed);
  shuffle(seeds, rng);
  seeds.resize(std::min<int64_t>(o.batch_size, d.num_nodes));

  SamplerConfig config;
  config.fanouts = {o.fanouts};
  NeighborSampler sampler(topology, config);
  MiniBatch batch = sampler.sample(Span<const int64_t>(seeds.data(), seeds.size()), {o.seed, 0, 0});
  const int64_t n = static_cast<int64_t>(batch.node_ids.size());
  batch.feature_dim = o.in_dim;
  batch.x.resize(n * o.in_dim);
  for (float& v : batch.x) v = static_cast<float>(rng.normal());
  batch.y.resize(n);
  for (int64_t& label : batch.y) label = static_cast<int64_t>(rng.below(o.num_classes));
  return batch;
}

std::string list_text(const std::vector<int64_t>& values) {
  std::string s;
  for (size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + std::to_string(values[i]);
  return s;
}

// Forward and backward of one aggregation over the batch's sampled edges with GraphSAGE's
// mean weights, from `width`-wide features of every node to the rows a trimmed first layer
// computes.
double time_aggregation(const GraphBatch& batch, int64_t rows, int64_t width,
                        AggregatePath path, int runs) {
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(1);
  at::Tensor x = at::randn({batch.num_nodes, width}, generator).requires_grad_(true);
  at::Tensor grad = at::randn({rows, width}, generator);
  const at::Tensor weight = batch.mean_weight.narrow(0, 0, batch.edges.edges_before(rows));
  return median_ms(runs, [&] {
    x.mutable_grad() = at::Tensor();
    aggregate(x, weight, batch.edges, rows, path).backward(grad);
  });
}

double time_model_step(const GraphBatch& batch, const AggregateBenchOptions& o,
                       const std::string& kind, bool trim, bool csc) {
  ModelConfig config;
  config.kind = kind;
  config.in_dim = o.in_dim;
  config.hidden_dim = o.hidden_dim;
  config.out_dim = o.num_classes;
  config.num_layers = static_cast<int>(o.fanouts.size());
  config.heads = kind == "gat" ? 4 : 1;
  config.trim = trim;
  config.csc_aggregation = csc;
  std::shared_ptr<GnnModel> model = make_model(config, o.seed);
  uint64_t step = 0;
  return median_ms(o.runs, [&] {
    model->zero_grad();
    at::Tensor logits = model->forward(batch, true, step_key(o.seed, 0, step++, 0));
    (cross_entropy_sum(logits, batch.y) / static_cast<double>(batch.batch_size)).backward();
  });
}

}  // namespace

void run_aggregate_bench(const AggregateBenchOptions& o) {
  set_torch_threads(o.torch_threads);
  tune_malloc_for_training();
  warn_if_slow_blas();
  Stopwatch sampling;
  const MiniBatch sampled = sample_one_batch(o);
  std::printf("\nRMAT %lld nodes, avg degree %.0f, seed %llu; batch %lld, fanouts [%s] (%.1f s to "
              "generate and sample); %d torch threads\n",
              (long long)o.num_nodes, o.avg_degree, (unsigned long long)o.seed,
              (long long)o.batch_size,
              list_text(std::vector<int64_t>(o.fanouts.begin(), o.fanouts.end())).c_str(),
              sampling.seconds(), torch_threads());
  std::printf("nodes per hop [%s] = %zu, edges per hop [%s] = %zu\n",
              list_text(sampled.num_sampled_nodes).c_str(), sampled.node_ids.size(),
              list_text(sampled.num_sampled_edges).c_str(), sampled.row.size());

  std::vector<double> layout_ms;
  for (int i = 0; i < o.runs; ++i) {
    MiniBatch copy = sampled;
    Stopwatch watch;
    to_graph_batch(std::move(copy));  // as the trainer calls it: taking over the features
    layout_ms.push_back(watch.seconds() * 1e3);
  }
  std::sort(layout_ms.begin(), layout_ms.end());
  std::printf("batch to tensors (to_graph_batch): %.1f ms\n\n", layout_ms[layout_ms.size() / 2]);

  GraphBatch batch = to_graph_batch(sampled);
  const int layers = static_cast<int>(o.fanouts.size());
  const int64_t rows = batch.layer_rows(0, layers, true);
  std::printf("aggregation, forward + backward: %lld edges into %lld rows (a trimmed first "
              "layer), median of %d\n",
              (long long)batch.edges.edges_before(rows), (long long)rows, o.runs);
  std::printf("%8s | %10s %14s | %8s\n", "width", "CSC ms", "index_add_ ms", "speed-up");
  for (int64_t width : {o.in_dim, o.hidden_dim}) {
    const double csc = time_aggregation(batch, rows, width, AggregatePath::kCsc, o.runs);
    const double index_add = time_aggregation(batch, rows, width, AggregatePath::kIndexAdd, o.runs);
    std::printf("%8lld | %10.1f %14.1f | %7.2fx\n", (long long)width, csc, index_add, index_add / csc);
    std::fflush(stdout);
  }

  std::printf("\nmodel step (forward + cross-entropy + backward), %d layers, %lld -> %lld -> "
              "%lld, dropout 0.5, median of %d\n",
              layers, (long long)o.in_dim, (long long)o.hidden_dim, (long long)o.num_classes, o.runs);
  std::printf("%-10s %6s %11s | %12s\n", "model", "trim", "aggregation", "ms per batch");
  for (const std::string& kind : o.kinds) {
    double trimmed_csc = 0;
    for (bool csc : {true, false}) {
      for (bool trim : {true, false}) {
        const double ms = time_model_step(batch, o, kind, trim, csc);
        if (csc && trim) trimmed_csc = ms;
        std::printf("%-10s %6s %11s | %12.1f", kind.c_str(), trim ? "on" : "off",
                    csc ? "CSC" : "index_add_", ms);
        if (!(csc && trim)) std::printf("   (%.2fx the trimmed CSC step)", ms / trimmed_csc);
        std::printf("\n");
        std::fflush(stdout);
      }
    }
  }
}

}  // namespace partita::bench
