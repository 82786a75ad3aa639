// `partita bench train`: seconds per training epoch, end to end (sampling, features,
// forward/backward, allreduce), in one process and with 2 partitions on 2 daemons; and how
// far one step's compute is from its floors (models/step_cost.h), phase by phase.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace partita::bench {

struct TrainBenchOptions {
  std::string input;  // an npy folder with features, labels and a training split; empty: RMAT
  int64_t num_nodes = 1 << 20;  // RMAT (without input)
  double avg_degree = 20;
  int64_t feature_dim = 128;
  int64_t num_classes = 16;
  int64_t train_nodes = 100000;
  int64_t hidden = 256;
  std::vector<int64_t> fanouts{15, 10, 5};  // one per layer
  int64_t batch_size = 1024;
  int threads = 2;         // cores in all: torch threads in one process, daemons x threads each
  int64_t max_steps = 0;   // 0: whole epochs; else time this many steps and scale up
  int profile_steps = 8;   // compute steps timed phase by phase against the floor (0: none)
  bool epochs = true;      // false: only the step profile
  bool daemons = true;     // false: the epochs of (a) alone
  std::string work_dir;    // keeps the partitions between runs; default under /tmp
  uint64_t seed = 1;
  int compare_tls = 0;     // > 0: only (b), this many rounds over TLS and over plaintext each
  int compare_storage = 0; // > 0: only (a), this many rounds with features in memory and on disk each
  // "graphsage", or "rgcn": R-GCN with basis decomposition (`bases` bases) on the
  // heterogeneous generator's graph (num_nodes papers, half as many authors, 5 edge types;
  // avg_degree citations per paper), the fanouts for every edge type; the step profile only.
  std::string model = "graphsage";
  int bases = 4;
};

// GraphSAGE with fanouts.size() layers on `input` or on RMAT with random labels,
// partitioned into 1 and 2 parts in work_dir (reused while the graph is unchanged).
//
// Step profile: profile_steps + 2 batches of the 1-partition graph are sampled first (the
// sampler's algorithm, seeds drawn as an epoch's), then each goes through the trainer's
// step alone on `threads` torch threads: lay out (to_graph_batch), forward, backward, the
// optimiser (flat gradients, Adam); each step is followed by torch::mm of its products
// (models/step_cost.h), which gives its compute floor, and by a copy of a 256 MB buffer,
// whose rate puts the step's bytes (StepBytes) at its memory floor; their sum is the
// roofline floor. Prints nodes and edges per batch, the rows each layer computes, FLOPs and
// bytes per step, median milliseconds per phase, the floors, step / compute floor and step /
// roofline, and the two rates.
//
// Epochs: seconds per epoch for (a) 1 partition, 1 trainer with `threads` torch threads in
// this process and (b) 2 partitions on 2 `partita daemon` processes, 1 trainer each with
// threads / 2 torch threads; next to PyG's quoted epoch times. With each, the median step
// time after 2 warm-up steps (between two steps' reports to the driver). daemons = false:
// (a) alone.
//
// With compare_tls = R: only (b), R rounds each with the daemons and this driver over TLS
// (the process's credentials) and over plaintext (`--insecure` daemons, no credentials
// here), alternating, fresh daemons per round; prints each round and the medians.
//
// With compare_storage = R: only (a), R rounds each with `features: {storage: memory}` and
// `{storage: disk}` (graph/disk_rows.h), alternating; prints each round and the medians.
void run_train_bench(const TrainBenchOptions& options);

}  // namespace partita::bench
