// `partita bench aggregate`: the two aggregation paths of models/aggregate.h, forward and
// backward, on a realistic sampled batch, and whole model steps with and without
// hierarchical trimming.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace partita::bench {

struct AggregateBenchOptions {
  // The batch: 1024 random seeds sampled with [15, 10, 5] from an RMAT graph.
  int64_t num_nodes = 1 << 20;
  double avg_degree = 20;
  uint64_t seed = 1;
  int64_t batch_size = 1024;
  std::vector<int> fanouts{15, 10, 5};
  // The model: one layer per hop.
  int64_t in_dim = 128;
  int64_t hidden_dim = 256;
  int64_t num_classes = 16;
  std::vector<std::string> kinds{"graphsage"};
  int torch_threads = 2;
  int runs = 5;  // interleaved rounds of each table, after one warm-up round; medians are reported
};

// Prints the batch's shape, the time to lay it out as tensors, a table (bench/harness.h) of
// aggregation forward+backward times at the input and at the hidden width (CSC path,
// index_add_ path the baseline) with the speed-up, and a table of model forward+backward
// times per batch for each kind, trimmed or not, on either path (against the trimmed CSC
// step).
void run_aggregate_bench(const AggregateBenchOptions& options);

}  // namespace partita::bench
