// `partita bench loader`: distributed mini-batches, in one process and across a daemon.
#pragma once

#include <cstdint>
#include <vector>

namespace partita::bench {

struct LoaderBenchOptions {
  int64_t num_nodes = 1 << 20;
  double avg_degree = 20;
  int64_t feature_dim = 128;
  std::vector<int> fanouts{15, 10, 5};
  int64_t batch_size = 1024;
  int num_batches = 20;  // measured per configuration, after 2 warm-up batches
  uint64_t seed = 1;
};

// Generates RMAT with features, partitions it into 1 and 2 parts (METIS), and measures
// batches/s and sampled edges/s of the distributed sampler (features and labels included)
// for (a) 1 partition in-process, (b) 2 partitions in-process (partition 1 behind an
// actor), (c) 2 partitions with partition 1 on a `partita daemon` process over loopback.
// Then remote feature transfer (feature replies from the daemon) in bytes/s next to raw
// loopback TCP moving the same bytes in the same run.
void run_loader_bench(const LoaderBenchOptions& options);

}  // namespace partita::bench
