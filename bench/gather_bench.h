// The feature gather of `partita bench sample`: FeatureStore::gather against a memcpy of
// the same number of bytes, in the same run.
#pragma once

#include <cstdint>
#include <vector>

namespace partita::bench {

struct GatherBenchOptions {
  int64_t num_nodes = 1 << 20;  // rows of the feature matrix
  int64_t dim = 128;            // float32 columns: 1M x 128 is 512 MiB
  // Ids per batch: about the distinct nodes that 1024 seeds with fanouts [15,10,5] reach on
  // an RMAT graph of 1M nodes. Ids within a batch are distinct, in random order.
  int64_t batch_nodes = 300000;
  int num_batches = 8;  // distinct batches in the stream; one run gathers them all
  int warmup_runs = 2;
  int runs = 7;  // the median is reported
  std::vector<int> threads{1, 2};
  uint64_t seed = 1;
};

// Builds the matrix (deterministic values), draws the batches, then for each thread count
// times, into one reused output buffer: the gather into a 64-byte aligned buffer (as a
// torch tensor's), the gather into a buffer 16 bytes off that alignment (as a plain
// malloc's), and a memcpy of the same bytes from a contiguous source. Prints a table of
// GB/s (output bytes per second) and gather/memcpy ratios; returns the process exit code.
int run_gather_bench(const GatherBenchOptions& options);

}  // namespace partita::bench
