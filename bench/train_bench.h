// `partita bench train`: seconds per training epoch, end to end (sampling, features,
// forward/backward, allreduce), in one process and with 2 partitions on 2 daemons.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace partita::bench {

struct TrainBenchOptions {
  int64_t num_nodes = 1 << 20;
  double avg_degree = 20;
  int64_t feature_dim = 128;
  int64_t num_classes = 16;
  int64_t train_nodes = 100000;
  int64_t hidden = 256;
  std::vector<int64_t> fanouts{15, 10, 5};  // one per layer
  int64_t batch_size = 1024;
  int threads = 2;         // cores in all: torch threads in one process, daemons x threads each
  int64_t max_steps = 0;   // 0: whole epochs; else time this many steps and scale up
  std::string work_dir;    // keeps the generated partitions between runs; default under /tmp
  uint64_t seed = 1;
};

// RMAT with features and random labels, GraphSAGE with fanouts.size() layers. Prints
// seconds per epoch for (a) 1 partition, 1 trainer with `threads` torch threads in this
// process and (b) 2 partitions on 2 `partita daemon` processes, 1 trainer each with
// threads / 2 torch threads; next to PyG's quoted epoch times.
void run_train_bench(const TrainBenchOptions& options);

}  // namespace partita::bench
