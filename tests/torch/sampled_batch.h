// Batches for the model tests: sampled by the project's own sampler from a small
// stochastic-block-model graph, so the tests see the layout real batches have.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "graph/mini_batch.h"
#include "graph/neighbor_sampler.h"
#include "graph/subgraph_builder.h"
#include "partitioner/dataset.h"
#include "partitioner/generators.h"
#include "partitioner/partition_stores.h"

namespace partita::testing {

// Three nodes, every one a seed: edges 1 -> 0, 2 -> 0, 2 -> 1; no hop counts, so every
// layer computes all 3 rows. `x`: 3 rows of `dim` features.
inline MiniBatch triangle_batch(std::vector<float> x, int64_t dim) {
  MiniBatch b;
  b.node_ids = {0, 1, 2};
  b.row = {1, 2, 2};
  b.col = {0, 0, 1};
  b.batch_size = 3;
  b.feature_dim = dim;
  b.x = std::move(x);
  return b;
}

inline Dataset small_sbm(int64_t num_nodes = 2000, int64_t feature_dim = 16, uint64_t seed = 7) {
  SbmOptions options;
  options.num_nodes = num_nodes;
  options.num_classes = 4;
  options.avg_degree = 8;
  options.feature_dim = feature_dim;
  options.seed = seed;
  options.threads = 1;
  return generate_sbm(options);
}

// Copies the features and labels of the batch's nodes from the dataset, as
// attach_features does from the stores.
inline void attach(const Dataset& d, MiniBatch& batch) {
  batch.feature_dim = d.feature_dim;
  batch.x.clear();
  batch.y.clear();
  for (int64_t v : batch.node_ids) {
    batch.x.insert(batch.x.end(), d.x.begin() + v * d.feature_dim, d.x.begin() + (v + 1) * d.feature_dim);
    batch.y.push_back(d.y[v]);
  }
}

inline MiniBatch sample_batch(const Dataset& d, const std::vector<int64_t>& seeds,
                              std::vector<int> fanouts, uint64_t batch_index = 0) {
  Topology topology = topology_from_dataset(d);
  SamplerConfig config;
  config.fanouts = {std::move(fanouts)};
  NeighborSampler sampler(topology, config);
  MiniBatch batch = sampler.sample(Span<const int64_t>(seeds.data(), seeds.size()), {1, 0, batch_index});
  attach(d, batch);
  return batch;
}

inline std::vector<int64_t> first_nodes(int64_t n) {
  std::vector<int64_t> ids(n);
  for (int64_t i = 0; i < n; ++i) ids[i] = i;
  return ids;
}

}  // namespace partita::testing
