#include "bench/aggregate_bench.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cstdio>

#include "base/random.h"
#include "base/stopwatch.h"
#include "bench/harness.h"
#include "bench/stats.h"
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
// computes: a case returning its milliseconds.
Case aggregation_case(const std::string& name, Role role, const GraphBatch& batch, int64_t rows, int64_t width,
                      AggregatePath path) {
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(1);
  at::Tensor x = at::randn({batch.num_nodes, width}, generator).requires_grad_(true);
  at::Tensor grad = at::randn({rows, width}, generator);
  const at::Tensor weight = batch.mean_weight.narrow(0, 0, batch.edges.edges_before(rows));
  return Case(name, role, [&batch, rows, path, x, grad, weight]() mutable {
    return wall_seconds([&] {
             x.mutable_grad() = at::Tensor();
             aggregate(x, weight, batch.edges, rows, path).backward(grad);
           }) *
           1e3;
  });
}

// One model step (forward, cross-entropy, backward) on the batch: a case returning its
// milliseconds.
Case model_step_case(const GraphBatch& batch, const AggregateBenchOptions& o, const std::string& kind, bool trim,
                     bool csc) {
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
  auto step = std::make_shared<uint64_t>(0);
  const std::string name = kind + ", trim " + (trim ? "on" : "off") + ", " + (csc ? "CSC" : "index_add_");
  // The trimmed CSC step is what the others are compared with.
  return Case(name, csc && trim ? Role::kBaseline : Role::kKernel, [&batch, &o, model, step] {
    return wall_seconds([&] {
             model->zero_grad();
             at::Tensor logits = model->forward(batch, true, step_key(o.seed, 0, (*step)++, 0));
             (cross_entropy_sum(logits, batch.y) / static_cast<double>(batch.batch_size)).backward();
           }) *
           1e3;
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
  std::printf("batch to tensors (to_graph_batch): %.1f ms\n", median(layout_ms));

  GraphBatch batch = to_graph_batch(sampled);
  const int layers = static_cast<int>(o.fanouts.size());
  const int64_t rows = batch.layer_rows(0, layers, true);
  RoundsOptions rounds;
  rounds.unit = "ms";
  rounds.warmup = 1;  // the allocator, the thread pool, page faults
  rounds.rounds = o.runs;
  for (int64_t width : {o.in_dim, o.hidden_dim}) {
    rounds.title = "aggregation, forward + backward, width " + std::to_string(width) + ": " +
                   std::to_string(batch.edges.edges_before(rows)) + " edges into " + std::to_string(rows) +
                   " rows (a trimmed first layer)";
    const Results results =
        run_cases(rounds, {aggregation_case("CSC", Role::kKernel, batch, rows, width, AggregatePath::kCsc),
                           aggregation_case("index_add_", Role::kBaseline, batch, rows, width,
                                            AggregatePath::kIndexAdd)});
    std::printf("width %lld: CSC %.1f ms, index_add_ %.1f ms: speed-up %.2fx\n", static_cast<long long>(width),
                results.median("CSC"), results.median("index_add_"), 1 / results.ratio("CSC"));
  }

  for (const std::string& kind : o.kinds) {
    rounds.title = "model step (forward + cross-entropy + backward), " + kind + ", " + std::to_string(layers) +
                   " layers, " + std::to_string(o.in_dim) + " -> " + std::to_string(o.hidden_dim) + " -> " +
                   std::to_string(o.num_classes) + ", dropout 0.5: ms per batch";
    std::vector<Case> cases;
    for (bool csc : {true, false}) {
      for (bool trim : {true, false}) cases.push_back(model_step_case(batch, o, kind, trim, csc));
    }
    run_cases(rounds, cases);
  }
}

}  // namespace partita::bench
